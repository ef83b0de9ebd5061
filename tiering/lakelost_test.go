package tiering

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/lakestream/lakestream/catalog"
	"github.com/lakestream/lakestream/tables"
)

// loseLake restarts the service over an empty Iceberg catalog, as after
// iceberg.db was deleted.
func loseLake(e *lakeEnv) {
	e.t.Helper()
	e.ice = openTestIceberg(e.t, e.t.TempDir())
	e.restart(e.cfg)
}

// wantLakeQuarantined checks that table name is quarantined for its lake
// with a reason containing reason, that no read serves its log alone, and
// that no new lake table was created at offset 0.
func wantLakeQuarantined(t *testing.T, e *lakeEnv, name, reason string) {
	t.Helper()
	ctx := context.Background()
	q := e.store.Quarantined()
	if len(q) != 1 || q[0].Table != "default."+name || q[0].Part != tables.PartLake ||
		!errors.Is(q[0].Err, ErrLakeLost) || !strings.Contains(q[0].Err.Error(), reason) {
		t.Fatalf("Quarantined() = %+v, want %s's lake, lost, with %q", q, name, reason)
	}
	for _, n := range []string{name, name + "$lake", name + "$changelog"} {
		if _, err := e.store.Table(ctx, "", n); !errors.Is(err, tables.ErrQuarantined) {
			t.Errorf("read of %s: %v, want ErrQuarantined", n, err)
		}
	}
	if _, err := e.store.Get(ctx, "", name); !errors.Is(err, tables.ErrQuarantined) || !strings.Contains(err.Error(), "lake") {
		t.Errorf("Get(%s): %v, want ErrQuarantined naming the lake", name, err)
	}
	if ok, err := e.ice.CheckTableExists(ctx, []string{"default", name}); ok || err != nil {
		t.Errorf("a lake table was created anew: %v, %v", ok, err)
	}
	if e.svc.Table(q[0].ID) != nil {
		t.Error("the service serves a lake for the quarantined table")
	}
	for _, st := range e.svc.Status() {
		if st.Table == "default."+name {
			t.Errorf("Status lists the quarantined table: %+v", st)
		}
	}
}

// A lake table that was created and is gone is lost, not new: the table is
// quarantined (reads would otherwise return the log alone, without the
// tiered rows, and tiering would start a new lake at offset 0), and the
// other tables tier on.
func TestLostLakeTableIsQuarantined(t *testing.T) {
	e := newLakeEnv(t, Config{})
	e.exec(createBars)
	e.exec(`CREATE TABLE logonly (id BIGINT NOT NULL, amount DOUBLE) WITH ('datalake.enabled'='false')`)
	def := e.table("bars").Def()
	if rec, _ := e.cat.TableByID(context.Background(), def.ID); rec.LakeCreatedAt.IsZero() {
		t.Fatal("creating the lake table was not recorded in the catalog")
	}
	e.ingest("bars", 0, 1000)
	e.round("bars")
	e.ingest("logonly", 0, 10)
	loseLake(e)
	wantLakeQuarantined(t, e, "bars", "is not in the Iceberg catalog")
	if got := e.totals("logonly"); got != want(10) {
		t.Errorf("logonly: %v", got)
	}
	// Its log is intact and retention keeps it: restoring the Iceberg
	// catalog and restarting serves the table again.
	if n, err := e.store.ApplyRetention(); err != nil || n != 0 {
		t.Errorf("retention deleted %d segments of the quarantined table: %v", n, err)
	}
	e.exec("DROP TABLE bars")
	e.exec(createBars)
	if got := e.totals("bars"); got != want(0) {
		t.Errorf("bars created again: %v", got)
	}
}

// A table of a catalog that did not record its lake table (schema version
// 1): a log that starts above offset 0 shows that rows were tiered into
// the lake table that is gone.
func TestLostLakeTableOfAnOlderCatalog(t *testing.T) {
	e := newLakeEnv(t, Config{})
	e.exec(`CREATE TABLE bars (id BIGINT NOT NULL, amount DOUBLE, kind VARCHAR)
		WITH ('bucket.num'='2', 'bucket.key'='id', 'log.segment.bytes'='1MiB', 'log.retention'='1ms', 'log.compression'='none', 'datalake.freshness'='1h')`)
	e.exec(`CREATE TABLE other (id BIGINT NOT NULL, amount DOUBLE) WITH ('datalake.freshness'='1h')`)
	for i := range 4 {
		e.ingest("bars", i*50_000, 50_000)
	}
	e.round("bars")
	deleteTieredSegments(t, e, e.table("bars"))
	start := e.table("bars").Log().Bucket(0).Stats().Start
	e.ingest("other", 0, 100)

	// Forget the record, as a catalog of schema version 1 never had it.
	e.store.SetLake(nil)
	if err := e.store.Close(); err != nil {
		t.Fatal(err)
	}
	if err := e.cat.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", filepath.Join(e.dir, "catalog.db"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE tables SET lake_created_at = 0`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	ctx := context.Background()
	if e.cat, err = catalog.Open(ctx, filepath.Join(e.dir, "catalog.db"), catalog.Config{}); err != nil {
		t.Fatal(err)
	}
	if e.store, err = tables.Open(ctx, e.cat, tables.Config{Dir: filepath.Join(e.dir, "tables")}); err != nil {
		t.Fatal(err)
	}
	loseLake(e)
	wantLakeQuarantined(t, e, "bars", "bucket 0 of its log starts at offset "+strconv.FormatInt(start, 10))

	// The other table's lake is gone too, but rows never left its log: it
	// is created anew, recorded, and tiers from the log, which holds every
	// row.
	other := e.table("other").Def().ID
	if got := e.totals("other"); got != want(100) {
		t.Errorf("other: %v, want %v", got, want(100))
	}
	if res, err := e.svc.Round(ctx, other); err != nil || res.Rows != 100 {
		t.Errorf("round of other: %+v, %v", res, err)
	}
	if got := e.totals("other$lake"); got != want(100) {
		t.Errorf("other's new lake: %v, want %v", got, want(100))
	}
	if rec, _ := e.cat.TableByID(ctx, other); rec.LakeCreatedAt.IsZero() {
		t.Error("the re-created lake table was not recorded")
	}
}
