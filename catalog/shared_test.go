package catalog

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Tests of one PostgreSQL catalog shared by several handles, as by the
// nodes of a cluster: each handle is its own Catalog, with its own
// connection pool and snapshot.

// sharedHandles opens n handles on one new PostgreSQL catalog, with cfg.
func sharedHandles(t *testing.T, n int, cfg func(i int) Config) []*Catalog {
	t.Helper()
	return sharedHandlesAt(t, freshPostgres(t), n, cfg)
}

func sharedHandlesAt(t *testing.T, url string, n int, cfg func(i int) Config) []*Catalog {
	t.Helper()
	out := make([]*Catalog, n)
	for i := range out {
		c, err := OpenPostgres(context.Background(), url, cfg(i))
		if err != nil {
			t.Fatalf("open handle %d: %v", i, err)
		}
		t.Cleanup(func() { _ = c.Close() })
		out[i] = c
	}
	return out
}

func twoHandles(t *testing.T) (*Catalog, *Catalog) {
	hs := sharedHandles(t, 2, func(int) Config { return Config{} })
	return hs[0], hs[1]
}

func refresh(t *testing.T, c *Catalog) bool {
	t.Helper()
	changed, err := c.Refresh(context.Background())
	if err != nil {
		t.Fatalf("Refresh: %v", err)
	}
	return changed
}

// A change on one handle reaches the other at its Refresh: tables, their
// schema versions, views, databases and users, with the same ids.
func TestSharedRefreshSeesOthersChanges(t *testing.T) {
	var changes atomic.Int64
	hs := sharedHandles(t, 2, func(i int) Config {
		if i == 1 {
			return Config{OnChange: func() { changes.Add(1) }}
		}
		return Config{}
	})
	a, b := hs[0], hs[1]
	ctx := context.Background()
	if refresh(t, b) {
		t.Error("Refresh with no change reported one")
	}
	exec(t, a, "CREATE DATABASE shop")
	created := exec(t, a, "CREATE TABLE shop.orders (id BIGINT PRIMARY KEY, note VARCHAR) WITH ('bucket.num' = '3')").Table
	if _, err := b.Table(ctx, "shop", "orders"); !errors.Is(err, ErrDatabaseNotFound) {
		t.Fatalf("before Refresh, b sees %v; want its old snapshot", err)
	}
	if !refresh(t, b) || changes.Load() != 1 {
		t.Fatalf("Refresh after a change: changed false or OnChange not called (%d)", changes.Load())
	}
	got, err := b.Table(ctx, "shop", "orders")
	if err != nil || got.ID != created.ID || describe(got) != describe(created) || got.Options.BucketNum != 3 {
		t.Fatalf("b sees %v, %v; want %s", got, err, describe(created))
	}
	if refresh(t, b) {
		t.Error("a second Refresh reported a change")
	}
	if refresh(t, a) {
		t.Error("Refresh after the handle's own writes reported a change")
	}

	altered := exec(t, a, "ALTER TABLE shop.orders ADD COLUMN qty INT").Table
	exec(t, a, "CREATE VIEW shop.big AS SELECT * FROM orders")
	if _, _, err := a.CreateUser(ctx, "alice", "hash", false, false); err != nil {
		t.Fatal(err)
	}
	refresh(t, b)
	if got, _ := b.Table(ctx, "shop", "orders"); got == nil || got.SchemaID != 1 || describe(got) != describe(altered) {
		t.Errorf("after ADD COLUMN b sees %v", got)
	}
	if v, err := b.View(ctx, "shop", "big"); err != nil || v.Query != "SELECT * FROM orders" {
		t.Errorf("view on b: %v, %v", v, err)
	}
	if u, ok := b.User("alice"); !ok || u.PasswordHash != "hash" {
		t.Errorf("user on b: %v, %v", u, ok)
	}

	exec(t, a, "DROP TABLE shop.orders")
	if _, err := a.SetPassword(ctx, "alice", "hash2"); err != nil {
		t.Fatal(err)
	}
	refresh(t, b)
	if _, err := b.Table(ctx, "shop", "orders"); !errors.Is(err, ErrTableNotFound) {
		t.Errorf("dropped table on b: %v", err)
	}
	if u, _ := b.User("alice"); u == nil || u.Generation != 1 {
		t.Errorf("user after SetPassword on b: %+v", u)
	}
	exec(t, a, "DROP DATABASE shop CASCADE")
	if _, err := a.DropUser(ctx, "alice", false); err != nil {
		t.Fatal(err)
	}
	refresh(t, b)
	if dbs, _ := b.Databases(ctx); len(dbs) != 1 {
		t.Errorf("databases on b after DROP DATABASE: %v", dbs)
	}
	if _, ok := b.User("alice"); ok {
		t.Error("dropped user still on b")
	}
}

// A write on a handle whose snapshot is stale sees the others' changes
// first: its checks run against the database's state, not the snapshot.
func TestSharedWriteChecksFreshState(t *testing.T) {
	var changes atomic.Int64
	hs := sharedHandles(t, 2, func(i int) Config {
		return Config{OnChange: func() { changes.Add(int64(i)) }}
	})
	a, b := hs[0], hs[1]
	ctx := context.Background()
	first := exec(t, a, "CREATE TABLE t (x INT)").Table
	if err := execErr(t, b, "CREATE TABLE t (y INT)"); !errors.Is(err, ErrTableExists) {
		t.Fatalf("CREATE TABLE on a stale handle: %v, want ErrTableExists", err)
	}
	if changes.Load() != 1 {
		t.Errorf("OnChange called %d times on the write that reloaded, want 1", changes.Load())
	}
	if got, err := b.Table(ctx, "", "t"); err != nil || got.ID != first.ID {
		t.Errorf("after its write b sees %v, %v: the reload must be published", got, err)
	}
	if res := exec(t, b, "CREATE TABLE IF NOT EXISTS t (y INT)"); !res.NoOp || res.Table.ID != first.ID {
		t.Errorf("IF NOT EXISTS on b: %+v", res)
	}

	exec(t, a, "ALTER TABLE t ADD COLUMN y INT")
	if tbl := exec(t, b, "ALTER TABLE t ADD COLUMN z INT").Table; tbl.SchemaID != 2 || len(tbl.Columns) != 3 {
		t.Errorf("ADD COLUMN on a stale handle: schema %d, %d columns; want 2, 3", tbl.SchemaID, len(tbl.Columns))
	}
	if err := execErr(t, a, "ALTER TABLE t ADD COLUMN z INT"); !errors.Is(err, ErrColumnExists) {
		t.Errorf("the same column on a: %v, want ErrColumnExists", err)
	}

	exec(t, a, "DROP TABLE t")
	if err := execErr(t, b, "DROP TABLE t"); !errors.Is(err, ErrTableNotFound) {
		t.Errorf("DROP of a table dropped elsewhere: %v, want ErrTableNotFound", err)
	}
	second := exec(t, b, "CREATE TABLE t (x INT)").Table
	if second.ID <= first.ID {
		t.Errorf("ids: %d after %d; ids are never reused", second.ID, first.ID)
	}
	if _, _, err := a.CreateUser(ctx, "bob", "h", false, false); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.CreateUser(ctx, "bob", "h", false, false); !errors.Is(err, ErrUserExists) {
		t.Errorf("CreateUser on a stale handle: %v, want ErrUserExists", err)
	}
}

// Handles racing to create one name: exactly one wins, the others get
// ErrTableExists (ErrDatabaseExists), and all agree on the winner's id.
// The database's default isolation is REPEATABLE READ, which the writes
// must not take on (their lock would fail instead of waiting).
func TestSharedRacingCreates(t *testing.T) {
	const handles, rounds = 3, 15
	url := freshPostgres(t)
	setRepeatableRead(t, url)
	hs := sharedHandlesAt(t, url, handles, func(int) Config { return Config{} })
	ctx := context.Background()
	for r := range rounds {
		for _, sql := range []string{fmt.Sprintf("CREATE DATABASE d%d", r), fmt.Sprintf("CREATE TABLE d%d.t (a INT)", r)} {
			stmt, err := Parse(sql)
			if err != nil {
				t.Fatal(err)
			}
			errs := make([]error, handles)
			ids := make([]int64, handles)
			var wg sync.WaitGroup
			start := make(chan struct{})
			for i, c := range hs {
				wg.Go(func() {
					<-start
					res, err := c.Exec(ctx, stmt)
					errs[i] = err
					if res.Table != nil {
						ids[i] = res.Table.ID
					}
				})
			}
			close(start)
			wg.Wait()
			won := 0
			var winner int64
			for i, err := range errs {
				switch {
				case err == nil:
					won++
					winner = ids[i]
				case errors.Is(err, ErrTableExists), errors.Is(err, ErrDatabaseExists):
				default:
					t.Fatalf("%s on handle %d: %v", sql, i, err)
				}
			}
			if won != 1 {
				t.Fatalf("%s: %d handles won, want exactly 1 (errors %v)", sql, won, errs)
			}
			for i, c := range hs {
				refresh(t, c)
				if winner == 0 {
					continue
				}
				if got, err := c.Table(ctx, fmt.Sprintf("d%d", r), "t"); err != nil || got.ID != winner {
					t.Errorf("round %d: handle %d sees %v, %v; want id %d", r, i, got, err, winner)
				}
			}
		}
	}
}

// Watch polls and refreshes: a change on one handle reaches another's
// OnChange without a call to Refresh.
func TestSharedWatch(t *testing.T) {
	notified := make(chan struct{}, 1)
	hs := sharedHandles(t, 2, func(i int) Config {
		return Config{PollInterval: 5 * time.Millisecond, OnChange: func() {
			select {
			case notified <- struct{}{}:
			default:
			}
		}}
	})
	a, b := hs[0], hs[1]
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Watch(ctx) }()
	for i := range 3 {
		created := exec(t, a, fmt.Sprintf("CREATE TABLE w%d (x INT)", i)).Table
		select {
		case <-notified:
		case <-time.After(30 * time.Second):
			t.Fatalf("no OnChange within 30s of CREATE TABLE w%d", i)
		}
		if got, err := b.Table(ctx, "", created.Name); err != nil || got.ID != created.ID {
			t.Fatalf("after OnChange b sees %v, %v", got, err)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Watch after cancel: %v", err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Watch(context.Background()); !errors.Is(err, ErrClosed) {
		t.Errorf("Watch on a closed catalog: %v, want ErrClosed", err)
	}
}

// On SQLite there is no other writer: Refresh finds nothing, Watch ends
// at once.
func TestSQLiteRefreshAndWatch(t *testing.T) {
	c, _ := newTestCatalog(t)
	if changed, err := c.Refresh(context.Background()); changed || err != nil {
		t.Errorf("Refresh = %v, %v", changed, err)
	}
	if err := c.Watch(context.Background()); err != nil {
		t.Errorf("Watch = %v", err)
	}
}

// Every schema version has its text for both databases.
func TestMigrationsHaveBothTexts(t *testing.T) {
	for i, m := range migrations {
		if len(m.sqlite) == 0 || len(m.postgres) == 0 {
			t.Errorf("migration to version %d: %d SQLite and %d PostgreSQL statements; each needs both", i+1, len(m.sqlite), len(m.postgres))
		}
	}
}

// Nodes starting at once on an empty database migrate one after the
// other, also when the database's default isolation is REPEATABLE READ;
// the catalog's tables are in their own schema, apart from the other
// users of the database; opening again changes nothing.
func TestPostgresMigrateConcurrently(t *testing.T) {
	url := freshPostgres(t)
	setRepeatableRead(t, url)
	ctx := context.Background()
	const nodes = 4
	errs := make([]error, nodes)
	var wg sync.WaitGroup
	for i := range nodes {
		wg.Go(func() {
			c, err := OpenPostgres(ctx, url, Config{})
			if err == nil {
				err = c.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("node %d: %v", i, err)
		}
	}
	c, err := OpenPostgres(ctx, url, Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var version, public, ours int
	if err := c.db.QueryRowContext(ctx, `SELECT MAX(version) FROM schema_migrations`).Scan(&version); err != nil || version != len(migrations) {
		t.Errorf("schema version %d, %v; want %d", version, err, len(migrations))
	}
	q := `SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = $1`
	if err := c.db.QueryRowContext(ctx, q, "public").Scan(&public); err != nil || public != 0 {
		t.Errorf("%d tables in schema public, %v; want none", public, err)
	}
	// databases, tables, table_schemas, changes, views, users,
	// schema_migrations; roles, role_members, privileges, owners;
	// api_keys.
	if err := c.db.QueryRowContext(ctx, q, pgSchema).Scan(&ours); err != nil || ours != 12 {
		t.Errorf("%d tables in schema %s, %v; want 12", ours, pgSchema, err)
	}
}

func TestOpenPostgresRefusesBadInput(t *testing.T) {
	ctx := context.Background()
	if _, err := OpenPostgres(ctx, "postgres://u@h/db", Config{PollInterval: -1}); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "PollInterval") {
		t.Errorf("negative PollInterval: %v", err)
	}
	if _, err := OpenPostgres(ctx, "postgres://u:secret@h:notaport/db", Config{}); err == nil || strings.Contains(err.Error(), "secret") {
		t.Errorf("bad URL: %v; want an error without the password", err)
	}
	for where, want := range map[string]bool{"postgres://h/db": true, "postgresql://h/db": true, "/data/catalog.db": false, "catalog.db": false} {
		if IsPostgresURL(where) != want {
			t.Errorf("IsPostgresURL(%q) = %v", where, !want)
		}
	}
}

// setRepeatableRead makes REPEATABLE READ the default isolation of the
// database at url, as a DBA may have.
func setRepeatableRead(t *testing.T, url string) {
	t.Helper()
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	storeRawPostgres(t, url, "ALTER DATABASE "+pgx.Identifier{cfg.Database}.Sanitize()+" SET default_transaction_isolation = 'repeatable read'")
}

// Reads never wait and never see a half-applied state while Watch reloads
// the snapshot and the handle writes itself (run with -race).
func TestSharedReadsDuringReloads(t *testing.T) {
	hs := sharedHandles(t, 2, func(int) Config { return Config{PollInterval: 5 * time.Millisecond} })
	a, b := hs[0], hs[1]
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = b.Watch(ctx) })
	readErr := make(chan error, 1)
	wg.Go(func() {
		for ctx.Err() == nil {
			all, err := b.AllTables(ctx)
			if err == nil {
				err = checkTables(all)
			}
			if err != nil {
				readErr <- err
				return
			}
		}
	})
	const n = 20
	for i := range n {
		c := []*Catalog{a, b}[i%2]
		exec(t, c, fmt.Sprintf("CREATE TABLE r%d (x INT)", i))
		exec(t, c, fmt.Sprintf("ALTER TABLE r%d ADD COLUMN y INT", i))
	}
	cancel()
	wg.Wait()
	select {
	case err := <-readErr:
		t.Fatal(err)
	default:
	}
	refresh(t, b)
	if all, _ := b.AllTables(context.Background()); len(all) != n || checkTables(all) != nil {
		t.Errorf("b ends with %d tables (%v), want %d", len(all), checkTables(all), n)
	}
}

// checkTables checks what a reader may rely on in a list of tables: ids
// unique, every table's columns those of its current schema version.
func checkTables(all []*Table) error {
	ids := map[int64]bool{}
	for _, tbl := range all {
		if ids[tbl.ID] {
			return fmt.Errorf("id %d twice", tbl.ID)
		}
		ids[tbl.ID] = true
		if int(tbl.SchemaID)+1 != len(tbl.Columns) {
			return fmt.Errorf("table %s: schema %d with %d columns", tbl.FullName(), tbl.SchemaID, len(tbl.Columns))
		}
	}
	return nil
}
