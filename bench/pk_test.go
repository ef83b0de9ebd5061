package bench

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
)

// TestPKData: the upsert rows write every key in order per writer, no
// batch holds a key twice (PostgreSQL's ON CONFLICT DO UPDATE refuses
// that), a key's writes all go to one writer, and pkFinal is the last
// write of every key.
func TestPKData(t *testing.T) {
	for _, tc := range []struct{ rows, keys, bs, writers int }{
		{20_000, 10_000, 2048, 4}, {10_000, 10_000, 2500, 4}, {35_000, 7_919, 1_979, 4}, {60_000, 50_000, 10, 1},
	} {
		if tc.rows < tc.keys {
			tc.rows = tc.keys
		}
		ks := newPKKeyspace(tc.keys)
		lists := pkWrites(ks, tc.rows, tc.bs, tc.writers)
		last := map[int64]float64{} // key → amount of its last write
		writerOf := map[int64]int{}
		var rows int
		for w, l := range lists {
			for _, rec := range l {
				if rec.NumRows() > int64(tc.bs) {
					t.Fatalf("%+v: a batch of %d rows", tc, rec.NumRows())
				}
				seen := map[int64]bool{}
				ids := rec.Column(0).(*array.Int64).Int64Values()
				amounts := rec.Column(1).(*array.Float64).Float64Values()
				for i, id := range ids {
					if id < 0 || id >= int64(tc.keys) {
						t.Fatalf("%+v: key %d out of the key space", tc, id)
					}
					if seen[id] {
						t.Fatalf("%+v: key %d twice in one batch", tc, id)
					}
					seen[id] = true
					if ow, ok := writerOf[id]; ok && ow != w {
						t.Fatalf("%+v: key %d written by writers %d and %d", tc, id, ow, w)
					}
					writerOf[id] = w
					last[id] = amounts[i]
					rows++
				}
				rec.Release()
			}
		}
		if rows != tc.rows || len(last) != min(tc.keys, tc.rows) {
			t.Fatalf("%+v: %d rows over %d keys", tc, rows, len(last))
		}
		final := pkFinal(ks, tc.rows, 4096)
		n := 0
		for _, rec := range final {
			ids := rec.Column(0).(*array.Int64).Int64Values()
			amounts := rec.Column(1).(*array.Float64).Float64Values()
			for i, id := range ids {
				if amounts[i] != last[id] {
					t.Fatalf("%+v: final state of key %d has amount %v, its last write %v", tc, id, amounts[i], last[id])
				}
				n++
			}
			rec.Release()
		}
		if n != tc.keys {
			t.Fatalf("%+v: final state of %d rows, want %d", tc, n, tc.keys)
		}
		keys := pkKeyBatch(ks, 12345%int64(tc.keys), min(1000, tc.keys), nil)
		distinct := map[int64]bool{}
		for _, k := range keys {
			distinct[k] = true
		}
		if len(distinct) != len(keys) {
			t.Fatalf("%+v: a key batch of %d keys holds %d distinct", tc, len(keys), len(distinct))
		}
	}
}
