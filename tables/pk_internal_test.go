package tables

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lakestream/lakestream/catalog"
)

// A stale index (a write reached the log but not the index) is brought
// up to the log by the next operation.
func TestPKStaleIndexResyncs(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cat, err := catalog.Open(ctx, filepath.Join(dir, "catalog.db"), catalog.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	s, err := Open(ctx, cat, Config{Dir: filepath.Join(dir, "tables")})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	stmt, _ := catalog.Parse(`CREATE TABLE kv (id BIGINT, v VARCHAR, PRIMARY KEY (id))`)
	if err := s.Exec(ctx, stmt); err != nil {
		t.Fatal(err)
	}
	tbl, err := s.Get(ctx, "", "kv")
	if err != nil {
		t.Fatal(err)
	}
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "v", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, schema, strings.NewReader(`[{"id": 1, "v": "a"}, {"id": 2, "v": "b"}]`))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	if _, err := tbl.Write(ctx, rec); err != nil {
		t.Fatal(err)
	}
	// The index loses what the write applied, as a failed index commit
	// would leave it.
	if err := tbl.pk.idx.Reset(0, 0); err != nil {
		t.Fatal(err)
	}
	tbl.pk.stale.Store(true)
	keys, _, _ := array.RecordFromJSON(memory.DefaultAllocator, arrow.NewSchema(schema.Fields()[:1], nil), strings.NewReader(`[{"id": 2}, {"id": 1}]`))
	defer keys.Release()
	got, err := tbl.Lookup(ctx, keys, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer got.Release()
	if got.NumRows() != 2 || got.Column(1).ValueStr(0) != "b" || tbl.pk.stale.Load() {
		t.Fatalf("after resync: %v (stale %v)", got, tbl.pk.stale.Load())
	}
	if st := tbl.pk.state.Load(); st.Live() != 2 {
		t.Fatalf("%d live keys after resync, want 2", st.Live())
	}
}
