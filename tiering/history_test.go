package tiering

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lakestream/lakestream/tables"
)

// changeRow is one row of a bucket's changelog as a subscriber sees it.
type changeRow struct {
	id     int64
	amount float64
	change string
	offset int64
	commit int64
}

// follow subscribes to bucket from offset from and collects its rows until
// the offset end, checking they come in offset order.
func follow(t *testing.T, tbl *tables.Table, bucket int, from, end int64) []changeRow {
	t.Helper()
	schema := tbl.ChangelogSchema()
	col := func(name string) int { return schema.FieldIndices(name)[0] }
	cols := []int{col("id"), col("amount"), col("_change_type"), col("_bucket"), col("_offset"), col("_commit_timestamp")}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out := make(chan arrow.RecordBatch, 4)
	errc := make(chan error, 1)
	go func() { errc <- tbl.Follow(ctx, bucket, from, cols, out) }()
	var rows []changeRow
	next := from
	for next < end {
		select {
		case rec := <-out:
			for i := 0; i < int(rec.NumRows()); i++ {
				r := changeRow{
					id:     rec.Column(0).(*array.Int64).Value(i),
					amount: rec.Column(1).(*array.Float64).Value(i),
					change: rec.Column(2).(*array.String).Value(i),
					offset: rec.Column(4).(*array.Int64).Value(i),
					commit: int64(rec.Column(5).(*array.Timestamp).Value(i)),
				}
				if b := rec.Column(3).(*array.Int32).Value(i); int(b) != bucket {
					t.Fatalf("row of bucket %d in bucket %d's stream", b, bucket)
				}
				if r.offset != next {
					t.Fatalf("bucket %d: offset %d after %d", bucket, r.offset, next-1)
				}
				next++
				rows = append(rows, r)
			}
			rec.Release()
		case err := <-errc:
			t.Fatalf("follow bucket %d from %d ended at %d: %v", bucket, from, next, err)
		}
	}
	endFollow(t, cancel, out, errc)
	return rows
}

// deleteTieredSegments applies retention until every bucket's log starts
// above offset 0 (log.retention is tiny in these tests).
func deleteTieredSegments(t testing.TB, e *lakeEnv, tbl *tables.Table) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := e.store.ApplyRetention(); err != nil {
			t.Fatal(err)
		}
		done := true
		for b := 0; b < tbl.Log().Buckets(); b++ {
			done = done && tbl.Log().Bucket(b).Stats().Start > 0
		}
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("retention deleted no tiered segment in 30 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A subscription from below the retained log reads the lake first, then
// the log: every offset once, in order, with the values, change types and
// commit times the log had, across rounds, a compaction and several
// buckets, and from any start.
func TestHandOffFromLake(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0) // rounds, compaction and history reads release what they allocate
	e := newLakeEnv(t, Config{Mem: mem, Maintenance: Maintenance{CompactMinFiles: 2, CompactSmallBytes: 64 << 20}})
	e.exec(`CREATE TABLE bars (id BIGINT NOT NULL, amount DOUBLE, kind VARCHAR)
		WITH ('bucket.num'='2', 'bucket.key'='id', 'log.segment.bytes'='1MiB', 'log.retention'='1ms', 'log.compression'='none')`)
	tbl := e.table("bars")
	for i := 0; i < 4; i++ {
		e.ingest("bars", i*50_000, 50_000)
		if i%2 == 1 {
			e.round("bars")
		}
	}
	res, err := e.svc.Maintain(context.Background(), tbl.Def().ID, false)
	if err != nil {
		t.Fatal(err)
	}
	if res.FilesCompacted == 0 {
		t.Fatal("nothing compacted: the test would not cover compacted row maps")
	}
	e.ingest("bars", 200_000, 1000) // a tail only in the log
	ends := tbl.Log().CommittedEnds()
	want := make([][]changeRow, len(ends))
	for b := range ends {
		want[b] = follow(t, tbl, b, 0, ends[b])
	}
	deleteTieredSegments(t, e, tbl)
	for b, end := range ends {
		start := tbl.Log().Bucket(b).Stats().Start
		for _, from := range []int64{0, 1, start / 2, start - 1, start} {
			got := follow(t, tbl, b, from, end)
			if !slices.Equal(got, want[b][from:]) {
				t.Fatalf("bucket %d from %d (log starts at %d): rows differ from the log's", b, from, start)
			}
		}
	}
	// A timestamp in the lake's range finds its offset there.
	for b := range ends {
		row := want[b][len(want[b])/3]
		off, err := tbl.OffsetForTime(context.Background(), b, row.commit)
		if err != nil {
			t.Fatal(err)
		}
		first := slices.IndexFunc(want[b], func(r changeRow) bool { return r.commit >= row.commit })
		if off != int64(first) {
			t.Fatalf("bucket %d: offset for time %d is %d, want %d", b, row.commit, off, first)
		}
	}
}

// Rows of one log batch split across partitions (here by day) land in
// several files, interleaved: the hand-off still returns them in offset
// order, from a keyless table spread over several buckets.
func TestHandOffInterleavedPartitions(t *testing.T) {
	e := newLakeEnv(t, Config{})
	e.exec(`CREATE TABLE ev (id BIGINT NOT NULL, amount DOUBLE, ts TIMESTAMPTZ) PARTITIONED BY (day(ts))
		WITH ('bucket.num'='3', 'log.segment.bytes'='1MiB', 'log.retention'='1ms', 'log.compression'='none')`)
	tbl := e.table("ev")
	rng := rand.New(rand.NewPCG(1, 2))
	id := int64(0)
	for batch := 0; batch < 30; batch++ {
		b := array.NewRecordBuilder(memory.DefaultAllocator, tbl.Schema())
		for i := 0; i < 5000; i++ {
			b.Field(0).(*array.Int64Builder).Append(id)
			b.Field(1).(*array.Float64Builder).Append(float64(id) / 2)
			day := int64(rng.IntN(3)) * 86_400_000_000
			b.Field(2).(*array.TimestampBuilder).Append(arrow.Timestamp(1_700_000_000_000_000 + day + id))
			id++
		}
		rec := b.NewRecordBatch()
		b.Release()
		if _, err := tbl.Write(context.Background(), rec); err != nil {
			t.Fatal(err)
		}
		rec.Release()
		if batch%10 == 9 {
			e.round("ev")
		}
	}
	ends := tbl.Log().CommittedEnds()
	want := make([][]changeRow, len(ends))
	for b := range ends {
		want[b] = follow(t, tbl, b, 0, ends[b])
	}
	deleteTieredSegments(t, e, tbl)
	for b, end := range ends {
		if got := follow(t, tbl, b, 0, end); !slices.Equal(got, want[b]) {
			t.Fatalf("bucket %d: rows differ from the log's", b)
		}
	}
}

// Row maps survive encoding, merge continuing runs, and a malformed one is
// an error, never a wrong map.
func TestRowMapEncoding(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var m rowMap
	var off [4]int64
	commit := int64(1_700_000_000_000_000)
	for i := 0; i < 10_000; i++ {
		b := rng.IntN(4)
		n := int64(1 + rng.IntN(500))
		commit += int64(rng.IntN(3))
		m = m.add(run{bucket: int32(b), offset: off[b], rows: n, commit: commit, change: uint8(rng.IntN(5))})
		off[b] += n
	}
	got, err := decodeRowMap(m.encode())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, m) {
		t.Fatal("row map changed through encoding")
	}
	if n := len(rowMap(nil).add(run{offset: 0, rows: 5, commit: 1}).add(run{offset: 5, rows: 5, commit: 1})); n != 1 {
		t.Fatalf("a continuing run was not merged: %d runs", n)
	}
	// Slices cut runs at row boundaries.
	s := m.slice(100, 1100)
	if s.rows() != 1000 || s[0].offset != m[0].offset+100 && m[0].rows > 100 {
		t.Fatalf("slice: %d rows, first %+v", s.rows(), s[0])
	}
	enc := m.encode()
	for _, bad := range []string{"", "2:abc", "1:!!", enc[:len(enc)/2], rowMapVersion + "AAAA"} {
		if _, err := decodeRowMap(bad); err == nil {
			t.Fatalf("decodeRowMap(%.20q) accepted", bad)
		}
	}
}

// A file that lost its row map (rewritten by another engine) makes the
// history unavailable, with an error that says why; the log part still
// serves.
func TestHandOffWithoutRowMapIsAnError(t *testing.T) {
	e := newLakeEnv(t, Config{})
	e.exec(`CREATE TABLE bars (id BIGINT NOT NULL, amount DOUBLE)
		WITH ('log.segment.bytes'='1MiB', 'log.retention'='1ms', 'log.compression'='none')`)
	tbl := e.table("bars")
	e.ingest("bars", 0, 100_000)
	e.round("bars")
	e.ingest("bars", 100_000, 10)
	deleteTieredSegments(t, e, tbl)
	// Forget the row map of every file as if another engine had rewritten
	// them: the cached footers are what the history reads.
	st := e.svc.lookup(tbl.Def().ID).state.Load()
	fs, err := st.tbl.FS(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := st.tbl.Scan().PlanFiles(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		x, err := e.svc.fileIndex(fs, task.File.FilePath())
		if err != nil {
			t.Fatal(err)
		}
		x.rows = nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out := make(chan arrow.RecordBatch, 4)
	err = tbl.Follow(ctx, 0, 0, []int{0}, out)
	if !errors.Is(err, errNoHistory) {
		t.Fatalf("follow from 0 without row maps: %v", err)
	}
	if msg := fmt.Sprint(err); !containsAll(msg, "no row map", "bars") {
		t.Fatalf("error does not say why: %s", msg)
	}
	start := tbl.Log().Bucket(0).Stats().Start
	if rows := follow(t, tbl, 0, start, tbl.Log().CommittedEnds()[0]); len(rows) == 0 {
		t.Fatal("the log part served nothing")
	}
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
