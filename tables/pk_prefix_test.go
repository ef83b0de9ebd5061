package tables_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lakestream/lakestream/tables"
)

// prefixRows runs a prefix lookup and returns the rows sent, in order.
func prefixRows(t *testing.T, tbl *tables.Table, prefixes arrow.RecordBatch) []string {
	t.Helper()
	defer prefixes.Release()
	var out []string
	err := tbl.LookupPrefix(context.Background(), prefixes, nil, func(rec arrow.RecordBatch) error {
		out = append(out, rowStrings(rec)...)
		return nil
	})
	if err != nil {
		t.Fatalf("prefix lookup: %v", err)
	}
	return out
}

// TestPKLookupPrefix compares prefix lookups of a composite key with a
// model, for a table bucketed by the prefix (one bucket read per prefix)
// and one bucketed by the whole key (every bucket sought), after upserts
// and deletes.
func TestPKLookupPrefix(t *testing.T) {
	for _, with := range []string{"'bucket.num' = '4', 'bucket.key' = 'tenant'", "'bucket.num' = '3'"} {
		t.Run(with, func(t *testing.T) {
			e := newEnv(t, nil)
			e.mustExec(`CREATE TABLE acct (tenant VARCHAR, id BIGINT, v BIGINT, PRIMARY KEY (tenant, id)) WITH (` + with + `)`)
			tbl := e.table("acct")
			rng := rand.New(rand.NewPCG(5, 6))
			tenants := []string{"a", "b", "bb", "b\x00", "c"}
			model := map[string]map[int64]int64{}
			for step := 0; step < 6; step++ {
				var ts, ids, vs []any
				seen := map[string]bool{}
				for i := 0; i < 40; i++ {
					tn, id := tenants[rng.IntN(len(tenants))], int64(rng.IntN(30))
					if seen[fmt.Sprint(tn, id)] {
						continue
					}
					seen[fmt.Sprint(tn, id)] = true
					v := int64(step*100 + i)
					ts, ids, vs = append(ts, tn), append(ids, int(id)), append(vs, int(v))
					if model[tn] == nil {
						model[tn] = map[int64]int64{}
					}
					model[tn][id] = v
				}
				e.write(tbl, record(t, e.mem, str("tenant", ts...), i64("id", false, ids...), i64("v", true, vs...)))
				if step%2 == 1 { // delete a few keys
					tn := tenants[rng.IntN(len(tenants))]
					var dt, di []any
					for id := range model[tn] {
						if len(di) < 3 {
							dt, di = append(dt, tn), append(di, int(id))
						}
					}
					if len(di) > 0 {
						keys := record(t, e.mem, str("tenant", dt...), i64("id", false, di...))
						_, err := tbl.Delete(context.Background(), keys)
						keys.Release()
						if err != nil {
							t.Fatal(err)
						}
						for _, id := range di {
							delete(model[tn], int64(id.(int)))
						}
					}
				}
				// Every tenant, one absent, and one asked twice.
				ask := append(append([]string{}, tenants...), "zz", "a")
				var args []any
				var want []string
				for _, tn := range ask {
					args = append(args, tn)
					var rows []string
					for id, v := range model[tn] {
						rows = append(rows, fmt.Sprintf("%s|%d|%d", tn, id, v))
					}
					want = append(want, sorted(rows)...)
				}
				got := prefixRows(t, tbl, record(t, e.mem, str("tenant", args...)))
				// Within a prefix the rows come in key order; compare each
				// prefix's rows as a set (the model's order is by string).
				sameRows(t, fmt.Sprintf("step %d", step), sorted(got), sorted(want))
				if len(got) != len(want) {
					t.Fatalf("step %d: %d rows, want %d", step, len(got), len(want))
				}
			}
			// The whole key is a prefix too.
			for id, v := range model["a"] {
				got := prefixRows(t, tbl, record(t, e.mem, str("tenant", "a"), i64("id", false, int(id))))
				sameSeq(t, "whole key", got, []string{fmt.Sprintf("a|%d|%d", id, v)})
				break
			}
		})
	}
}

func TestPKLookupPrefixRefusals(t *testing.T) {
	e := newEnv(t, nil)
	e.mustExec(`CREATE TABLE acct (tenant VARCHAR, id BIGINT, v BIGINT, PRIMARY KEY (tenant, id))`)
	tbl := e.table("acct")
	for _, c := range []struct {
		rec  arrow.RecordBatch
		want string
	}{
		{record(t, e.mem, i64("id", false, 1)), `column "tenant": missing`},
		{record(t, e.mem, str("tenant", nil)), "NULL"},
		{record(t, e.mem, i64("tenant", false, 1)), `column "tenant"`},
	} {
		err := tbl.LookupPrefix(context.Background(), c.rec, nil, func(arrow.RecordBatch) error { return nil })
		c.rec.Release()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want one containing %q", err, c.want)
		}
	}
}
