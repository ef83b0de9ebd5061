package node

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lakestream/lakestream/auth"
	"github.com/lakestream/lakestream/catalog"
	"github.com/lakestream/lakestream/flightsrv"
	"github.com/lakestream/lakestream/internal/scan"
	"github.com/lakestream/lakestream/planner"
	"github.com/lakestream/lakestream/planner/duck"
	"github.com/lakestream/lakestream/tables"
	"github.com/lakestream/lakestream/tiering"
)

// engine is the query engine for everything that is not DDL or a plain scan.
type engine interface {
	flightsrv.QueryEngine
	// MemoryUsed is the memory the engine holds now (lakestream_engine_memory_used_bytes).
	MemoryUsed() (int64, error)
	Close() error
}

// newEngine starts embedded DuckDB, locked down, over the node's tables,
// with the configured memory limits and query timeout.
func newEngine(res scan.Resolver, cfg Config) (engine, error) {
	limit, err := cfg.engineMemory()
	if err != nil {
		return nil, err
	}
	queryMemory, err := cfg.Limits.queryMemory(limit) // limits.go
	if err != nil {
		return nil, err
	}
	return duck.New(res, duck.Options{
		MemoryLimit:      fmt.Sprintf("%dKiB", limit>>10),
		QueryTimeout:     cfg.QueryTimeout,
		QueryMemoryLimit: queryMemory,
		Logger:           cfg.Logger,
	})
}

// Resolver is what a node's queries can name: the system tables of the
// lake service (lakestream.tiering), lakestream.offsets, then the store's tables, each the
// union of its lake and log tail ("t"), its lake ("t$lake") or its
// changelog ("t$changelog"), or the binlog view of the changelog
// ("t$binlog", planner.Binlog). It checks no privilege: it is for tools
// and tests; the node's engine resolves through one that does.
func Resolver(store *tables.Store, lake *tiering.Service) scan.Resolver {
	return resolver{store: store, lake: lake}
}

type resolver struct {
	store *tables.Store
	lake  *tiering.Service
	nodes scan.Table // lakestream.nodes; nil outside a node (Resolver)
	// buckets is lakestream.buckets; nil outside a node.
	buckets scan.Table
	audit   scan.Table // lakestream.audit; nil outside a node
	// checked makes every name resolved for a query need SELECT on it
	// (auth.Authorize), the caller's identity coming with ctx: whatever
	// reads a table through the engine (a query, a CTE, a view's body,
	// "t$lake", "t$changelog", a system table) is checked here.
	checked bool
}

func (r resolver) Table(ctx context.Context, db, name string) (scan.Table, error) {
	if r.checked {
		if err := auth.Authorize(ctx, r.store.Catalog(), catalog.PrivSelect, db, name); err != nil {
			return nil, err
		}
	}
	if t := r.lake.SystemTable(db, name); t != nil {
		return t, nil
	}
	if r.nodes != nil && isNodesTable(db, name) {
		return r.nodes, nil
	}
	if r.buckets != nil && isBucketsTable(db, name) {
		return r.buckets, nil
	}
	if isOffsetsTable(db, name) {
		return offsetsTable{r.store}, nil
	}
	if r.audit != nil && isAuditTable(db, name) {
		return r.audit, nil
	}
	if base, ok := catalog.CutSuffixFold(name, planner.BinlogSuffix); ok {
		// No table name holds a "$" (catalog/limits.go), so the suffix
		// always names the view.
		cl, err := r.store.Table(ctx, db, base+catalog.ChangelogSuffix)
		if err != nil {
			return nil, err
		}
		return planner.Binlog(cl, cl.Name()[:len(cl.Name())-len(catalog.ChangelogSuffix)]+planner.BinlogSuffix, memory.DefaultAllocator)
	}
	return r.store.Table(ctx, db, name)
}

// View and ViewNames make the engine expand the catalog's persistent
// views (duck.Views).
func (r resolver) View(ctx context.Context, db, name string) (string, bool) {
	v, err := r.store.Catalog().View(ctx, db, name)
	if err != nil {
		return "", false
	}
	if r.checked && auth.AuthorizeObject(ctx, r.store.Catalog(), catalog.PrivSelect, catalog.ViewObject(v)) != nil {
		// Not expanded: the engine resolves the name as a table, and
		// Table refuses it with the permission error.
		return "", false
	}
	return v.Query, true
}

func (r resolver) ViewNames(ctx context.Context) []string {
	views, err := r.store.Catalog().Views(ctx, "")
	if err != nil {
		return nil
	}
	names := make([]string, len(views))
	for i, v := range views {
		names[i] = v.Name
	}
	return names
}

var _ duck.Views = resolver{}
