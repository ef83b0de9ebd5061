package duck

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Views is implemented by a scan.Resolver that also knows persistent
// views (the catalog's CREATE VIEW). The engine expands a view where a
// statement names it: the name becomes the view's query as a subquery,
// (query) AS "name", in the SQL text DuckDB runs, before the names of the
// statement are analysed (names.go), so the tables the view reads resolve
// as if the statement had named them. Views over views expand in turn.
//
// A name is a view's only where it is a table reference DuckDB's parser
// reports (BASE_TABLE), unqualified or with a Lakestream database, and
// not the name of a CTE of the statement, which wins as in SQL.
// Rejected alternative: DuckDB views in its own catalog, kept in sync
// with the Lakestream catalog: the engine's catalog is locked and stale
// between syncs, and their bodies would bind names outside the analysis
// that keeps a bare name from reading another database's table.
type Views interface {
	// View returns the query of view db.name (db "" means the default
	// database); ok is false if there is no such view.
	View(ctx context.Context, db, name string) (query string, ok bool)
	// ViewNames returns every view's name, for a quick check of whether a
	// statement may name one: a statement that mentions none is not parsed
	// for views.
	ViewNames(ctx context.Context) []string
}

// maxViewDepth bounds the expansion of views over views; deeper means a
// view refers to itself through others.
const maxViewDepth = 32

// ErrViewDepth is the error of a view nested deeper than maxViewDepth.
var ErrViewDepth = errors.New("views nest too deep")

// expandViews returns sql with every view it names expanded, recursively.
func (e *Engine) expandViews(ctx context.Context, sql string) (string, error) {
	views, ok := e.res.(Views)
	if !ok {
		return sql, nil
	}
	for depth := 0; ; depth++ {
		names := views.ViewNames(ctx)
		if !mentionsAny(sql, names) {
			return sql, nil
		}
		out, n, err := e.expandOnce(ctx, views, sql)
		if err != nil || n == 0 {
			return out, err
		}
		if depth == maxViewDepth {
			return "", fmt.Errorf("%w: more than %d levels of views over views: does a view refer to itself?", ErrViewDepth, maxViewDepth)
		}
		sql = out
	}
}

// viewRef is a table reference that names a view, and the view's query.
type viewRef struct {
	ref   tableRef
	query string
}

// expandOnce expands the views sql names directly and returns how many.
func (e *Engine) expandOnce(ctx context.Context, views Views, sql string) (string, int, error) {
	start, _ := explainPrefix(sql)
	tree, err := e.serialize(sql[start:])
	if err != nil || tree == nil {
		return sql, 0, nil // not a SELECT DuckDB serialises: left to DuckDB as written
	}
	var refs []tableRef
	if err := collectTables(tree, &refs); err != nil {
		return "", 0, fmt.Errorf("duck: parse statement: %w", err)
	}
	ctes := cteNames(tree)
	var found []viewRef
	seen := make(map[uint64]bool)
	for _, r := range refs {
		if r.Catalog != "" || duckSchemas[r.Schema] || seen[r.QueryLocation] ||
			(r.Schema == "" && ctes[strings.ToLower(r.Table)]) {
			continue
		}
		q, ok := views.View(ctx, r.Schema, r.Table)
		if !ok {
			continue
		}
		seen[r.QueryLocation] = true
		if fixed, ok := e.repair(q); ok {
			q = fixed
		}
		found = append(found, viewRef{ref: r, query: q})
	}
	sort.Slice(found, func(i, j int) bool { return found[i].ref.QueryLocation > found[j].ref.QueryLocation })
	for _, v := range found {
		at := start + int(v.ref.QueryLocation)
		parts := 1
		if v.ref.Schema != "" {
			parts = 2
		}
		names, end, ok := qualifiedNameAt(sql, at, parts)
		if !ok || names[parts-1] != v.ref.Table {
			return "", 0, fmt.Errorf("duck: view %s: cannot locate it in the statement", v.ref.Table)
		}
		// The newline ends a -- comment the view's query may end with.
		sub := "(" + v.query + "\n)"
		if v.ref.Alias == "" {
			sub += " AS " + quoteIdent(v.ref.Table)
		}
		sql = sql[:at] + sub + sql[end:]
	}
	return sql, len(found), nil
}

// cteNames returns the lower-cased names of every CTE of the tree.
func cteNames(v any) map[string]bool {
	out := make(map[string]bool)
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if m, ok := v["cte_map"].(map[string]any); ok {
				entries, _ := m["map"].([]any)
				for _, en := range entries {
					if kv, ok := en.(map[string]any); ok {
						if k, ok := kv["key"].(string); ok {
							out[strings.ToLower(k)] = true
						}
					}
				}
			}
			for _, c := range v {
				walk(c)
			}
		case []any:
			for _, c := range v {
				walk(c)
			}
		}
	}
	walk(v)
	return out
}

// mentionsAny reports whether sql contains one of names, ignoring case.
func mentionsAny(sql string, names []string) bool {
	for _, n := range names {
		if n != "" && containsFold(sql, n) {
			return true
		}
	}
	return false
}
