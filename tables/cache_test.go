package tables_test

import (
	"sync"
	"testing"
)

const createEvents = `CREATE TABLE ev (id BIGINT NOT NULL, amount DOUBLE, kind VARCHAR, ts TIMESTAMP)
	WITH ('bucket.num'='2', 'bucket.key'='id')`

// A second read of the same batches takes their decoded columns from the
// cache, and returns exactly what a read without the cache returns, also
// when it asks for other columns or for columns added since.
func TestCacheServesRepeatedReadsExactly(t *testing.T) {
	e := newEnv(t, nil)
	e.mustExec(createEvents)
	tbl := e.table("ev")
	for i := 0; i < 4; i++ {
		e.write(tbl, events(t, e.mem, i*500, 500))
	}
	want := expectRows(events(t, e.mem, 0, 2000))
	_, first := scanPlan(t, tbl, []int{0, 2})
	sameRows(t, "first read", sorted(first), sorted(projectRows(want, 0, 2)))
	before := e.store.CacheStats()
	if before.Columns == 0 || before.Bytes == 0 {
		t.Fatalf("nothing cached after a read: %+v", before)
	}
	_, second := scanPlan(t, tbl, []int{0, 2})
	sameRows(t, "cached read", sorted(second), sorted(projectRows(want, 0, 2)))
	after := e.store.CacheStats()
	// The writes fed all four columns of every batch; the reads ask for two.
	if after.Hits-before.Hits < int64(before.Columns)/2 || after.Misses != before.Misses {
		t.Fatalf("second read: %d hits, %d misses (cached columns %d)", after.Hits-before.Hits, after.Misses-before.Misses, before.Columns)
	}
	_, all := scanPlan(t, tbl, allCols(tbl))
	sameRows(t, "partly cached read", sorted(all), sorted(want))
	// A column added later reads as nulls from the older batches.
	e.mustExec("ALTER TABLE ev ADD COLUMN note VARCHAR")
	tbl = e.table("ev")
	_, withNote := scanPlan(t, tbl, []int{0, 4})
	for _, r := range withNote {
		if len(r) < 7 || r[len(r)-6:] != "(null)" {
			t.Fatalf("row %q: the added column is not null", r)
		}
	}
	if len(withNote) != 2000 {
		t.Fatalf("%d rows with the added column", len(withNote))
	}
}

// The cache stays within its size, and concurrent readers of the same
// batches all get exact results.
func TestCacheBoundedAndConcurrent(t *testing.T) {
	e := newEnv(t, nil)
	e.cacheBytes = 1 << 20
	e.reopen()
	e.mustExec(createEvents)
	tbl := e.table("ev")
	for i := 0; i < 20; i++ {
		e.write(tbl, events(t, e.mem, i*1000, 1000))
	}
	want := sorted(expectRows(events(t, e.mem, 0, 20000)))
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, got := scanPlan(t, tbl, allCols(tbl))
			got = sorted(got)
			if len(got) != len(want) {
				errs <- "row count differs"
				return
			}
			for i := range got {
				if got[i] != want[i] {
					errs <- "row " + got[i] + " != " + want[i]
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if st := e.store.CacheStats(); st.Bytes > st.MaxBytes || st.MaxBytes != 1<<20 || st.Columns == 0 {
		t.Fatalf("cache %+v", st)
	}
	// Dropping the table empties its part of the cache.
	e.mustExec("DROP TABLE ev")
	if st := e.store.CacheStats(); st.Bytes != 0 || st.Columns != 0 {
		t.Fatalf("after DROP TABLE the cache holds %+v", st)
	}
}

// A scan larger than the cache reads around it instead of flushing it.
func TestCacheLargeScanReadsAround(t *testing.T) {
	e := newEnv(t, nil)
	e.cacheBytes = 64 << 10 // 8k values of 8 bytes
	e.reopen()
	e.mustExec(createEvents)
	tbl := e.table("ev")
	for i := 0; i < 20; i++ {
		e.write(tbl, events(t, e.mem, i*1000, 1000))
	}
	small := e.store.CacheStats()
	if small.Columns == 0 {
		t.Fatal("the writes fed nothing to the cache")
	}
	scanPlan(t, tbl, allCols(tbl)) // 20k rows x 4 columns: over the cache
	if st := e.store.CacheStats(); st != small {
		t.Fatalf("a scan larger than the cache went through it: before %+v, after %+v", small, st)
	}
}
