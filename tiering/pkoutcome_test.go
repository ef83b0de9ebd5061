package tiering

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync/atomic"
	"testing"

	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
)

// flakyCatalog is an Iceberg catalog whose next commit fails with an
// error of unknown outcome: taken by the catalog (after) or not (before).
type flakyCatalog struct {
	icecatalog.Catalog
	after, before atomic.Bool
}

var errConnReset = errors.New("connection reset by peer")

func (c *flakyCatalog) wrap(tbl *table.Table, err error) (*table.Table, error) {
	if err != nil {
		return nil, err
	}
	return table.New(tbl.Identifier(), tbl.Metadata(), tbl.MetadataLocation(), tbl.FS, c), nil
}

func (c *flakyCatalog) LoadTable(ctx context.Context, ident table.Identifier) (*table.Table, error) {
	return c.wrap(c.Catalog.LoadTable(ctx, ident))
}

func (c *flakyCatalog) CommitTable(ctx context.Context, ident table.Identifier, reqs []table.Requirement, upds []table.Update) (table.Metadata, string, error) {
	if c.before.CompareAndSwap(true, false) {
		return nil, "", errConnReset
	}
	md, loc, err := c.Catalog.CommitTable(ctx, ident, reqs, upds)
	if err == nil && c.after.CompareAndSwap(true, false) {
		return nil, "", errConnReset
	}
	return md, loc, err
}

// A primary-key round whose commit reports an error of unknown outcome
// reads the table back: a commit the catalog took is the round's (not
// redone), one it did not take is redone by the next round; either way
// the lake is the state exactly once, and the lake's state in memory is
// the one the table holds.
func TestPKRoundUnknownCommitOutcome(t *testing.T) {
	e := newLakeEnv(t, Config{})
	fc := &flakyCatalog{Catalog: e.ice}
	e.ice = fc
	e.exec(fmt.Sprintf(createKV, 2, ""))
	e.restart(Config{})
	ctx := context.Background()
	id := e.table("kv").Def().ID
	m := pkModel{}
	e.upsert("kv", m, ids(0, 50), 1, "a")
	e.round("kv")

	e.upsert("kv", m, ids(25, 75), 2, "b")
	e.remove("kv", m, ids(0, 10))
	fc.after.Store(true)
	if _, err := e.svc.Round(ctx, id); err != nil {
		t.Fatalf("a round whose commit was taken: %v", err)
	}
	if fc.after.Load() {
		t.Fatal("the commit did not go through the flaky catalog")
	}
	e.checkLake("kv", m, "after a commit taken with an error")
	e.checkPKLake("kv", "after a commit taken with an error")

	lake := maps.Clone(m)
	e.partial("kv", m, ids(30, 40), 3)
	e.remove("kv", m, ids(60, 65))
	fc.before.Store(true)
	if _, err := e.svc.Round(ctx, id); !errors.Is(err, errConnReset) {
		t.Fatalf("a round whose commit was not taken: %v, want the error", err)
	}
	e.checkLake("kv", lake, "after a commit not taken")
	e.checkPKLake("kv", "after a commit not taken")
	e.round("kv")
	e.checkLake("kv", m, "after a commit not taken, and the next round")
	e.checkPKLake("kv", "after a commit not taken, and the next round")
}
