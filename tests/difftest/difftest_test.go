// Package difftest is the differential test of Lakestream's SQL (issue 3,
// "Must show"): the same generated rows are loaded into Lakestream — through
// the catalog, the table store and its bucket logs — and into a plain
// in-process DuckDB, a corpus of queries (testdata/corpus.sql) runs against
// both, and the results must be the same: column names, column types and
// rows, in order where the query orders them fully.
//
//	data_test.go       the seeded data set: ten tables in two databases,
//	                   NULLs, unicode, nested types, special floats,
//	                   pre-1970 times, an added column, empty buckets
//	load_test.go       loading Lakestream: Store.Exec, then Table.Conform
//	                   and Table.Write in writes of varied size and shape
//	refload_test.go    loading the reference: the same DDL, INSERT
//	lake_test.go       Lakestream results: Engine.Query → Arrow → canonical
//	ref_test.go        reference results: DuckDB vectors → canonical
//	result_test.go     the canonical form and the comparer
//	corpus_test.go     the corpus format and TestCorpus
//	isolate_test.go    known-bug queries in child processes (they may crash)
//	writeload_test.go  TestCorpusUnderWriteLoad: the corpus while writers
//	                   append to an unrelated table
//	tiering_test.go    TestCorpusWhileTiering: the corpus over tables that
//	                   tier into Iceberg while rounds and maintenance run
//	pkdata_test.go     the data set as primary-key tables: workloads of
//	                   upserts, partial updates, overwrites and deletes,
//	                   and their model
//	pklake_test.go     TestCorpusPrimaryKeysLakeAndLog: the corpus over
//	                   primary-key tables split between lake and log tail
//	sanity_test.go     the comparer must report deliberate differences
//
// A failing query prints "MISMATCH <file>:<line>" with the differing rows;
// a query marked "-- bug:" in the corpus prints "KNOWN LAKESTREAM BUG" and
// fails until the bug is fixed, then fails asking for the mark's removal.
//
// The package holds tests only; it imports the packages it tests and
// nothing imports it.
package difftest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lakestream/lakestream/catalog"
	"github.com/lakestream/lakestream/internal/scan"
	"github.com/lakestream/lakestream/planner/duck"
	"github.com/lakestream/lakestream/tables"
)

// fixture is Lakestream and the reference, loaded with the data set. It is
// built once per test binary: loading is most of the cost.
type fixture struct {
	// mem is the table store's allocator: every record a scan decodes
	// comes from it, so anything left allocated after Close is a leak.
	mem   *memory.CheckedAllocator
	dir   string
	cat   *catalog.Catalog
	store *tables.Store
	eng   *duck.Engine
	ref   *refDB
	specs []*tableSpec

	// closeLake, set by a lakeHook (tiering_test.go), stops what the hook
	// started; close calls it once the engine is closed.
	closeLake func() error
}

var (
	fixOnce sync.Once
	fix     *fixture
	fixErr  error
)

func getFixture(t testing.TB) *fixture {
	t.Helper()
	fixOnce.Do(func() { fix, fixErr = openFixture(context.Background(), fixtureTables()) })
	if fixErr != nil {
		t.Fatalf("fixture: %v", fixErr)
	}
	return fix
}

func TestMain(m *testing.M) {
	code := m.Run()
	if fix != nil {
		if err := fix.close(); err != nil {
			fmt.Fprintln(os.Stderr, "difftest: close fixture:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// openFixture wires catalog, tables and engine as node.open does, on a
// fresh directory, and loads the data set into it and into the reference:
// all of it, or the tables named in only.
func openFixture(ctx context.Context, only map[string]bool) (*fixture, error) {
	return openFixtureWith(ctx, only, nil)
}

// lakeHook puts a lake under a fixture being opened (tiering_test.go). It
// runs once the store is open, before any table is created, and returns the
// resolver the engine queries through instead of the store, and the
// function that stops what it started.
type lakeHook func(ctx context.Context, f *fixture) (scan.Resolver, func() error, error)

// openFixtureWith is openFixture, with the engine over the resolver of lake
// when lake is not nil.
func openFixtureWith(ctx context.Context, only map[string]bool, lake lakeHook) (_ *fixture, err error) {
	f := &fixture{mem: memory.NewCheckedAllocator(memory.NewGoAllocator())}
	for _, t := range dataset() {
		if only == nil || only[t.name] {
			f.specs = append(f.specs, t)
		}
	}
	defer func() {
		if err != nil {
			f.close()
		}
	}()
	if f.dir, err = os.MkdirTemp("", "difftest-"); err != nil {
		return nil, err
	}
	if f.cat, err = catalog.Open(ctx, filepath.Join(f.dir, "catalog.db"), catalog.Config{}); err != nil {
		return nil, err
	}
	if f.store, err = tables.Open(ctx, f.cat, tables.Config{Dir: filepath.Join(f.dir, "tables"), Mem: f.mem}); err != nil {
		return nil, err
	}
	if f.ref, err = openRef(); err != nil {
		return nil, err
	}
	var res scan.Resolver = f.store
	if lake != nil {
		if res, f.closeLake, err = lake(ctx, f); err != nil {
			return nil, err
		}
	}
	if err := f.createDatabases(ctx); err != nil {
		return nil, err
	}
	for _, t := range f.specs {
		if err := loadLake(ctx, f.store, t); err != nil {
			return nil, fmt.Errorf("load lakestream: %w", err)
		}
		if err := f.loadReference(ctx, t); err != nil {
			return nil, err
		}
	}
	if f.eng, err = duck.New(res, duck.Options{}); err != nil {
		return nil, err
	}
	return f, nil
}

// loadReference creates t in the reference, of the schema t has in
// Lakestream, with t.rows.
func (f *fixture) loadReference(ctx context.Context, t *tableSpec) error {
	tbl, err := f.store.Get(ctx, t.db, t.name)
	if err != nil {
		return err
	}
	if err := loadRef(f.ref, t, tbl.Schema()); err != nil {
		return fmt.Errorf("load reference: %w", err)
	}
	if t.db != "" {
		return nil
	}
	// Lakestream's default database is "default": the reference answers
	// "default".t too.
	return f.ref.exec(fmt.Sprintf(`CREATE VIEW "default".%s AS SELECT * FROM main.%s`, quoteIdent(t.name), quoteIdent(t.name)))
}

func (f *fixture) createDatabases(ctx context.Context) error {
	stmt, err := catalog.Parse("CREATE DATABASE analytics")
	if err != nil {
		return err
	}
	if err := f.store.Exec(ctx, stmt); err != nil {
		return err
	}
	return f.ref.exec("CREATE SCHEMA analytics", `CREATE SCHEMA "default"`)
}

// close releases everything in reverse order of opening.
func (f *fixture) close() error {
	var errs []error
	if f.eng != nil {
		errs = append(errs, f.eng.Close())
	}
	if f.closeLake != nil {
		errs = append(errs, f.closeLake())
	}
	if f.ref != nil {
		f.ref.close()
	}
	if f.store != nil {
		errs = append(errs, f.store.Close())
	}
	if f.cat != nil {
		errs = append(errs, f.cat.Close())
	}
	if f.dir != "" {
		errs = append(errs, os.RemoveAll(f.dir))
	}
	if n := f.mem.CurrentAlloc(); n != 0 {
		errs = append(errs, fmt.Errorf("%d bytes of the table store's allocator still allocated after close: a scan or write leaked records", n))
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
