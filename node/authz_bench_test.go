package node

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"

	"github.com/lakestream/lakestream/internal/flightlogin"
)

// BenchmarkPrivilegeCheck measures what the privilege check costs on one
// node (docs/benchmarks.md, "Security"): the same point query and 10-row
// ingest as admin, a superuser whom the check waves through, and as a user
// holding the privileges by a role, checked on every call; in turns,
// round after round, each figure the median of its rounds, as a ratio to
// admin's.
//
//	go test -run '^$' -bench BenchmarkPrivilegeCheck -benchtime 1x ./node
func BenchmarkPrivilegeCheck(b *testing.B) {
	cl, admin := benchSecureNode(b, "auth")
	for _, sql := range []string{
		"CREATE USER bench WITH PASSWORD 'bench-password'",
		"CREATE ROLE writers",
		"GRANT SELECT ON TABLE kv TO writers",
		"GRANT INSERT ON TABLE log TO writers",
		"GRANT writers TO bench",
	} {
		if _, err := query(admin, cl, sql); err != nil {
			b.Fatal(err)
		}
	}
	user, err := flightlogin.Login(context.Background(), cl.Client, "bench", "bench-password")
	if err != nil {
		b.Fatal(err)
	}
	// The user's point query takes the key-lookup path, as admin's does.
	if info, err := cl.Execute(user, "SELECT v FROM kv WHERE id = 1"); err != nil || !strings.Contains(string(info.Endpoint[0].Ticket.Ticket), `"kind":"lookup"`) {
		b.Fatalf("the granted user's point query is no key lookup: %v", err)
	}
	rec := benchRows(0, 10)
	defer rec.Release()
	ops := map[string]func(ctx context.Context, i int) error{
		"point": func(ctx context.Context, i int) error {
			_, err := query(ctx, cl, fmt.Sprintf("SELECT v FROM kv WHERE id = %d", i%1000))
			return err
		},
		"ingest10": func(ctx context.Context, i int) error {
			rdr, _ := array.NewRecordReader(rec.Schema(), []arrow.RecordBatch{rec})
			_, err := cl.ExecuteIngest(ctx, rdr, &flightsql.ExecuteIngestOpts{Table: "log", TableDefinitionOptions: &flightsql.TableDefinitionOptions{
				IfNotExist: flightsql.TableDefinitionOptionsTableNotExistOptionFail, IfExists: flightsql.TableDefinitionOptionsTableExistsOptionAppend}})
			return err
		},
	}
	callers := map[string]context.Context{"admin": admin, "granted": user}
	const rounds, reps = 20, 40
	for _, op := range []string{"point", "ingest10"} {
		took := map[string][]time.Duration{}
		for r := range rounds {
			order := []string{"admin", "granted"}
			if r%2 == 1 {
				order = []string{"granted", "admin"} // neither always runs first
			}
			for _, who := range order {
				start := time.Now()
				for i := range reps {
					if err := ops[op](callers[who], i); err != nil {
						b.Fatalf("%s %s: %v", who, op, err)
					}
				}
				took[who] = append(took[who], time.Since(start)/reps)
			}
		}
		base, got := median(took["admin"]), median(took["granted"])
		b.Logf("%-8s admin %10s  granted user %10s per op  %.3f x admin", op, base, got, float64(got)/float64(base))
		b.ReportMetric(float64(got)/float64(base), op+"-granted/admin")
	}
}
