package tables

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lakestream/lakestream/catalog"
	"github.com/lakestream/lakestream/columnarlog"
	"github.com/lakestream/lakestream/internal/vfs"
)

func TestRetentionKeepsUntieredData(t *testing.T) {
	ctx := context.Background()
	var now atomic.Int64
	now.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro())
	clock := func() time.Time { return time.UnixMicro(now.Load()) }
	cat, err := catalog.Open(ctx, t.TempDir()+"/catalog.db", catalog.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	store, err := Open(ctx, cat, Config{Dir: "/tables", Log: columnarlog.Options{FS: vfs.NewMem(), Now: clock, SegmentAge: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	for _, ddl := range []string{
		"CREATE TABLE lake (id BIGINT) WITH ('log.retention'='2h')",
		"CREATE TABLE nolake (id BIGINT) WITH ('log.retention'='2h', 'datalake.enabled'='false')",
	} {
		stmt, err := catalog.Parse(ddl)
		if err != nil {
			t.Fatal(err)
		}
		if err := store.Exec(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)
	for i := range 10 {
		for _, name := range []string{"lake", "nolake"} {
			tbl, err := store.Get(ctx, "", name)
			if err != nil {
				t.Fatal(err)
			}
			b := array.NewInt64Builder(memory.DefaultAllocator)
			b.Append(int64(i))
			col := b.NewArray()
			rec := array.NewRecordBatch(schema, []arrow.Array{col}, 1)
			if _, err := tbl.Write(ctx, rec); err != nil {
				t.Fatal(err)
			}
			rec.Release()
			col.Release()
			b.Release()
		}
		now.Add((45 * time.Minute).Microseconds())
	}
	n, err := store.ApplyRetention()
	if err != nil || n == 0 {
		t.Fatalf("retention deleted %d segments: %v", n, err)
	}
	lake, _ := store.Get(ctx, "", "lake")
	nolake, _ := store.Get(ctx, "", "nolake")
	if st := lake.Log().Bucket(0).Stats(); st.Start != 0 {
		t.Fatalf("untiered lake table lost data: %+v", st)
	}
	if st := nolake.Log().Bucket(0).Stats(); st.Start == 0 || st.Committed != 10 {
		t.Fatalf("table without lake kept old segments: %+v", st)
	}
}
