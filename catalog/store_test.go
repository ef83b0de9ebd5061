package catalog

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

func openTest(t *testing.T, path string) *Catalog {
	t.Helper()
	clock := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	c, err := Open(context.Background(), path, Config{BusyTimeout: 50 * time.Millisecond, Now: func() time.Time { return clock }})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return c
}

func newTestCatalog(t *testing.T) (*Catalog, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "catalog.db")
	c := openTest(t, path)
	t.Cleanup(func() { _ = c.Close() })
	return c, path
}

// exec parses and applies sql, failing the test on error.
func exec(t *testing.T, c *Catalog, sql string) Result {
	t.Helper()
	stmt, err := Parse(sql)
	if err != nil {
		t.Fatalf("Parse(%q): %v", sql, err)
	}
	res, err := c.Exec(context.Background(), stmt)
	if err != nil {
		t.Fatalf("Exec(%q): %v", sql, err)
	}
	return res
}

func execErr(t *testing.T, c *Catalog, sql string) error {
	t.Helper()
	stmt, err := Parse(sql)
	if err != nil {
		t.Fatalf("Parse(%q): %v", sql, err)
	}
	_, err = c.Exec(context.Background(), stmt)
	return err
}

func TestDefaultDatabase(t *testing.T) { forEachBackend(t, testDefaultDatabase) }

func testDefaultDatabase(t *testing.T, b backend) {
	c, _ := b.newCatalog(t)
	ctx := context.Background()
	dbs, err := c.Databases(ctx)
	if err != nil || !reflect.DeepEqual(dbs, []string{"default"}) {
		t.Fatalf("Databases = %v, %v", dbs, err)
	}
	_, err = c.DropDatabase(ctx, "default", false, true)
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), `database "default" cannot be dropped`) {
		t.Errorf("drop default: %v", err)
	}
}

func TestDatabaseLifecycle(t *testing.T) { forEachBackend(t, testDatabaseLifecycle) }

func testDatabaseLifecycle(t *testing.T, b backend) {
	c, _ := b.newCatalog(t)
	ctx := context.Background()
	exec(t, c, "CREATE DATABASE sales")
	if res := exec(t, c, "CREATE DATABASE IF NOT EXISTS sales"); !res.NoOp {
		t.Errorf("IF NOT EXISTS on existing database: NoOp = false")
	}
	if err := execErr(t, c, "CREATE DATABASE sales"); !errors.Is(err, ErrDatabaseExists) || err.Error() != `database "sales" already exists` {
		t.Errorf("duplicate database: %v", err)
	}
	exec(t, c, "CREATE TABLE sales.orders (id BIGINT)")
	if err := execErr(t, c, "DROP DATABASE sales"); !errors.Is(err, ErrDatabaseNotEmpty) {
		t.Errorf("drop non-empty: %v", err)
	}
	res := exec(t, c, "DROP DATABASE sales CASCADE")
	if len(res.Dropped) != 1 || res.Dropped[0].Name != "orders" {
		t.Errorf("cascade dropped %v", res.Dropped)
	}
	if err := execErr(t, c, "DROP DATABASE sales"); !errors.Is(err, ErrDatabaseNotFound) {
		t.Errorf("drop missing: %v", err)
	}
	if res := exec(t, c, "DROP DATABASE IF EXISTS sales"); !res.NoOp {
		t.Errorf("DROP IF EXISTS missing: NoOp = false")
	}
	if _, err := c.Tables(ctx, "sales"); !errors.Is(err, ErrDatabaseNotFound) {
		t.Errorf("Tables of dropped database: %v", err)
	}
	if err := execErr(t, c, "CREATE TABLE nowhere.t (a INT)"); !errors.Is(err, ErrDatabaseNotFound) {
		t.Errorf("create in missing database: %v", err)
	}
}

func TestTableLifecycleAndErrors(t *testing.T) { forEachBackend(t, testTableLifecycleAndErrors) }

func testTableLifecycleAndErrors(t *testing.T, b backend) {
	c, _ := b.newCatalog(t)
	ctx := context.Background()
	res := exec(t, c, "CREATE TABLE events (id BIGINT NOT NULL, kind VARCHAR)")
	if res.Table == nil || res.Table.ID == 0 || res.NoOp {
		t.Fatalf("create result %+v", res)
	}
	err := execErr(t, c, "CREATE TABLE events (id BIGINT)")
	if !errors.Is(err, ErrTableExists) || !strings.Contains(err.Error(), `table "default.events" already exists`) {
		t.Errorf("duplicate table: %v", err)
	}
	if again := exec(t, c, "CREATE TABLE IF NOT EXISTS events (x INT)"); !again.NoOp || again.Table.ID != res.Table.ID {
		t.Errorf("IF NOT EXISTS returned %+v", again)
	}
	if _, err := c.Table(ctx, "", "nope"); !errors.Is(err, ErrTableNotFound) || !strings.Contains(err.Error(), `table "default.nope" does not exist`) {
		t.Errorf("missing table: %v", err)
	}
	if _, err := c.TableByID(ctx, 999); !errors.Is(err, ErrTableNotFound) {
		t.Errorf("missing id: %v", err)
	}
	err = execErr(t, c, "CREATE TABLE bad (a INT) WITH ('bucket.num' = 'many')")
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), `create table "default.bad": option "bucket.num"`) {
		t.Errorf("invalid table: %v", err)
	}
	if err := execErr(t, c, "ALTER TABLE events ADD COLUMN kind INT"); !errors.Is(err, ErrColumnExists) ||
		!strings.Contains(err.Error(), `column "kind" already exists in table "default.events"`) {
		t.Errorf("duplicate column: %v", err)
	}
	if _, err := c.AddColumn(ctx, "", "events", Column{Name: "n", Type: Prim(KindInteger), NotNull: true}); !errors.Is(err, ErrInvalid) {
		t.Errorf("NOT NULL column: %v", err)
	}
	if err := execErr(t, c, "ALTER TABLE ghost ADD COLUMN a INT"); !errors.Is(err, ErrTableNotFound) {
		t.Errorf("alter missing: %v", err)
	}
	dropped := exec(t, c, "DROP TABLE events")
	if len(dropped.Dropped) != 1 || dropped.Dropped[0].ID != res.Table.ID {
		t.Errorf("drop result %+v", dropped)
	}
	if err := execErr(t, c, "DROP TABLE events"); !errors.Is(err, ErrTableNotFound) {
		t.Errorf("drop missing: %v", err)
	}
	if r := exec(t, c, "DROP TABLE IF EXISTS events"); !r.NoOp {
		t.Errorf("DROP IF EXISTS: %+v", r)
	}
}

func TestDurableAcrossReopen(t *testing.T) { forEachBackend(t, testDurableAcrossReopen) }

func testDurableAcrossReopen(t *testing.T, b backend) {
	c, path := b.newCatalog(t)
	ctx := context.Background()
	exec(t, c, "CREATE DATABASE shop")
	created := exec(t, c, `CREATE TABLE shop.orders (id BIGINT PRIMARY KEY, ts TIMESTAMPTZ, amount DECIMAL(10,2),
		tags VARCHAR[], attrs MAP(VARCHAR, VARCHAR))
		WITH ('bucket.num' = '4', 'log.retention' = '3d', 'datalake.freshness' = '1m')`).Table
	altered := exec(t, c, "ALTER TABLE shop.orders ADD COLUMN note VARCHAR").Table
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Tables(ctx, "shop"); !errors.Is(err, ErrClosed) {
		t.Errorf("use after close: %v", err)
	}

	c2 := b.open(t, path)
	defer c2.Close()
	got, err := c2.Table(ctx, "shop", "orders")
	if err != nil {
		t.Fatal(err)
	}
	if describe(got) != describe(altered) {
		t.Errorf("reopened table differs:\n got %s\nwant %s", describe(got), describe(altered))
	}
	if got.ID != created.ID || got.Options.BucketNum != 4 || got.SchemaID != 1 {
		t.Errorf("reopened: id %d buckets %d schema %d", got.ID, got.Options.BucketNum, got.SchemaID)
	}
	if dbs, _ := c2.Databases(ctx); !reflect.DeepEqual(dbs, []string{"default", "shop"}) {
		t.Errorf("databases = %v", dbs)
	}
}

func TestSchemaVersions(t *testing.T) { forEachBackend(t, testSchemaVersions) }

func testSchemaVersions(t *testing.T, b backend) {
	c, _ := b.newCatalog(t)
	ctx := context.Background()
	v0 := exec(t, c, "CREATE TABLE t (id BIGINT NOT NULL)").Table
	v1 := exec(t, c, "ALTER TABLE t ADD COLUMN a VARCHAR").Table
	v2, err := c.AddColumn(ctx, "default", "t", Column{Name: "b", Type: ListOf(Prim(KindDouble))})
	if err != nil {
		t.Fatal(err)
	}
	if v0.SchemaID != 0 || v1.SchemaID != 1 || v2.SchemaID != 2 {
		t.Fatalf("schema ids %d %d %d", v0.SchemaID, v1.SchemaID, v2.SchemaID)
	}
	if len(v0.Columns) != 1 || len(v1.Columns) != 2 {
		t.Errorf("older snapshots must not change: %d, %d columns", len(v0.Columns), len(v1.Columns))
	}
	for id, want := range []string{
		"schema:\n  fields: 1\n    - id: type=int64",
		"schema:\n  fields: 2\n    - id: type=int64\n    - a: type=utf8, nullable",
		"schema:\n  fields: 3\n    - id: type=int64\n    - a: type=utf8, nullable\n    - b: type=list<element: float64, nullable>, nullable",
	} {
		s, err := v2.ArrowSchemaAt(int32(id))
		if err != nil || s.String() != want {
			t.Errorf("schema %d = %v, %v; want\n%s", id, s, err, want)
		}
	}
	if _, err := v2.SchemaAt(3); !errors.Is(err, ErrSchemaNotFound) {
		t.Errorf("SchemaAt(3): %v", err)
	}
	if v2.ColumnIndex("b") != 2 || v2.ColumnIndex("zz") != -1 {
		t.Errorf("ColumnIndex")
	}
	if cur, _ := c.Table(ctx, "", "t"); cur != v2 {
		t.Errorf("Table returns a stale snapshot")
	}
}

func TestIDsNotReused(t *testing.T) { forEachBackend(t, testIDsNotReused) }

func testIDsNotReused(t *testing.T, b backend) {
	c, path := b.newCatalog(t)
	ctx := context.Background()
	seen := map[int64]bool{}
	for i := range 3 {
		tbl := exec(t, c, "CREATE TABLE t (a INT)").Table
		if seen[tbl.ID] {
			t.Fatalf("round %d: id %d reused", i, tbl.ID)
		}
		seen[tbl.ID] = true
		exec(t, c, "DROP TABLE t")
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	c2 := b.open(t, path) // the sequence must survive a restart too
	defer c2.Close()
	tbl, err := c2.CreateTable(ctx, &CreateTable{Table: TableName{Name: "t"}, Columns: []Column{{Name: "a", Type: Prim(KindInteger)}}})
	if err != nil {
		t.Fatal(err)
	}
	if seen[tbl.ID] {
		t.Errorf("id %d reused after reopen", tbl.ID)
	}
}

func TestSecondOpenIsRefused(t *testing.T) {
	_, path := newTestCatalog(t)
	c2, err := Open(context.Background(), path, Config{BusyTimeout: 20 * time.Millisecond})
	if err == nil {
		c2.Close()
		t.Fatal("second Open of a catalog in use succeeded")
	}
	if !strings.Contains(err.Error(), "database is locked") || !strings.Contains(err.Error(), "another lakestream process") {
		t.Errorf("second Open: %v", err)
	}
}

func TestConcurrentUse(t *testing.T) { forEachBackend(t, testConcurrentUse) }

func testConcurrentUse(t *testing.T, b backend) {
	c, _ := b.newCatalog(t)
	ctx := context.Background()
	const workers, perWorker = 8, 10
	var wg sync.WaitGroup
	errs := make(chan error, workers*perWorker*4)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWorker {
				name := fmt.Sprintf("t_%d_%d", w, i)
				stmt, _ := Parse("CREATE TABLE " + name + " (a INT)")
				if _, err := c.Exec(ctx, stmt); err != nil {
					errs <- err
				}
				if _, err := c.AddColumn(ctx, "", name, Column{Name: "b", Type: Prim(KindBigInt)}); err != nil {
					errs <- err
				}
				if _, err := c.AllTables(ctx); err != nil {
					errs <- err
				}
				if i%2 == 0 {
					if _, err := c.DropTable(ctx, "", name, false); err != nil {
						errs <- err
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	all, _ := c.AllTables(ctx)
	if len(all) != workers*perWorker/2 {
		t.Errorf("%d tables left, want %d", len(all), workers*perWorker/2)
	}
	ids := map[int64]bool{}
	for _, tbl := range all {
		if ids[tbl.ID] || tbl.SchemaID != 1 {
			t.Errorf("table %s: id %d (dup %v), schema %d", tbl.FullName(), tbl.ID, ids[tbl.ID], tbl.SchemaID)
		}
		ids[tbl.ID] = true
	}
}

func TestOpenValidatesConfig(t *testing.T) {
	_, err := Open(context.Background(), filepath.Join(t.TempDir(), "c.db"), Config{DefaultBucketNum: 5000, BusyTimeout: -1})
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "DefaultBucketNum 5000") || !strings.Contains(err.Error(), "BusyTimeout") {
		t.Errorf("Open with bad config: %v", err)
	}
}

// TestOptionsDurable checks that every resolved option of a table comes
// back after a reopen as it was created (datalake.keep-on-drop once did
// not), and that a row stored before keep-on-drop was kept resolved reads
// it from the options as written.
func TestOptionsDurable(t *testing.T) { forEachBackend(t, testOptionsDurable) }

func testOptionsDurable(t *testing.T, b backend) {
	c, path := b.newCatalog(t)
	ctx := context.Background()
	created := exec(t, c, `CREATE TABLE kept (id BIGINT PRIMARY KEY, amount DOUBLE, v BIGINT)
		WITH ('bucket.num' = '3', 'log.retention' = '2h', 'log.compression' = 'lz4', 'log.segment.bytes' = '8MiB',
		'datalake.enabled' = 'true', 'datalake.freshness' = '5s', 'datalake.keep-on-drop' = 'true',
		'merge-engine' = 'aggregation', 'fields.amount.agg' = 'sum')`).Table
	if !created.Options.DatalakeKeepOnDrop {
		t.Fatal("keep-on-drop not parsed")
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	c2 := b.open(t, path)
	defer c2.Close()
	got, err := c2.Table(ctx, DefaultDatabase, "kept")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Options, created.Options) {
		t.Errorf("options after reopen:\n got %+v\nwant %+v", got.Options, created.Options)
	}

	var old Table
	if err := old.decodeRow(`["id"]`, `[]`, `{"bucket_num":1,"datalake_enabled":true}`,
		`{"datalake.keep-on-drop":"true"}`); err != nil {
		t.Fatal(err)
	}
	if !old.Options.DatalakeKeepOnDrop {
		t.Error("a row stored before keep-on-drop was resolved lost it")
	}
}
