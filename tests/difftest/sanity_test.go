package difftest

import (
	"context"
	"slices"
	"strings"
	"testing"
)

// The comparer must be able to fail: each deliberate difference below is
// one a real bug could produce, and each must be reported.

// sanityQuery covers most value kinds: integers, decimals, strings with
// NULLs, timestamps, dates, doubles, lists and booleans.
const sanityQuery = `SELECT id, customer_id, amount, status, created, day, qty, discount, tags, flag
FROM orders WHERE id <= 60 ORDER BY id`

func sanityResults(t *testing.T) (lake, ref *result) {
	t.Helper()
	f := getFixture(t)
	ref, err := f.ref.query(sanityQuery, nil)
	if err != nil {
		t.Fatal(err)
	}
	lake, err = lakeQuery(context.Background(), f.eng, sanityQuery, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := diff(lake, ref, true); d != "" {
		t.Fatalf("the unmodified results differ:\n%s", d)
	}
	return lake, ref
}

// clone copies a result deeply enough to mutate its rows.
func clone(r *result) *result {
	c := &result{names: slices.Clone(r.names), types: slices.Clone(r.types)}
	for _, row := range r.rows {
		c.rows = append(c.rows, slices.Clone(row))
	}
	return c
}

func TestComparerDetectsDifference(t *testing.T) {
	lake, ref := sanityResults(t)
	const discount = 7 // column index
	floatRow := slices.IndexFunc(lake.rows, func(r []cell) bool { return r[discount].isFloat && r[discount].f > 0.1 })
	if floatRow < 0 {
		t.Fatal("no row with a discount")
	}
	cases := []struct {
		name    string
		mutate  func(r *result)
		ordered bool
		want    string // in the report
	}{
		{"changed cell", func(r *result) { r.rows[3][0] = canon(intOf(999999)) }, false, "rows differ"},
		{"changed decimal", func(r *result) { r.rows[5][2] = cell{text: "1.01"} }, false, "rows differ"},
		{"NULL vs the string NULL", func(r *result) {
			for _, row := range r.rows {
				if row[3].text == "NULL" {
					row[3] = canon("NULL")
					return
				}
			}
			panic("no NULL status in the sanity rows")
		}, false, "rows differ"},
		{"missing row", func(r *result) { r.rows = r.rows[1:] }, false, "row counts differ"},
		{"duplicated row instead of another", func(r *result) { r.rows[10] = r.rows[11] }, false, "only in lakestream: 1 rows"},
		{"extra row", func(r *result) { r.rows = append(r.rows, r.rows[0]) }, false, "row counts differ"},
		{"swapped rows, ordered", func(r *result) { r.rows[1], r.rows[2] = r.rows[2], r.rows[1] }, true, "rows differ"},
		{"float beyond tolerance", func(r *result) { r.rows[floatRow][discount].f *= 1 + 1e-6 }, false, "rows differ"},
		{"type", func(r *result) { r.types[2] = "DECIMAL(18,2)" }, false, "column types differ"},
		{"name", func(r *result) { r.names[1] = "Customer_id" }, false, "column names differ"},
		{"list element", func(r *result) {
			for _, row := range r.rows {
				if strings.HasPrefix(row[8].text, "[\"") {
					row[8] = cell{text: strings.Replace(row[8].text, "[\"", "[\"x", 1)}
					return
				}
			}
			panic("no tags in the sanity rows")
		}, false, "rows differ"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := clone(lake)
			c.mutate(got)
			d := diff(got, ref, c.ordered)
			if !strings.Contains(d, c.want) {
				t.Errorf("report does not say %q:\n%s", c.want, d)
			}
		})
	}
}

// TestComparerAccepts: differences that are not differences in data pass.
func TestComparerAccepts(t *testing.T) {
	lake, ref := sanityResults(t)
	floatRow := slices.IndexFunc(lake.rows, func(r []cell) bool { return r[7].isFloat && r[7].f > 0.1 })
	got := clone(lake)
	got.rows[floatRow][7].f *= 1 + 1e-12 // within tolerance: summation order
	slices.Reverse(got.rows)             // unordered comparison
	if d := diff(got, ref, false); d != "" {
		t.Errorf("want equal:\n%s", d)
	}
	if d := diff(got, ref, true); d == "" {
		t.Error("reversed rows pass an ordered comparison")
	}
}

// TestEndToEndMismatch: a query that differs on the two sides, run for
// real, is reported.
func TestEndToEndMismatch(t *testing.T) {
	f := getFixture(t)
	ctx := context.Background()
	pairs := []struct{ lake, ref string }{
		{"SELECT count(*) AS n FROM orders", "SELECT count(*) + 1 AS n FROM orders"},
		{"SELECT id FROM orders WHERE id > 1", "SELECT id FROM orders"},
		{"SELECT sum(discount) AS s FROM orders", "SELECT sum(discount) * 1.000001 AS s FROM orders"},
		{"SELECT id::INTEGER AS id FROM orders", "SELECT id FROM orders"},
	}
	for _, p := range pairs {
		got, err := lakeQuery(ctx, f.eng, p.lake, nil)
		if err != nil {
			t.Fatal(err)
		}
		want, err := f.ref.query(p.ref, nil)
		if err != nil {
			t.Fatal(err)
		}
		if diff(got, want, false) == "" {
			t.Errorf("%q and %q compare equal", p.lake, p.ref)
		}
	}
}

func TestParseArgs(t *testing.T) {
	got, err := parseArgs(`42, 'it''s, here', 1.5, NULL, true, ts'2024-02-03T04:05:06Z'`)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 6 || got[0] != int64(42) || got[1] != "it's, here" || got[2] != 1.5 || got[3] != nil || got[4] != true {
		t.Errorf("parseArgs = %#v", got)
	}
	if _, err := parseArgs(`'open`); err == nil {
		t.Error("unterminated string accepted")
	}
}
