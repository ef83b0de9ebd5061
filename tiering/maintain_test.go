package tiering

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/lakestream/lakestream/internal/scan"
)

func lakeFiles(t *testing.T, tbl *table.Table) int {
	t.Helper()
	tasks, err := tbl.Scan().PlanFiles(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return len(tasks)
}

func countFiles(t *testing.T, dir, suffix string) int {
	t.Helper()
	n := 0
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, suffix) {
			n++
		}
		return nil
	})
	return n
}

// Many small rounds leave many small files and snapshots; maintenance
// compacts the files, expires snapshots and deletes old metadata files,
// and the table keeps every row once.
func TestMaintenanceCompactsExpiresAndKeepsRows(t *testing.T) {
	e := newLakeEnv(t, Config{Maintenance: Maintenance{EveryRounds: 1 << 30, RetainSnapshots: 3, SnapshotAge: -1, CompactMinFiles: 4}})
	e.exec(createBars)
	id := e.table("bars").Def().ID
	for i := 0; i < 12; i++ {
		e.ingest("bars", i*100, 100)
		e.round("bars")
	}
	lt := e.svc.lookup(id)
	before := lakeFiles(t, lt.state.Load().tbl)
	if before < 12 {
		t.Fatalf("%d data files after 12 rounds into 3 buckets", before)
	}
	res, err := e.svc.Maintain(context.Background(), id, false)
	if err != nil {
		t.Fatal(err)
	}
	tbl := lt.state.Load().tbl
	after := lakeFiles(t, tbl)
	if res.FilesCompacted == 0 || after > 3 {
		t.Fatalf("compaction: %d files compacted, %d -> %d data files (3 buckets)", res.FilesCompacted, before, after)
	}
	if n := len(tbl.Metadata().Snapshots()); n > 3 || res.SnapshotsExpired == 0 {
		t.Fatalf("%d snapshots kept, %d expired; want at most 3", n, res.SnapshotsExpired)
	}
	if got := e.totals("bars$lake"); got != want(1200) {
		t.Fatalf("lake after maintenance: %v", got)
	}
	if p := tbl.Properties()[offsetsKey]; p != formatOffsets(lt.state.Load().offsets) {
		t.Fatalf("maintenance changed the tiered offsets: %q", p)
	}
	// write.metadata.previous-versions-max bounds the metadata files.
	if n := countFiles(t, filepath.Join(e.dir, "warehouse"), ".metadata.json"); n > 22 {
		t.Fatalf("%d metadata files kept", n)
	}
	// A restart reads the same offsets back; more rounds continue exactly.
	e.restart(Config{})
	e.ingest("bars", 1200, 100)
	e.round("bars")
	if got := e.totals("bars"); got != want(1300) {
		t.Fatalf("union after restart: %v", got)
	}
}

// Files a crashed round wrote (no commit references them) are deleted by
// the orphan pass once old enough, and not before.
func TestMaintenanceDeletesOrphans(t *testing.T) {
	e := newLakeEnv(t, Config{faults: faults{beforeCommit: func() error { return errCrash }}})
	e.exec(createBars)
	id := e.table("bars").Def().ID
	e.ingest("bars", 0, 300)
	if _, err := e.svc.Round(context.Background(), id); err == nil {
		t.Fatal("no crash")
	}
	wh := filepath.Join(e.dir, "warehouse")
	orphans := countFiles(t, wh, ".parquet")
	if orphans == 0 {
		t.Fatal("the crashed round wrote no data file")
	}
	e.restart(Config{Maintenance: Maintenance{OrphanAge: 1}})
	e.round("bars")
	committed := countFiles(t, wh, ".parquet") - orphans
	if _, err := e.svc.Maintain(context.Background(), id, true); err != nil {
		t.Fatal(err)
	}
	if n := countFiles(t, wh, ".parquet"); n != committed {
		t.Fatalf("%d parquet files after the orphan pass, want the %d committed ones", n, committed)
	}
	if got := e.totals("bars"); got != want(300) {
		t.Fatalf("union: %v", got)
	}
}

// A filter on the bucket key prunes lake files by partition (bucket) and
// statistics; a time filter prunes files of other rounds.
func TestUnionPrunesLakeFiles(t *testing.T) {
	e := newLakeEnv(t, Config{})
	e.exec(createBars)
	for i := 0; i < 4; i++ {
		e.ingest("bars", i*1000, 1000)
		e.round("bars")
	}
	st, err := e.store.Table(context.Background(), "", "bars$lake")
	if err != nil {
		t.Fatal(err)
	}
	all, err := st.Plan(context.Background(), scan.Request{})
	if err != nil {
		t.Fatal(err)
	}
	one, err := st.Plan(context.Background(), scan.Request{Filters: []scan.Filter{{Column: 0, Op: "=", Value: int64(2500)}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(all.Parts()) != 12 || len(one.Parts()) != 1 {
		t.Fatalf("parts: %d without a filter (want 12: 4 rounds x 3 buckets), %d for id = 2500 (want 1)", len(all.Parts()), len(one.Parts()))
	}
	rng, err := st.Plan(context.Background(), scan.Request{Filters: []scan.Filter{{Column: 0, Op: ">=", Value: int64(3000)}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rng.Parts()) != 3 {
		t.Fatalf("id >= 3000 plans %d files, want the last round's 3", len(rng.Parts()))
	}
}

// NaN is above every number in SQL, and a pushed filter may only skip rows
// the WHERE drops: x > 2 must keep the NaN rows in the lake as in the log.
func TestLakeFilterKeepsNaNAsSQLDoes(t *testing.T) {
	if floatPushable(">", 2) || floatPushable(">=", 2) || floatPushable("=", 2) || floatPushable("<", math.NaN()) {
		t.Fatal("a comparison Iceberg evaluates differently from SQL is pushed")
	}
	e := newLakeEnv(t, Config{})
	e.exec(createBars)
	tbl := e.table("bars")
	b := array.NewRecordBuilder(memory.DefaultAllocator, tbl.Schema())
	defer b.Release()
	for i, x := range []float64{1, math.NaN(), 5} {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(1).(*array.Float64Builder).Append(x)
		b.Field(2).AppendNull()
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	if _, err := tbl.Write(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	e.round("bars")
	st, err := e.store.Table(context.Background(), "", "bars$lake")
	if err != nil {
		t.Fatal(err)
	}
	p, err := st.Plan(context.Background(), scan.Request{Columns: []int{1}, Filters: []scan.Filter{{Column: 1, Op: ">", Value: float64(2)}}})
	if err != nil {
		t.Fatal(err)
	}
	nan := 0
	for _, part := range p.Parts() {
		rs, err := part.Open(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for {
			r, err := rs.Next()
			if err != nil {
				break
			}
			xs := r.Column(0).(*array.Float64)
			for i := 0; i < xs.Len(); i++ {
				if math.IsNaN(xs.Value(i)) {
					nan++
				}
			}
			r.Release()
		}
		rs.Close()
	}
	if nan != 1 {
		t.Fatalf("x > 2 over the lake kept %d NaN rows, want 1", nan)
	}
}

// Lake data files are read once: a second scan takes their columns from
// the store's cache and returns the same rows; count(*) reads no file.
func TestLakeColumnsCached(t *testing.T) {
	e := newLakeEnv(t, Config{})
	e.exec(createBars)
	e.ingest("bars", 0, 3000)
	e.round("bars")
	if got := e.totals("bars$lake"); got != want(3000) {
		t.Fatalf("first lake read: %v", got)
	}
	first := e.store.CacheStats()
	if first.Columns == 0 {
		t.Fatal("nothing cached by a lake read")
	}
	if got := e.totals("bars$lake"); got != want(3000) {
		t.Fatalf("cached lake read: %v", got)
	}
	second := e.store.CacheStats()
	if second.Hits <= first.Hits || second.Misses != first.Misses {
		t.Fatalf("second read: cache %+v after %+v", second, first)
	}
	st, err := e.store.Table(context.Background(), "", "bars$lake")
	if err != nil {
		t.Fatal(err)
	}
	p, err := st.Plan(context.Background(), scan.Request{Columns: []int{}})
	if err != nil {
		t.Fatal(err)
	}
	var rows int64
	for _, part := range p.Parts() {
		rs, err := part.Open(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for {
			r, err := rs.Next()
			if err != nil {
				break
			}
			rows += r.NumRows()
			r.Release()
		}
		rs.Close()
	}
	if rows != 3000 {
		t.Fatalf("count(*) over the lake: %d rows", rows)
	}
}

// Compaction merges small files with each other, and with an earlier
// compaction's product only once they add up to its size.
func TestSizeTieredCompaction(t *testing.T) {
	task := func(size int64) table.FileScanTask {
		b, err := iceberg.NewDataFileBuilder(*iceberg.UnpartitionedSpec, iceberg.EntryContentData,
			fmt.Sprintf("file-%d.parquet", size), iceberg.ParquetFile, nil, nil, nil, 1, size)
		if err != nil {
			t.Fatal(err)
		}
		return table.FileScanTask{File: b.Build()}
	}
	sizes := func(ts []table.FileScanTask) (out []int64) {
		for _, t := range ts {
			out = append(out, t.File.FileSizeBytes())
		}
		return out
	}
	for _, c := range []struct{ in, want []int64 }{
		{[]int64{100, 1, 1, 1, 1}, []int64{1, 1, 1, 1}},    // the big one waits
		{[]int64{4, 1, 1, 2}, []int64{1, 1, 2, 4}},         // it is as large as the rest: merged
		{[]int64{3, 5, 40, 1, 1}, []int64{1, 1}},           // 3 > 1+1: it waits, and the larger ones
		{[]int64{7, 9}, []int64{7, 9}},                     // two are always merged
		{[]int64{10, 10, 10, 10}, []int64{10, 10, 10, 10}}, // equal rounds
	} {
		ts := make([]table.FileScanTask, len(c.in))
		for i, s := range c.in {
			ts[i] = task(s)
		}
		if got := sizes(sizeTiered(ts)); !slices.Equal(got, c.want) {
			t.Errorf("sizeTiered(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}
