package tables_test

import (
	"context"
	"errors"
	"testing"

	"github.com/lakestream/lakestream/internal/scan"
	"github.com/lakestream/lakestream/internal/vfs"
	"github.com/lakestream/lakestream/tables"
)

// readAt reads the engine's table name under ctx, as the engine does.
func readAt(t *testing.T, ctx context.Context, st *tables.Store, name string) ([]string, error) {
	t.Helper()
	tbl, err := st.Table(ctx, "", name)
	if err != nil {
		return nil, err
	}
	return planRows(ctx, tbl, scan.Request{})
}

// An engine read under pins reads the pinned ranges, not what the table
// holds now; pins of single buckets read disjoint parts whose union is
// the pinned capture; the resolutions the engine makes are recorded; a pin
// of a table altered since is ErrPinStale.
func TestPinnedEngineReads(t *testing.T) {
	e := newEnv(t, vfs.NewMem())
	e.mustExec("CREATE TABLE ev (id BIGINT NOT NULL, amount DOUBLE, kind VARCHAR, ts TIMESTAMP) WITH ('bucket.num'='2', 'bucket.key'='id')")
	tbl := e.table("ev")
	first := events(t, e.mem, 0, 40)
	want := sorted(expectRows(events(t, e.mem, 0, 40)))
	e.write(tbl, first)
	ctx, rec := tables.RecordResolved(context.Background())
	v, err := tbl.Capture(ctx, tables.LayerTable)
	if err != nil {
		t.Fatal(err)
	}
	pin, ok := v.Pin()
	if !ok || len(pin.Ranges) != 2 {
		t.Fatalf("pin of a log table: %+v, %v; want both buckets", pin, ok)
	}
	e.write(tbl, events(t, e.mem, 40, 20))

	now, err := readAt(t, ctx, e.store, "ev")
	if err != nil || len(now) != 60 {
		t.Fatalf("unpinned read: %d rows, %v; want 60", len(now), err)
	}
	if got := rec.List(); len(got) != 1 || got[0].Table != tbl || got[0].Layer != tables.LayerTable {
		t.Fatalf("resolutions recorded: %+v, want ev's table layer once", got)
	}
	pinned, err := readAt(t, tables.WithPins(ctx, []tables.Pin{pin}), e.store, "ev")
	if err != nil {
		t.Fatal(err)
	}
	sameRows(t, "pinned read", sorted(pinned), want)

	var union []string
	for _, r := range pin.Ranges {
		one := pin
		one.Ranges = []tables.Range{r}
		rows, err := readAt(t, tables.WithPins(ctx, []tables.Pin{one}), e.store, "ev")
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) == 0 || len(rows) == 40 {
			t.Errorf("bucket %d alone: %d rows, want part of the 40", r.Bucket, len(rows))
		}
		union = append(union, rows...)
	}
	sameRows(t, "union of the bucket pins", sorted(union), want)

	bad := pin
	bad.Ranges = []tables.Range{{Bucket: 9, From: 0, To: 1}}
	if _, err := readAt(t, tables.WithPins(ctx, []tables.Pin{bad}), e.store, "ev"); err == nil {
		t.Error("a pin of bucket 9 of a 2-bucket table was read")
	}
	e.mustExec("ALTER TABLE ev ADD COLUMN note VARCHAR")
	if _, err := readAt(t, tables.WithPins(ctx, []tables.Pin{pin}), e.store, "ev"); !errors.Is(err, tables.ErrPinStale) {
		t.Errorf("pin of an altered table: %v, want ErrPinStale", err)
	}
}
