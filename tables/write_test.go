package tables_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/lakestream/lakestream/columnarlog"
	"github.com/lakestream/lakestream/internal/bucket"
	"github.com/lakestream/lakestream/internal/vfs"
	"github.com/lakestream/lakestream/tables"
)

// Every row lands in the bucket that Iceberg's bucket hash of its key
// gives, and a key written twice goes to the same bucket both times.
func TestWriteBucketsByKeyHash(t *testing.T) {
	e := newEnv(t, vfs.NewMem())
	e.mustExec("CREATE TABLE ev " + eventsCols + " WITH ('bucket.num'='4', 'bucket.key'='id')")
	tbl := e.table("ev")
	if n := e.write(tbl, events(t, e.mem, 0, 500)); n != 500 {
		t.Fatalf("first write: %d rows, want 500", n)
	}
	// The same keys again, in another write.
	if n := e.write(tbl, events(t, e.mem, 0, 500), events(t, e.mem, 500, 100)); n != 600 {
		t.Fatalf("second write: %d rows, want 600", n)
	}

	keyBucket := map[int64]int{}
	ctx := context.Background()
	counts := make([]int, 4)
	for _, r := range tbl.LogRanges() {
		err := tbl.ReadBatches(ctx, r, func(b columnarlog.Batch) error {
			rec, err := tbl.DecodeBatch(b, []int{0})
			if err != nil {
				return err
			}
			defer rec.Release()
			ids := rec.Column(0).(*array.Int64)
			for i := range ids.Len() {
				h, ok := bucket.Hash(ids, i)
				if !ok {
					t.Fatalf("null key at bucket %d", r.Bucket)
				}
				if want := int(bucket.Of(h, 4)); want != r.Bucket {
					t.Errorf("id %d is in bucket %d, its hash gives %d", ids.Value(i), r.Bucket, want)
				}
				if prev, seen := keyBucket[ids.Value(i)]; seen && prev != r.Bucket {
					t.Errorf("id %d in buckets %d and %d", ids.Value(i), prev, r.Bucket)
				}
				keyBucket[ids.Value(i)] = r.Bucket
				counts[r.Bucket]++
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	total := 0
	for b, c := range counts {
		if c == 0 {
			t.Errorf("bucket %d is empty; 600 distinct keys should reach all 4", b)
		}
		total += c
	}
	if total != 1100 {
		t.Errorf("read %d rows, want 1100", total)
	}
}

// Without a bucket key, whole batches are spread round-robin.
func TestWriteKeylessRoundRobin(t *testing.T) {
	e := newEnv(t, vfs.NewMem())
	e.mustExec("CREATE TABLE logs " + eventsCols + " WITH ('bucket.num'='4')")
	tbl := e.table("logs")
	for i := range 8 {
		e.write(tbl, events(t, e.mem, i*10, 10))
	}
	// One write of four records spreads too.
	e.write(tbl, events(t, e.mem, 100, 5), events(t, e.mem, 105, 5), events(t, e.mem, 110, 5), events(t, e.mem, 115, 5))

	batches := make([]int, 4)
	rows := make([]int64, 4)
	for _, r := range tbl.LogRanges() {
		err := tbl.ReadBatches(context.Background(), r, func(b columnarlog.Batch) error {
			batches[r.Bucket]++
			rows[r.Bucket] += int64(b.RecordCount())
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(batches, []int{3, 3, 3, 3}) {
		t.Errorf("batches per bucket %v, want 3 each", batches)
	}
	if !slices.Equal(rows, []int64{25, 25, 25, 25}) {
		t.Errorf("rows per bucket %v, want 25 each", rows)
	}
}

// A write of zero rows writes nothing and is not an error.
func TestWriteEmpty(t *testing.T) {
	e := newEnv(t, vfs.NewMem())
	e.mustExec("CREATE TABLE ev " + eventsCols)
	tbl := e.table("ev")
	if n := e.write(tbl, events(t, e.mem, 0, 0)); n != 0 {
		t.Errorf("wrote %d rows, want 0", n)
	}
	n, err := tbl.Write(context.Background())
	if n != 0 || err != nil {
		t.Errorf("Write(nil) = %d, %v; want 0, nil", n, err)
	}
	for _, r := range tbl.LogRanges() {
		if r.To != r.From {
			t.Errorf("bucket %d holds [%d, %d) after empty writes", r.Bucket, r.From, r.To)
		}
	}
}

// Snapshot and ReadBatches return exactly the written rows, and a
// snapshot taken earlier does not see later writes.
func TestSnapshotReadsExactlyWrittenRows(t *testing.T) {
	e := newEnv(t, vfs.NewMem())
	e.mustExec("CREATE TABLE ev " + eventsCols + " WITH ('bucket.num'='3', 'bucket.key'='id')")
	tbl := e.table("ev")
	want := expectRows(events(t, e.mem, 0, 300), events(t, e.mem, 300, 7))
	e.write(tbl, events(t, e.mem, 0, 300), events(t, e.mem, 300, 7))

	before := tbl.LogRanges()
	var committed int64
	for _, r := range before {
		committed += r.To - r.From
	}
	if committed != 307 {
		t.Errorf("snapshot covers %d offsets, want 307", committed)
	}
	sameRows(t, "snapshot", flatten(readBuckets(t, tbl, allCols(tbl))), want)

	e.write(tbl, events(t, e.mem, 1000, 50))
	sameRows(t, "earlier snapshot after a later write", flatten(readRanges(t, tbl, before, allCols(tbl))), want)
	all := append(slices.Clone(want), expectRows(events(t, e.mem, 1000, 50))...)
	sameRows(t, "new snapshot", flatten(readBuckets(t, tbl, allCols(tbl))), all)
}

// A range starting inside a batch still yields that batch; an empty range
// yields nothing.
func TestReadBatchesRanges(t *testing.T) {
	e := newEnv(t, vfs.NewMem())
	e.mustExec("CREATE TABLE ev " + eventsCols)
	tbl := e.table("ev")
	for i := range 3 {
		e.write(tbl, events(t, e.mem, i*10, 10))
	}
	var bases []int64
	collect := func(r tables.Range) []int64 {
		bases = bases[:0]
		err := tbl.ReadBatches(context.Background(), r, func(b columnarlog.Batch) error {
			bases = append(bases, b.BaseOffset())
			return nil
		})
		if err != nil {
			t.Fatalf("%+v: %v", r, err)
		}
		return slices.Clone(bases)
	}
	for _, tc := range []struct {
		r    tables.Range
		want []int64
	}{
		{tables.Range{From: 0, To: 30}, []int64{0, 10, 20}},
		{tables.Range{From: 15, To: 30}, []int64{10, 20}},
		{tables.Range{From: 0, To: 10}, []int64{0}},
		{tables.Range{From: 0, To: 11}, []int64{0, 10}},
		{tables.Range{From: 10, To: 10}, nil},
	} {
		if got := collect(tc.r); !slices.Equal(got, tc.want) {
			t.Errorf("range [%d, %d): batches at %v, want %v", tc.r.From, tc.r.To, got, tc.want)
		}
	}
	// A cancelled context stops the read.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := tbl.ReadBatches(ctx, tables.Range{From: 0, To: 30}, func(columnarlog.Batch) error { return nil })
	if err == nil {
		t.Error("ReadBatches with a cancelled context: no error")
	}
}

// Plan, Parts and Open decode the same rows, with projections in table
// order and reordered.
func TestPlanProjection(t *testing.T) {
	e := newEnv(t, vfs.NewMem())
	e.mustExec("CREATE TABLE ev " + eventsCols + " WITH ('bucket.num'='4', 'bucket.key'='kind')")
	tbl := e.table("ev")
	e.write(tbl, events(t, e.mem, 0, 200), events(t, e.mem, 200, 33))
	want := expectRows(events(t, e.mem, 0, 200), events(t, e.mem, 200, 33))

	st, err := e.store.Table(context.Background(), "", "ev")
	if err != nil {
		t.Fatal(err)
	}
	if st.Name() != "default.ev" {
		t.Errorf("Name() = %q, want default.ev", st.Name())
	}
	for _, cols := range [][]int{nil, {0, 1, 2, 3}, {0, 2}, {2, 0}, {3, 1, 0}, {1}} {
		name := "cols=" + colsName(cols)
		t.Run(name, func(t *testing.T) {
			schema, rows := scanPlan(t, st, cols)
			wantCols := cols
			if wantCols == nil {
				wantCols = []int{0, 1, 2, 3}
			}
			full := tbl.Schema()
			if schema.NumFields() != len(wantCols) {
				t.Fatalf("plan schema %v, want %d fields", schema, len(wantCols))
			}
			for i, c := range wantCols {
				if !schema.Field(i).Equal(full.Field(c)) {
					t.Errorf("plan field %d = %v, want %v", i, schema.Field(i), full.Field(c))
				}
			}
			sameRows(t, "plan", rows, projectRows(want, wantCols...))
		})
	}
	if _, err := st.Plan(context.Background(), scanRequest(7)); err == nil {
		t.Error("Plan with column 7 of 4: no error")
	}
}

// A plan captures the committed offsets when it is made.
func TestPlanIgnoresLaterWrites(t *testing.T) {
	e := newEnv(t, vfs.NewMem())
	e.mustExec("CREATE TABLE ev " + eventsCols + " WITH ('bucket.num'='2')")
	tbl := e.table("ev")
	e.write(tbl, events(t, e.mem, 0, 20))
	p, err := tbl.Plan(context.Background(), scanRequest())
	if err != nil {
		t.Fatal(err)
	}
	e.write(tbl, events(t, e.mem, 20, 20), events(t, e.mem, 40, 20))
	var n int64
	for _, part := range p.Parts() {
		rs, err := part.Open(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for {
			rec, err := rs.Next()
			if err != nil {
				break
			}
			n += rec.NumRows()
			rec.Release()
		}
		rs.Close()
	}
	if n != 20 {
		t.Errorf("plan made before the second write read %d rows, want 20", n)
	}
}

// Closing a part's stream before reading it to the end stops its reader
// goroutine and releases every record it had decoded.
func TestPartCloseEarly(t *testing.T) {
	e := newEnv(t, vfs.NewMem())
	e.mustExec("CREATE TABLE ev " + eventsCols)
	tbl := e.table("ev")
	for i := range 10 {
		e.write(tbl, events(t, e.mem, i*10, 10))
	}
	p, err := tbl.Plan(context.Background(), scanRequest())
	if err != nil {
		t.Fatal(err)
	}
	rs, err := p.Parts()[0].Open(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	rec, err := rs.Next()
	if err != nil {
		t.Fatal(err)
	}
	rec.Release()
	if err := rs.Close(); err != nil {
		t.Fatal(err)
	}
	// The checked allocator is asserted at cleanup.
}

// Tables of every codec read back the same rows, and their batches carry
// the codec; a table that names none has lz4, the default.
func TestCodecsReadBack(t *testing.T) {
	for _, codec := range []struct {
		name string
		want columnarlog.Codec
	}{{"none", columnarlog.CodecNone}, {"lz4", columnarlog.CodecLZ4}, {"zstd", columnarlog.CodecZstd}, {"", columnarlog.CodecLZ4}} {
		t.Run("codec="+codec.name, func(t *testing.T) {
			e := newEnv(t, vfs.NewMem())
			with := "'bucket.num'='2', 'bucket.key'='id'"
			if codec.name != "" {
				with += ", 'log.compression'='" + codec.name + "'"
			}
			e.mustExec("CREATE TABLE ev " + eventsCols + " WITH (" + with + ")")
			tbl := e.table("ev")
			e.write(tbl, events(t, e.mem, 0, 1000))
			want := expectRows(events(t, e.mem, 0, 1000))
			for _, r := range tbl.LogRanges() {
				err := tbl.ReadBatches(context.Background(), r, func(b columnarlog.Batch) error {
					if b.Codec() != codec.want {
						t.Errorf("batch codec %v, want %v", b.Codec(), codec.want)
					}
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
			}
			sameRows(t, "ReadBatches", flatten(readBuckets(t, tbl, allCols(tbl))), want)
			_, rows := scanPlan(t, tbl, []int{2, 0})
			sameRows(t, "Plan", rows, projectRows(want, 2, 0))
		})
	}
}

// Decoded records of an uncompressed table must not alias the log's read
// buffer: they are still intact after the reader has moved on.
func TestDecodedRecordsOutliveReadBuffer(t *testing.T) {
	e := newEnv(t, vfs.NewMem())
	e.mustExec("CREATE TABLE ev " + eventsCols + " WITH ('log.compression'='none')")
	tbl := e.table("ev")
	for i := range 5 {
		e.write(tbl, events(t, e.mem, i*100, 100))
	}
	var kept []arrow.RecordBatch
	for _, r := range tbl.LogRanges() {
		err := tbl.ReadBatches(context.Background(), r, func(b columnarlog.Batch) error {
			rec, err := tbl.DecodeBatch(b, allCols(tbl))
			kept = append(kept, rec)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	want := expectRows(events(t, e.mem, 0, 500))
	sameRows(t, "records kept after the read", expectRows(kept...), want)
}

func scanRequest(cols ...int) (r scanReq) {
	r.Columns = cols
	return r
}

func colsName(cols []int) string {
	if cols == nil {
		return "nil"
	}
	s := ""
	for i, c := range cols {
		if i > 0 {
			s += ","
		}
		s += strconv.Itoa(c)
	}
	return s
}

// An appender keeps the definition it conformed against: a write whose
// table changed underneath it (ADD COLUMN) is refused whole, and a new
// appender conforms to the new definition.
func TestAppenderRefusesAWriteWhoseSchemaChanged(t *testing.T) {
	e := newEnv(t, vfs.NewMem())
	e.mustExec("CREATE TABLE ev " + eventsCols + " WITH ('bucket.num'='2', 'bucket.key'='id')")
	tbl := e.table("ev")
	ctx := context.Background()
	a := tbl.NewAppender()
	defer a.Release()
	rec := events(t, e.mem, 0, 10)
	defer rec.Release()
	if err := a.Add(ctx, rec); err != nil {
		t.Fatal(err)
	}
	e.mustExec("ALTER TABLE ev ADD COLUMN note VARCHAR")
	if err := a.Flush(ctx); !errors.Is(err, tables.ErrSchemaChanged) || a.Written() != 0 {
		t.Fatalf("flush after ADD COLUMN: %v (%d rows written), want ErrSchemaChanged and nothing written", err, a.Written())
	}
	if rows := flatten(readBuckets(t, tbl, allCols(tbl))); len(rows) != 0 {
		t.Fatalf("the refused write stored %d rows", len(rows))
	}
	b := tbl.NewAppender()
	defer b.Release()
	if b.Def().SchemaID == a.Def().SchemaID {
		t.Fatalf("a new appender conforms to schema %d, the old one", b.Def().SchemaID)
	}
	if err := b.Add(ctx, rec); err != nil {
		t.Fatal(err)
	}
	if err := b.Flush(ctx); err != nil || b.Written() != 10 {
		t.Fatalf("retried write: %v, %d rows", err, b.Written())
	}
	want := expectRows(rec)
	for i := range want {
		want[i] += "|(null)"
	}
	sameRows(t, "after the retry", sorted(flatten(readBuckets(t, tbl, allCols(tbl)))), sorted(want))
}
