package node

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lakestream/lakestream/internal/flightlogin"
)

// BenchmarkSecurity measures what authentication, the privilege check and
// TLS cost against plaintext without authentication (docs/benchmarks.md):
// a primary-key point query, a 10-row ingest, and a scan of 200,000 rows.
// The five nodes (plain; auth, as admin, a superuser, whom the privilege
// check waves through; auth+priv, as a user holding the privileges by
// grants, checked on every call; tls; auth+tls) run at once and are measured in
// turns, round after round, so that the load of a shared machine falls on
// all of them alike; each figure is the median of its rounds, reported
// as a ratio to plain's.
//
//	go test -run '^$' -bench BenchmarkSecurity -benchtime 1x ./node
func BenchmarkSecurity(b *testing.B) {
	modes := []string{"plain", "auth", "auth+priv", "tls", "auth+tls"}
	type target struct {
		cl  *flightsql.Client
		ctx context.Context
	}
	targets := map[string]target{}
	for _, m := range modes {
		cl, ctx := benchSecureNode(b, m)
		targets[m] = target{cl, ctx}
	}
	rec := benchRows(0, 10)
	defer rec.Release()
	ops := map[string]func(t target, i int) error{
		"point": func(t target, i int) error {
			_, err := query(t.ctx, t.cl, fmt.Sprintf("SELECT v FROM kv WHERE id = %d", i%1000))
			return err
		},
		"ingest10": func(t target, i int) error {
			rdr, _ := array.NewRecordReader(rec.Schema(), []arrow.RecordBatch{rec})
			_, err := t.cl.ExecuteIngest(t.ctx, rdr, &flightsql.ExecuteIngestOpts{Table: "log", TableDefinitionOptions: &flightsql.TableDefinitionOptions{
				IfNotExist: flightsql.TableDefinitionOptionsTableNotExistOptionFail, IfExists: flightsql.TableDefinitionOptionsTableExistsOptionAppend}})
			return err
		},
		"scan": func(t target, i int) error { _, err := query(t.ctx, t.cl, "SELECT * FROM big"); return err },
	}
	reps := map[string]int{"point": 50, "ingest10": 50, "scan": 3}
	const rounds = 9
	for _, op := range []string{"point", "ingest10", "scan"} {
		took := map[string][]time.Duration{}
		for range rounds {
			for _, m := range modes {
				start := time.Now()
				for i := range reps[op] {
					if err := ops[op](targets[m], i); err != nil {
						b.Fatalf("%s %s: %v", m, op, err)
					}
				}
				took[m] = append(took[m], time.Since(start)/time.Duration(reps[op]))
			}
		}
		base := median(took["plain"])
		for _, m := range modes {
			med := median(took[m])
			b.Logf("%-9s %-8s median %10s per op  %.3f x plain", m, op, med, float64(med)/float64(base))
			b.ReportMetric(float64(med)/float64(base), op+"-"+m+"/plain")
		}
	}
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

var benchSchema = arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "v", Type: arrow.BinaryTypes.String}}, nil)

func benchRows(start, n int) arrow.RecordBatch {
	bld := array.NewRecordBuilder(memory.DefaultAllocator, benchSchema)
	defer bld.Release()
	for i := start; i < start+n; i++ {
		bld.Field(0).(*array.Int64Builder).Append(int64(i))
		bld.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("value of row %d, some text to scan", i))
	}
	return bld.NewRecordBatch()
}

// benchSecureNode starts a node in mode and returns a client and the
// context to call it with (carrying the bearer token with auth), with the
// tables kv (a primary key, 1000 rows), log and big (200,000 rows).
func benchSecureNode(b *testing.B, mode string) (*flightsql.Client, context.Context) {
	b.Helper()
	sec := SecurityConfig{AdminPassword: "admin-password"}
	var ca *testCA
	if mode == "auth" || mode == "auth+tls" || mode == "auth+priv" {
		sec.Auth = AuthOn
	}
	dir := b.TempDir()
	if mode == "tls" || mode == "auth+tls" {
		ca = newTestCA(b, "bench CA")
		c, k := ca.issue(b, "server", false)
		sec.TLSCert, sec.TLSKey = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
		if err := os.WriteFile(sec.TLSCert, c, 0o600); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(sec.TLSKey, k, 0o600); err != nil {
			b.Fatal(err)
		}
	}
	sec.hash = cheapHash
	n, cancel, done := startNodeWith(b, Config{DataDir: filepath.Join(dir, "data"), Listen: "127.0.0.1:0", HTTP: "off", Security: sec, Logger: slog.New(slog.DiscardHandler)})
	b.Cleanup(func() { cancel(); <-done })
	var cl *flightsql.Client
	if ca != nil {
		cl = tlsClient(b, n.Addr(), ca.PEM, nil)
	} else {
		cl = client(b, n.Addr())
	}
	ctx := context.Background()
	if sec.Auth == AuthOn {
		var err error
		if ctx, err = flightlogin.Login(ctx, cl.Client, "admin", "admin-password"); err != nil {
			b.Fatal(err)
		}
	}
	for _, ddl := range []string{
		"CREATE TABLE kv (id BIGINT NOT NULL PRIMARY KEY, v VARCHAR)",
		"CREATE TABLE log (id BIGINT, v VARCHAR) WITH ('datalake.enabled'='false')",
		"CREATE TABLE big (id BIGINT, v VARCHAR) WITH ('datalake.enabled'='false')",
	} {
		if _, err := query(ctx, cl, ddl); err != nil {
			b.Fatal(err)
		}
	}
	for table, rows := range map[string]int{"kv": 1000, "big": 200_000} {
		rec := benchRows(0, rows)
		rdr, _ := array.NewRecordReader(benchSchema, []arrow.RecordBatch{rec})
		if _, err := cl.ExecuteIngest(ctx, rdr, &flightsql.ExecuteIngestOpts{Table: table, TableDefinitionOptions: &flightsql.TableDefinitionOptions{
			IfNotExist: flightsql.TableDefinitionOptionsTableNotExistOptionFail, IfExists: flightsql.TableDefinitionOptionsTableExistsOptionAppend}}); err != nil {
			b.Fatal(err)
		}
		rec.Release()
	}
	if mode == "auth+priv" {
		for _, sql := range []string{
			"CREATE USER bench WITH PASSWORD 'bench-password'",
			"GRANT SELECT ON TABLE kv, big TO bench",
			"GRANT INSERT ON TABLE log TO bench",
		} {
			if _, err := query(ctx, cl, sql); err != nil {
				b.Fatal(err)
			}
		}
		var err error
		if ctx, err = flightlogin.Login(context.Background(), cl.Client, "bench", "bench-password"); err != nil {
			b.Fatal(err)
		}
	}
	return cl, ctx
}
