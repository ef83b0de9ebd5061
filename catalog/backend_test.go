package catalog

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/lakestream/lakestream/internal/pgtest"
)

// The store tests run on both backends (forEachBackend): a SQLite file and
// a PostgreSQL database. One PostgreSQL server serves the whole test
// binary, started by the first test that needs it; each test gets a fresh
// database on it.

// backend makes catalogs of one kind for tests.
type backend struct {
	name string
	// fresh returns where a new, empty catalog is: a file path or a URL.
	fresh func(t *testing.T) string
	// openAt opens the catalog at where.
	openAt func(ctx context.Context, where string, cfg Config) (*Catalog, error)
	// raw runs stmt (? placeholders) on the catalog's tables directly,
	// as an older release or damage could have left them.
	raw func(t *testing.T, where, stmt string, args ...any)
}

var sqliteBackend = backend{
	name:   "sqlite",
	fresh:  func(t *testing.T) string { return filepath.Join(t.TempDir(), "catalog.db") },
	openAt: Open,
	raw:    storeRaw,
}

var postgresBackend = backend{
	name:   "postgres",
	fresh:  func(t *testing.T) string { return freshPostgres(t) },
	openAt: OpenPostgres,
	raw:    storeRawPostgres,
}

// forEachBackend runs fn as a subtest per backend. The PostgreSQL one is
// skipped without PostgreSQL binaries, except under CI=true.
func forEachBackend(t *testing.T, fn func(t *testing.T, b backend)) {
	for _, b := range []backend{sqliteBackend, postgresBackend} {
		t.Run(b.name, func(t *testing.T) { fn(t, b) })
	}
}

// testConfig is the tests' Config: a fixed clock.
func testConfig() Config {
	clock := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	return Config{BusyTimeout: 50 * time.Millisecond, Now: func() time.Time { return clock }}
}

// open opens the catalog at where with testConfig; the test closes it.
func (b backend) open(t *testing.T, where string) *Catalog {
	t.Helper()
	c, err := b.openAt(context.Background(), where, testConfig())
	if err != nil {
		t.Fatalf("open %s catalog: %v", b.name, err)
	}
	return c
}

// newCatalog opens a new, empty catalog, closed when the test ends, and
// returns where it is, to open it again.
func (b backend) newCatalog(t *testing.T) (*Catalog, string) {
	t.Helper()
	where := b.fresh(t)
	c := b.open(t, where)
	t.Cleanup(func() { _ = c.Close() })
	return c, where
}

var (
	pgOnce   sync.Once
	pgServer *pgtest.Server
	pgErr    error
	pgDBs    atomic.Int64
)

// freshPostgres creates an empty database on the tests' server and
// returns its URL.
func freshPostgres(t testing.TB) string {
	t.Helper()
	pgOnce.Do(func() {
		// Test settings: nothing here needs durability across a crash.
		pgServer, pgErr = pgtest.Start(context.Background(), pgtest.Options{
			Settings: []string{"fsync=off", "synchronous_commit=off", "max_connections=200"}})
	})
	if errors.Is(pgErr, pgtest.ErrNoPostgres) {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%v (CI=true: the PostgreSQL tests must run; install postgresql)", pgErr)
		}
		t.Skipf("%v: skipping the PostgreSQL tests (they fail instead under CI=true)", pgErr)
	}
	if pgErr != nil {
		t.Fatalf("start PostgreSQL: %v", pgErr)
	}
	url, err := pgServer.CreateDatabase(context.Background(), fmt.Sprintf("catalog_%d", pgDBs.Add(1)))
	if err != nil {
		t.Fatal(err)
	}
	return url
}

func TestMain(m *testing.M) {
	code := m.Run()
	if pgServer != nil {
		if err := pgServer.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stop PostgreSQL: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// storeRawPostgres is storeRaw for a PostgreSQL catalog.
func storeRawPostgres(t *testing.T, url, stmt string, args ...any) {
	t.Helper()
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.RuntimeParams["search_path"] = pgSchema
	db := stdlib.OpenDB(*cfg)
	defer db.Close()
	if _, err := db.Exec(rebindDollar(stmt), args...); err != nil {
		t.Fatalf("%s: %v", stmt, err)
	}
}
