package tables_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lakestream/lakestream/catalog"
	"github.com/lakestream/lakestream/tables"
)

const (
	benchKeys  = 1 << 20 // the key space
	benchBatch = 64 << 10
)

// pkBenchRecord is benchBatch rows of random keys below keys (sequential
// from `from` when seq).
func pkBenchRecord(mem memory.Allocator, r *rand.Rand, from, keys int64, seq bool) arrow.RecordBatch {
	s := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "n", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "amount", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(mem, s)
	defer b.Release()
	for i := int64(0); i < benchBatch; i++ {
		id := from + i
		if !seq {
			id = r.Int64N(keys)
		}
		b.Field(0).(*array.Int64Builder).Append(id)
		b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("name-%d", id%1000))
		b.Field(2).(*array.Int64Builder).Append(r.Int64N(1000))
		b.Field(3).(*array.Float64Builder).Append(r.Float64())
	}
	return b.NewRecordBatch()
}

// loadPKBench opens a store in a temporary directory with a table of
// benchKeys keys, written in 64Ki-row writes (sequential keys).
func loadPKBench(b *testing.B) (*tables.Table, func()) {
	tbl, done, _ := loadPKBenchIn(b, b.TempDir())
	return tbl, done
}

func openPKBenchStore(b *testing.B, dir string) (*tables.Store, func()) {
	b.Helper()
	ctx := context.Background()
	cat, err := catalog.Open(ctx, filepath.Join(dir, "catalog.db"), catalog.Config{})
	if err != nil {
		b.Fatal(err)
	}
	st, err := tables.Open(ctx, cat, tables.Config{Dir: filepath.Join(dir, "tables")})
	if err != nil {
		b.Fatal(err)
	}
	return st, func() {
		if err := st.Close(); err != nil {
			b.Error(err)
		}
		cat.Close()
	}
}

func loadPKBenchIn(b *testing.B, dir string) (*tables.Table, func(), *tables.Store) {
	return loadPKBenchKeys(b, dir, benchKeys)
}

// loadPKBenchKeys is loadPKBenchIn of keys keys (a multiple of benchBatch).
func loadPKBenchKeys(b *testing.B, dir string, keys int64) (*tables.Table, func(), *tables.Store) {
	b.Helper()
	ctx := context.Background()
	st, done := openPKBenchStore(b, dir)
	stmt, err := catalog.Parse(`CREATE TABLE kv (id BIGINT, name VARCHAR, n BIGINT, amount DOUBLE, PRIMARY KEY (id)) WITH ('bucket.num' = '4')`)
	if err == nil {
		err = st.Exec(ctx, stmt)
	}
	if err != nil {
		b.Fatal(err)
	}
	tbl, err := st.Get(ctx, "", "kv")
	if err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 1))
	for from := int64(0); from < keys; from += benchBatch {
		rec := pkBenchRecord(memory.DefaultAllocator, r, from, keys, true)
		if _, err := tbl.Write(ctx, rec); err != nil {
			b.Fatal(err)
		}
		rec.Release()
	}
	return tbl, done, st
}

func BenchmarkPKUpsert(b *testing.B) {
	tbl, done := loadPKBench(b)
	defer done()
	r := rand.New(rand.NewPCG(2, 2))
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		rec := pkBenchRecord(memory.DefaultAllocator, r, 0, benchKeys, false)
		b.StartTimer()
		if _, err := tbl.Write(ctx, rec); err != nil {
			b.Fatal(err)
		}
		rec.Release()
	}
	b.ReportMetric(float64(b.N*benchBatch)/b.Elapsed().Seconds(), "rows/s")
	st := tbl.KeyIndexStats()
	b.ReportMetric(float64(st.DiskBytes)/float64(st.LiveKeys)*1e6/(1<<20), "index-MiB/Mkeys")
}

func BenchmarkPKLookupBatch(b *testing.B) {
	tbl, done := loadPKBench(b)
	defer done()
	r := rand.New(rand.NewPCG(3, 3))
	ctx := context.Background()
	const perCall = 1000
	kb := array.NewInt64Builder(memory.DefaultAllocator)
	defer kb.Release()
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	b.ResetTimer()
	for b.Loop() {
		for range perCall {
			kb.Append(r.Int64N(benchKeys))
		}
		a := kb.NewArray()
		keys := array.NewRecordBatch(schema, []arrow.Array{a}, perCall)
		a.Release()
		rec, err := tbl.Lookup(ctx, keys, nil)
		keys.Release()
		if err != nil {
			b.Fatal(err)
		}
		if rec.NumRows() != perCall {
			b.Fatalf("%d rows for %d keys", rec.NumRows(), perCall)
		}
		rec.Release()
	}
	b.ReportMetric(float64(b.N*perCall)/b.Elapsed().Seconds(), "keys/s")
}

// BenchmarkLogAppend64K is BenchmarkPKUpsert's baseline: the same writes
// to a table without a key (encode, append, fsync).
func BenchmarkLogAppend64K(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	cat, err := catalog.Open(ctx, filepath.Join(dir, "catalog.db"), catalog.Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer cat.Close()
	st, err := tables.Open(ctx, cat, tables.Config{Dir: filepath.Join(dir, "tables")})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	stmt, _ := catalog.Parse(`CREATE TABLE l (id BIGINT, name VARCHAR, n BIGINT, amount DOUBLE) WITH ('bucket.num' = '4', 'bucket.key' = 'id')`)
	if err := st.Exec(ctx, stmt); err != nil {
		b.Fatal(err)
	}
	tbl, err := st.Get(ctx, "", "l")
	if err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(2, 2))
	for b.Loop() {
		b.StopTimer()
		rec := pkBenchRecord(memory.DefaultAllocator, r, 0, benchKeys, false)
		b.StartTimer()
		if _, err := tbl.Write(ctx, rec); err != nil {
			b.Fatal(err)
		}
		rec.Release()
	}
	b.ReportMetric(float64(b.N*benchBatch)/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkPKLookupOne is a point lookup: one key per call.
func BenchmarkPKLookupOne(b *testing.B) {
	tbl, done := loadPKBench(b)
	defer done()
	r := rand.New(rand.NewPCG(4, 4))
	ctx := context.Background()
	kb := array.NewInt64Builder(memory.DefaultAllocator)
	defer kb.Release()
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	for b.Loop() {
		kb.Append(r.Int64N(benchKeys))
		a := kb.NewArray()
		keys := array.NewRecordBatch(schema, []arrow.Array{a}, 1)
		a.Release()
		rec, err := tbl.Lookup(ctx, keys, nil)
		keys.Release()
		if err != nil || rec.NumRows() != 1 {
			b.Fatalf("lookup: %v", err)
		}
		rec.Release()
	}
}

// BenchmarkPKReopen opens a store whose primary-key table has benchKeys
// keys and a key index that covers its log: the live sets are rebuilt
// from the index (a scan of every key).
func BenchmarkPKReopen(b *testing.B) {
	benchPKReopen(b, benchKeys)
}

// BenchmarkPKReopen5M is BenchmarkPKReopen over 5Mi keys: the restart of a
// node holding a table of the pk workload's full size.
func BenchmarkPKReopen5M(b *testing.B) {
	benchPKReopen(b, 5<<20)
}

func benchPKReopen(b *testing.B, keys int64) {
	dir := b.TempDir()
	tbl, done, _ := loadPKBenchKeys(b, dir, keys)
	st := tbl.KeyIndexStats()
	b.ReportMetric(float64(st.DiskBytes)/float64(st.LiveKeys)*1e6/(1<<20), "index-MiB/Mkeys")
	done()
	for b.Loop() {
		st, done := openPKBenchStore(b, dir)
		b.StopTimer()
		tbl, err := st.Get(context.Background(), "", "kv")
		if err != nil || tbl.KeyIndexStats().LiveKeys != keys {
			b.Fatalf("reopened: %v", err)
		}
		done()
		b.StartTimer()
	}
}

// BenchmarkPKStateRead reads the state of a table of benchKeys keys, every
// key updated once since its insert (the log holds three change records a
// key, one of them live, as after the pk workload's upserts): the scan
// under the pk workload's GROUP BY, projected to two columns. The first
// read, untimed, fills the column cache, as a repeated query finds it.
func BenchmarkPKStateRead(b *testing.B) {
	tbl, done := loadPKBench(b)
	defer done()
	ctx := context.Background()
	r := rand.New(rand.NewPCG(5, 5))
	perm := r.Perm(benchKeys)
	for from := 0; from < benchKeys; from += benchBatch {
		rec := pkBenchKeys(memory.DefaultAllocator, r, perm[from:from+benchBatch])
		if _, err := tbl.Write(ctx, rec); err != nil {
			b.Fatal(err)
		}
		rec.Release()
	}
	read := func() {
		v, err := tbl.Capture(ctx, tables.LayerTable)
		if err != nil {
			b.Fatal(err)
		}
		var rows int64
		err = v.Read(ctx, []int{1, 3}, func(rec arrow.RecordBatch) error {
			rows += rec.NumRows()
			return nil
		})
		if err != nil || rows != benchKeys {
			b.Fatalf("read %d rows of %d keys: %v", rows, benchKeys, err)
		}
	}
	read()
	b.ResetTimer()
	for b.Loop() {
		read()
	}
	b.ReportMetric(float64(b.N*benchKeys)/b.Elapsed().Seconds(), "keys/s")
}

// pkBenchKeys is a row of each of keys, of pkBenchRecord's schema.
func pkBenchKeys(mem memory.Allocator, r *rand.Rand, keys []int) arrow.RecordBatch {
	s := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "n", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "amount", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(mem, s)
	defer b.Release()
	for _, id := range keys {
		b.Field(0).(*array.Int64Builder).Append(int64(id))
		b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("name-%d", r.IntN(1000)))
		b.Field(2).(*array.Int64Builder).Append(r.Int64N(1000))
		b.Field(3).(*array.Float64Builder).Append(r.Float64())
	}
	return b.NewRecordBatch()
}
