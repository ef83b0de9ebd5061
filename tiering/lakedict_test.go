package tiering

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"

	"github.com/lakestream/lakestream/internal/scan"
)

// A cold read of Lakestream's own data files returns exactly what
// iceberg-go's reader returns, in the same (plain) types: a string column
// with a dictionary (kind, with nulls), one whose dictionary outgrew its
// limit (name, unique values), other types, and a column added after the
// file was written (nulls). Only the dictionary-encoded column is read as a
// dictionary.
func TestReadWholeOwnMatchesIceberg(t *testing.T) {
	e := newLakeEnv(t, Config{})
	e.exec(`CREATE TABLE dict (id BIGINT NOT NULL, kind VARCHAR, name VARCHAR, amount DOUBLE)
		WITH ('bucket.num'='1', 'datalake.freshness'='1h')`)
	tbl := e.table("dict")
	const rows = 20000
	b := array.NewRecordBuilder(memory.DefaultAllocator, tbl.Schema())
	defer b.Release()
	kinds := []string{"click", "view", "buy", "refund", "purchase"}
	for i := 0; i < rows; i++ {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		if i%7 == 3 {
			b.Field(1).AppendNull()
		} else {
			b.Field(1).(*array.StringBuilder).Append(kinds[i%len(kinds)])
		}
		b.Field(2).(*array.StringBuilder).Append(fmt.Sprintf("name-%012d", i*7919))
		b.Field(3).(*array.Float64Builder).Append(float64(i) / 4)
	}
	rec := b.NewRecordBatch()
	if _, err := tbl.Write(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	rec.Release()
	e.round("dict")
	e.exec("ALTER TABLE dict ADD COLUMN note VARCHAR")

	id := e.table("dict").Def().ID
	lt := e.svc.lookup(id)
	h := lakeReader{s: e.svc, lt: lt}
	snap := lt.state.Load().tbl.CurrentSnapshot()
	ctx := context.Background()
	parts, err := h.Parts(ctx, snap.SnapshotID, scan.Request{Columns: []int{0, 1, 2, 3, 4}}, nil)
	if err != nil || len(parts) != 1 {
		t.Fatalf("%d parts, %v", len(parts), err)
	}
	p := parts[0].(*lakePart)

	path := strings.TrimPrefix(p.task.File.FilePath(), "file://")
	pf, err := file.OpenParquetFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	md := pf.MetaData()
	for c, want := range map[int]bool{1: true, 2: false} {
		if got := dictEncoded(md, c); got != want {
			t.Errorf("column %d dictionary-encoded: %v, want %v", c, got, want)
		}
	}
	pf.Close()

	own, ok, err := p.readWholeOwn(ctx)
	if err != nil || !ok {
		t.Fatalf("own read: %v (own %v)", err, ok)
	}
	ice, err := p.readWhole(ctx, p.task)
	if err != nil {
		t.Fatal(err)
	}
	for i := range own {
		f := p.out.Field(i)
		if !arrow.TypeEqual(own[i].DataType(), f.Type) || !arrow.TypeEqual(ice[i].DataType(), f.Type) {
			t.Errorf("column %s: own read %s, iceberg-go %s, want %s", f.Name, own[i].DataType(), ice[i].DataType(), f.Type)
		}
		if own[i].Len() != rows || !array.Equal(own[i], ice[i]) {
			t.Errorf("column %s differs from iceberg-go's read (%d rows)", f.Name, own[i].Len())
		}
		own[i].Release()
		ice[i].Release()
	}
}

// plainStrings expands dictionary chunks with different dictionaries, nulls
// and offsets into the plain strings they stand for.
func TestPlainStrings(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	chunk := func(dict []string, idx []int32, valid []bool) arrow.Array {
		db := array.NewStringBuilder(mem)
		db.AppendValues(dict, nil)
		d := db.NewArray()
		db.Release()
		ib := array.NewInt32Builder(mem)
		ib.AppendValues(idx, valid)
		ix := ib.NewArray()
		ib.Release()
		out := array.NewDictionaryArray(&arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}, ix, d)
		d.Release()
		ix.Release()
		return out
	}
	a := chunk([]string{"x", "yy"}, []int32{1, 0, 0, 1}, []bool{true, false, true, true})
	b := chunk([]string{"", "zzz", "w"}, []int32{0, 2, 1, 1, 0}, nil)
	bs := array.NewSlice(b, 1, 4) // "w", "zzz", "zzz"
	long := chunk([]string{"a value longer than sixteen bytes", "q"}, []int32{0, 1, 0}, nil)
	got, err := plainStrings([]arrow.Array{a, bs, long}, mem)
	if err != nil {
		t.Fatal(err)
	}
	want := `["yy" (null) "x" "yy" "w" "zzz" "zzz" "a value longer than sixteen bytes" "q" "a value longer than sixteen bytes"]`
	if got.String() != want || got.NullN() != 1 || !arrow.TypeEqual(got.DataType(), arrow.BinaryTypes.String) {
		t.Errorf("got %s (%d nulls, %s), want %s", got, got.NullN(), got.DataType(), want)
	}
	for _, x := range []arrow.Array{got, a, b, bs, long} {
		x.Release()
	}
}

// BenchmarkReadWhole is the cold read of one data file (1M rows of the
// benchmark's event columns, as the union workload's) into whole columns:
// own is Lakestream's reader (dictionary strings), iceberg iceberg-go's.
func BenchmarkReadWhole(b *testing.B) {
	e := newLakeEnv(b, Config{})
	e.exec(`CREATE TABLE ev (id BIGINT NOT NULL, amount DOUBLE, kind VARCHAR, ts TIMESTAMP)
		WITH ('bucket.num'='1', 'datalake.freshness'='1h')`)
	tbl := e.table("ev")
	kinds := []string{"click", "view", "purchase", "refund", "signup", "logout"}
	for w := 0; w < 16; w++ {
		rb := array.NewRecordBuilder(memory.DefaultAllocator, tbl.Schema())
		for i := w << 16; i < (w+1)<<16; i++ {
			rb.Field(0).(*array.Int64Builder).Append(int64(i))
			rb.Field(1).(*array.Float64Builder).Append(float64(i%10000) / 100)
			rb.Field(2).(*array.StringBuilder).Append(kinds[(i*7)%len(kinds)])
			rb.Field(3).(*array.TimestampBuilder).Append(arrow.Timestamp(1_700_000_000_000_000 + int64(i)*1000))
		}
		rec := rb.NewRecordBatch()
		rb.Release()
		if _, err := tbl.Write(context.Background(), rec); err != nil {
			b.Fatal(err)
		}
		rec.Release()
	}
	e.round("ev")
	lt := e.svc.lookup(tbl.Def().ID)
	h := lakeReader{s: e.svc, lt: lt}
	ctx := context.Background()
	for _, cols := range [][]int{{0, 1, 2, 3}, {2}} {
		parts, err := h.Parts(ctx, lt.state.Load().tbl.CurrentSnapshot().SnapshotID, scan.Request{Columns: cols}, nil)
		if err != nil {
			b.Fatal(err)
		}
		for _, way := range []string{"own", "iceberg"} {
			b.Run(fmt.Sprintf("%s/cols=%v", way, cols), func(b *testing.B) {
				for range b.N {
					for _, part := range parts {
						p := part.(*lakePart)
						var got []arrow.Array
						var err error
						if way == "own" {
							got, _, err = p.readWholeOwn(ctx)
						} else {
							got, err = p.readWhole(ctx, p.task)
						}
						if err != nil {
							b.Fatal(err)
						}
						for _, a := range got {
							a.Release()
						}
					}
				}
			})
		}
	}
}
