package tables_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lakestream/lakestream/catalog"
	"github.com/lakestream/lakestream/internal/scan"
	"github.com/lakestream/lakestream/tables"
)

// TestPKConcurrentWritesReadsDrop writes, reads (engine scans, lookups,
// changelog) and drops a primary-key table at once: every read sees one
// row per key, and once the table is dropped every call fails cleanly.
func TestPKConcurrentWritesReadsDrop(t *testing.T) {
	e := newEnv(t, nil)
	e.mustExec(`CREATE TABLE c (id BIGINT, n BIGINT, PRIMARY KEY (id)) WITH ('bucket.num' = '4')`)
	tbl := e.table("c")
	ctx := context.Background()
	var writes atomic.Int64
	enough := make(chan struct{})
	var once sync.Once
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	dropped := make(chan struct{})
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 1))
			for i := 0; ; i++ {
				ids, ns := make([]any, 50), make([]any, 50)
				for j := range ids {
					ids[j], ns[j] = r.IntN(200), i
				}
				rec := record(t, e.mem, i64("id", false, ids...), i64("n", true, ns...))
				var err error
				if i%5 == 4 {
					keys := pkKeys(t, e, ids[:5])
					_, err = tbl.Delete(ctx, keys)
					keys.Release()
				} else {
					_, err = tbl.Write(ctx, rec)
				}
				rec.Release()
				if err != nil {
					select {
					case <-dropped:
						return
					default:
						errs <- fmt.Errorf("write %d before the drop: %w", i, err)
						return
					}
				}
				if writes.Add(1) == 40 {
					once.Do(func() { close(enough) })
				}
			}
		}()
	}
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				err := checkOneRowPerKey(ctx, tbl, e)
				if err == nil {
					keys := pkKeys(t, e, []any{1, 2, 3})
					var rec arrow.RecordBatch
					rec, err = tbl.Lookup(ctx, keys, nil)
					keys.Release()
					if err == nil {
						if rec.NumRows() > 3 {
							err = fmt.Errorf("lookup of 3 keys returned %d rows", rec.NumRows())
						}
						rec.Release()
					}
				}
				if err != nil && strings.Contains(err.Error(), "per key") {
					errs <- err // wrong, drop or not
					return
				}
				if err != nil {
					select {
					case <-dropped:
					default:
						errs <- fmt.Errorf("read before the drop: %w", err)
					}
					return
				}
			}
		}()
	}
	select {
	case <-enough:
	case err := <-errs:
		t.Fatal(err)
	}
	stmt, err := catalog.Parse(`DROP TABLE c`)
	if err != nil {
		t.Fatal(err)
	}
	// Calls racing the drop may fail before it returns: mark the drop
	// as begun first.
	close(dropped)
	if err := e.store.Exec(ctx, stmt); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	late := record(t, e.mem, i64("id", false, 1), i64("n", true, 1))
	defer late.Release()
	if _, err := tbl.Write(ctx, late); err == nil {
		t.Error("a write to the dropped table succeeded")
	}
	keys := pkKeys(t, e, []any{1})
	defer keys.Release()
	if _, err := tbl.Lookup(ctx, keys, nil); err == nil {
		t.Error("a lookup in the dropped table succeeded")
	}
}

func pkKeys(t *testing.T, e *env, ids []any) arrow.RecordBatch {
	return record(t, e.mem, i64("id", false, ids...))
}

// checkOneRowPerKey scans the table's state through the engine's plan.
func checkOneRowPerKey(ctx context.Context, tbl *tables.Table, e *env) error {
	v, err := tbl.Capture(ctx, tables.LayerTable)
	if err != nil {
		return err
	}
	p, err := v.Plan(ctx, scan.Request{})
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, part := range p.Parts() {
		rs, err := part.Open(ctx)
		if err != nil {
			return err
		}
		for {
			rec, err := rs.Next()
			if err != nil {
				rs.Close()
				if errors.Is(err, io.EOF) {
					break
				}
				return err
			}
			for _, row := range rowStrings(rec) {
				id := strings.SplitN(row, "|", 2)[0]
				if seen[id] {
					rec.Release()
					rs.Close()
					return fmt.Errorf("key %s twice: not one row per key", id)
				}
				seen[id] = true
			}
			rec.Release()
		}
	}
	if int64(len(seen)) != v.Rows() {
		return fmt.Errorf("%d keys read, the view says %d live rows per key", len(seen), v.Rows())
	}
	return nil
}
