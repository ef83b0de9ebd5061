package tables_test

import (
	"context"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lakestream/lakestream/catalog"
	"github.com/lakestream/lakestream/internal/scan"
	"github.com/lakestream/lakestream/tables"
)

// An acknowledged write feeds the read cache: the first read of its rows,
// and a subscriber following the table, find every column there and
// decompress nothing, and return exactly what was written.
func TestWriteThroughFirstReadHits(t *testing.T) {
	e := newEnv(t, nil)
	e.mustExec(createEvents)
	tbl := e.table("ev")
	for i := 0; i < 4; i++ {
		e.write(tbl, events(t, e.mem, i*500, 500))
	}
	fed := e.store.CacheStats()
	batches := 0
	for _, r := range tbl.LogRanges() {
		if r.To > r.From {
			batches += 4 // one write of 500 rows is one batch per bucket
		}
	}
	if fed.Columns != 4*batches || fed.Misses != 0 || fed.Hits != 0 {
		t.Fatalf("after the writes the cache holds %+v, want %d columns, no hit, no miss", fed, 4*batches)
	}
	want := sorted(expectRows(events(t, e.mem, 0, 2000)))
	_, got := scanPlan(t, tbl, allCols(tbl))
	sameRows(t, "first read", sorted(got), want)
	read := e.store.CacheStats()
	if read.Misses != 0 || read.Hits != int64(fed.Columns) {
		t.Fatalf("first read after the writes: %d hits, %d misses, want %d hits", read.Hits, read.Misses, fed.Columns)
	}

	// A subscriber from the start reads the same entries.
	var rows []string
	for b := range tbl.Log().Buckets() {
		rows = append(rows, follow(t, tbl, b, tbl.LogRanges()[b].To)...)
	}
	sameRows(t, "followed", sorted(rows), want)
	if st := e.store.CacheStats(); st.Misses != 0 || st.Hits != 2*int64(fed.Columns) {
		t.Fatalf("subscriber: %d hits, %d misses, want %d hits", st.Hits-read.Hits, st.Misses, fed.Columns)
	}
}

// follow reads bucket's rows (the table's columns) through Follow from
// offset 0 until it has those below end.
func follow(t *testing.T, tbl *tables.Table, bucket int, end int64) []string {
	t.Helper()
	ctx, cancel := context.WithCancel(ctxTimeout(t))
	out := make(chan arrow.RecordBatch)
	errc := make(chan error, 1)
	go func() { errc <- tbl.Follow(ctx, bucket, 0, []int{0, 1, 2, 3}, out) }()
	var rows []string
	for n := int64(0); n < end; {
		select {
		case rec := <-out:
			n += rec.NumRows()
			rows = append(rows, rowStrings(rec)...)
			rec.Release()
		case err := <-errc:
			cancel()
			t.Fatalf("follow bucket %d: %v", bucket, err)
		}
	}
	cancel()
	<-errc
	return rows
}

// Write-through keeps the cache within its size: a write larger than the
// cache evicts the oldest columns, and reads still return every row.
func TestWriteThroughBounded(t *testing.T) {
	e := newEnv(t, nil)
	e.cacheBytes = 512 << 10 // a third of the 40 writes' columns
	e.reopen()
	e.mustExec(createEvents)
	tbl := e.table("ev")
	for i := 0; i < 40; i++ {
		e.write(tbl, events(t, e.mem, i*1000, 1000))
		if st := e.store.CacheStats(); st.Bytes > st.MaxBytes || st.Columns == 0 {
			t.Fatalf("after write %d the cache holds %+v", i, st)
		}
	}
	before := e.store.CacheStats()
	_, got := scanPlan(t, tbl, []int{0}) // 40k values: fits; the oldest are decoded
	sameRows(t, "read", sorted(got), sorted(projectRows(expectRows(events(t, e.mem, 0, 40000)), 0)))
	after := e.store.CacheStats()
	if after.Misses == before.Misses || after.Hits == before.Hits || after.Bytes > after.MaxBytes {
		t.Fatalf("read over a full cache: before %+v, after %+v (want hits of the newest batches, misses of the oldest)", before, after)
	}
}

// Concurrent writers and readers: every read returns exact rows (each id
// once, with its own values), the cache stays bounded, and the last read
// has every row. Run with -race.
func TestWriteThroughConcurrent(t *testing.T) {
	e := newEnv(t, nil)
	e.cacheBytes = 512 << 10
	e.reopen()
	e.mustExec(createEvents)
	tbl := e.table("ev")
	const writers, writes, rows = 3, 12, 400
	want := map[string]bool{}
	for _, r := range expectRows(events(t, e.mem, 0, writers*writes*rows)) {
		want[r] = true
	}
	var wg sync.WaitGroup
	var done atomic.Bool
	errs := make(chan string, 16)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range writes {
				rec := events(t, e.mem, (w*writes+i)*rows, rows)
				_, err := tbl.Write(context.Background(), rec)
				rec.Release()
				if err != nil {
					errs <- err.Error()
					return
				}
			}
		}()
	}
	var readers sync.WaitGroup
	for range 2 {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for !done.Load() {
				got, err := readRows(tbl)
				if err != nil {
					errs <- err.Error()
					return
				}
				if len(got)%rows != 0 || len(slices.Compact(sorted(got))) != len(got) {
					errs <- "a read returned a partial write or a row twice"
					return
				}
				for _, r := range got {
					if !want[r] {
						errs <- "a read returned a row never written: " + r
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	done.Store(true)
	readers.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got, err := readRows(tbl)
	if err != nil || len(got) != len(want) {
		t.Fatalf("final read: %d rows of %d, %v", len(got), len(want), err)
	}
	if st := e.store.CacheStats(); st.Bytes > st.MaxBytes {
		t.Fatalf("cache over its size: %+v", st)
	}
}

// readRows reads every column of the table through Plan, as scanPlan does,
// returning errors instead of failing the test (it runs in goroutines).
func readRows(tbl *tables.Table) ([]string, error) {
	return planRows(context.Background(), tbl, scan.Request{Columns: allCols(tbl)})
}

// BenchmarkWriteThrough is the cost write-through adds to a write: the
// same 64k-row writes (encode, append, fsync) with the read cache (the
// columns copied into it) and without.
func BenchmarkWriteThrough(b *testing.B) {
	for _, c := range []struct {
		name  string
		bytes int64
	}{{"cache", 1 << 30}, {"none", -1}} {
		b.Run(c.name, func(b *testing.B) {
			ctx := context.Background()
			dir := b.TempDir()
			cat, err := catalog.Open(ctx, filepath.Join(dir, "catalog.db"), catalog.Config{})
			if err != nil {
				b.Fatal(err)
			}
			defer cat.Close()
			st, err := tables.Open(ctx, cat, tables.Config{Dir: filepath.Join(dir, "tables"), CacheBytes: c.bytes})
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			stmt, _ := catalog.Parse(createEvents)
			if err := st.Exec(ctx, stmt); err != nil {
				b.Fatal(err)
			}
			tbl, err := st.Get(ctx, "", "ev")
			if err != nil {
				b.Fatal(err)
			}
			rec := events(b, memory.DefaultAllocator, 0, 64<<10)
			defer rec.Release()
			for b.Loop() {
				if _, err := tbl.Write(ctx, rec); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(int64(b.N)*rec.NumRows())/b.Elapsed().Seconds(), "rows/s")
		})
	}
}
