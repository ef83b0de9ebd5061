package tiering

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	icecatalog "github.com/apache/iceberg-go/catalog"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	_ "modernc.org/sqlite"

	"github.com/lakestream/lakestream/catalog"
	"github.com/lakestream/lakestream/internal/scan"
	"github.com/lakestream/lakestream/tables"
)

// lakeEnv is a node's storage without the network: the Lakestream catalog
// and tables, an Iceberg SQL catalog on SQLite with a file:// warehouse, and
// a tiering Service over them. reopen drops the service and opens a new one
// over the same files, as a restart after a crash would.
type lakeEnv struct {
	t     testing.TB
	dir   string
	cat   *catalog.Catalog
	store *tables.Store
	ice   icecatalog.Catalog
	svc   *Service
	cfg   Config
}

func newLakeEnv(t testing.TB, cfg Config) *lakeEnv {
	t.Helper()
	e := &lakeEnv{t: t, dir: t.TempDir(), cfg: cfg}
	ctx := context.Background()
	var err error
	if e.cat, err = catalog.Open(ctx, filepath.Join(e.dir, "catalog.db"), catalog.Config{DefaultBucketNum: 1}); err != nil {
		t.Fatal(err)
	}
	if e.store, err = tables.Open(ctx, e.cat, tables.Config{Dir: filepath.Join(e.dir, "tables")}); err != nil {
		t.Fatal(err)
	}
	e.ice = openTestIceberg(t, e.dir)
	e.startService()
	t.Cleanup(func() {
		e.store.Close()
		e.cat.Close()
	})
	return e
}

func openTestIceberg(t testing.TB, dir string) icecatalog.Catalog {
	t.Helper()
	db, err := sql.Open("sqlite", filepath.Join(dir, "iceberg.db")+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	c, err := sqlcat.NewCatalog("lakestream", db, sqlcat.SQLite, iceberg.Properties{"warehouse": "file://" + filepath.Join(dir, "warehouse")})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (e *lakeEnv) startService() {
	e.t.Helper()
	svc, err := New(context.Background(), e.ice, e.store, e.cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	e.svc = svc
}

// restart forgets the service (a crashed process leaves nothing behind in
// memory) and opens a new one with cfg.
func (e *lakeEnv) restart(cfg Config) {
	e.t.Helper()
	e.store.SetLake(nil)
	e.cfg = cfg
	e.startService()
}

func (e *lakeEnv) exec(sqlText string) {
	e.t.Helper()
	stmt, err := catalog.Parse(sqlText)
	if err != nil {
		e.t.Fatal(err)
	}
	if err := e.store.Exec(context.Background(), stmt); err != nil {
		e.t.Fatal(err)
	}
}

func (e *lakeEnv) table(name string) *tables.Table {
	e.t.Helper()
	t, err := e.store.Get(context.Background(), "", name)
	if err != nil {
		e.t.Fatal(err)
	}
	return t
}

// ingest writes ids [from, from+n) with amount = id/2 in one atomic write.
func (e *lakeEnv) ingest(name string, from, n int) {
	e.t.Helper()
	t := e.table(name)
	schema := t.Schema()
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for i := from; i < from+n; i++ {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(1).(*array.Float64Builder).Append(float64(i) / 2)
		for c := 2; c < schema.NumFields(); c++ {
			b.Field(c).AppendNull()
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	if _, err := t.Write(context.Background(), rec); err != nil {
		e.t.Fatal(err)
	}
}

func (e *lakeEnv) round(name string) RoundResult {
	e.t.Helper()
	res, err := e.svc.Round(context.Background(), e.table(name).Def().ID)
	if err != nil {
		e.t.Fatal(err)
	}
	return res
}

// totals is count(*), sum(id) and the number of distinct ids of a scan.
type totals struct{ n, sum, distinct int64 }

func (e *lakeEnv) totals(name string) totals {
	e.t.Helper()
	st, err := e.store.Table(context.Background(), "", name)
	if err != nil {
		e.t.Fatal(err)
	}
	tot, err := scanTotals(st)
	if err != nil {
		e.t.Fatal(err)
	}
	return tot
}

func scanTotals(st scan.Table) (totals, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := st.Plan(ctx, scan.Request{Columns: []int{0}})
	if err != nil {
		return totals{}, err
	}
	return planTotals(ctx, p)
}

// planTotals reads a plan whose first column is id.
func planTotals(ctx context.Context, p scan.Plan) (totals, error) {
	var tot totals
	seen := map[int64]bool{}
	for _, part := range p.Parts() {
		rs, err := part.Open(ctx)
		if err != nil {
			return tot, err
		}
		for {
			rec, err := rs.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				rs.Close()
				return tot, err
			}
			ids := rec.Column(0).(*array.Int64)
			for i := 0; i < ids.Len(); i++ {
				v := ids.Value(i)
				tot.n++
				tot.sum += v
				if !seen[v] {
					seen[v] = true
					tot.distinct++
				}
			}
			rec.Release()
		}
		rs.Close()
	}
	return tot, nil
}

// want is the totals of ids [0, n).
func want(n int64) totals { return totals{n: n, sum: n * (n - 1) / 2, distinct: n} }

func (tot totals) String() string {
	return fmt.Sprintf("count %d, sum %d, distinct %d", tot.n, tot.sum, tot.distinct)
}
