package duck

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow/array"
)

// Row-wise queries: what a Flight endpoint split may run on a part of a
// table (docs/flight.md, "Split queries"). A query is row-wise when each
// of its result rows is made from one row of one table, and whether a row
// is in the result depends on that row alone:
//
//	SELECT <expressions> FROM [db.]table [AS alias] [WHERE <expression>]
//
// with expressions of column references, constants, parameters, operators,
// casts, CASE and scalar functions only: no aggregate (count, sum, ...),
// window function, subquery, DISTINCT, GROUP BY, HAVING, QUALIFY, ORDER
// BY, LIMIT, OFFSET, SAMPLE, CTE, join, set operation or table function.
// Run over parts of the table, such a query returns parts of its result,
// whose union is the result over the whole table: that is what lets each
// endpoint read one group of buckets or lake files.
//
// The check walks DuckDB's own parse tree (json_serialize_sql), so it
// reads the statement as the engine will. A function is scalar when
// DuckDB lists it only as a scalar function (duckdb_functions()): a name
// that is also an aggregate, a macro or anything else is refused, so an
// unknown case splits nothing rather than splitting wrongly.

// RowWiseScan reports whether sql is a row-wise query (above) and returns
// the schema ("" when unqualified) and name of its table.
func (e *Engine) RowWiseScan(ctx context.Context, sql string) (db, table string, ok bool, err error) {
	scalars, err := e.scalarFunctions(ctx)
	if err != nil {
		return "", "", false, err
	}
	// Close waits for the parse, which needs no connection of its own
	// (one costs about as much as the whole check).
	release, err := e.hold()
	if err != nil {
		return "", "", false, err
	}
	defer release()
	tree, err := e.serialize(sql)
	if err != nil || tree == nil {
		return "", "", false, err
	}
	stmts, _ := tree.(map[string]any)["statements"].([]any)
	st, _ := stmts[0].(map[string]any)
	node, _ := st["node"].(map[string]any)
	ref, ok := rowWiseNode(node, scalars)
	if !ok {
		return "", "", false, nil
	}
	return ref.Schema, ref.Table, true, nil
}

// rowWiseNode checks a SELECT_NODE and returns its one table reference.
func rowWiseNode(n map[string]any, scalars map[string]bool) (tableRef, bool) {
	if n == nil || n["type"] != "SELECT_NODE" {
		return tableRef{}, false
	}
	for _, k := range []string{"modifiers", "group_expressions", "group_sets"} {
		if l, _ := n[k].([]any); len(l) > 0 {
			return tableRef{}, false
		}
	}
	if cte, _ := n["cte_map"].(map[string]any); cte != nil {
		if l, _ := cte["map"].([]any); len(l) > 0 {
			return tableRef{}, false
		}
	}
	for _, k := range []string{"having", "sample", "qualify"} {
		if n[k] != nil {
			return tableRef{}, false
		}
	}
	if n["aggregate_handling"] != "STANDARD_HANDLING" {
		return tableRef{}, false
	}
	from, _ := n["from_table"].(map[string]any)
	if from == nil || from["type"] != "BASE_TABLE" || from["sample"] != nil || from["at_clause"] != nil {
		return tableRef{}, false
	}
	if l, _ := from["column_name_alias"].([]any); len(l) > 0 {
		return tableRef{}, false
	}
	ref, err := decodeRef(from)
	if err != nil || ref.Catalog != "" || duckSchemas[ref.Schema] {
		return tableRef{}, false
	}
	list, _ := n["select_list"].([]any)
	if len(list) == 0 || !rowWiseExpr(list, scalars) || !rowWiseExpr(n["where_clause"], scalars) {
		return tableRef{}, false
	}
	return ref, true
}

// rowWiseClasses are the expression classes a row-wise query may hold;
// FUNCTION is checked by name. SUBQUERY, WINDOW and anything not listed
// are refused.
var rowWiseClasses = map[string]bool{
	"COLUMN_REF": true, "CONSTANT": true, "PARAMETER": true, "STAR": true,
	"COMPARISON": true, "CONJUNCTION": true, "OPERATOR": true, "CAST": true,
	"CASE": true, "BETWEEN": true, "COLLATE": true, "LAMBDA": true, "FUNCTION": true,
}

// rowWiseExpr checks every expression below v.
func rowWiseExpr(v any, scalars map[string]bool) bool {
	switch v := v.(type) {
	case map[string]any:
		if class, ok := v["class"].(string); ok {
			if !rowWiseClasses[class] {
				return false
			}
			if class == "FUNCTION" && !scalarCall(v, scalars) {
				return false
			}
		}
		if t, _ := v["type"].(string); t == "SELECT_NODE" || t == "SUBQUERY" {
			return false
		}
		for _, c := range v {
			if !rowWiseExpr(c, scalars) {
				return false
			}
		}
	case []any:
		for _, c := range v {
			if !rowWiseExpr(c, scalars) {
				return false
			}
		}
	}
	return true
}

// scalarCall reports whether a FUNCTION node calls a scalar function,
// with none of an aggregate's clauses.
func scalarCall(f map[string]any, scalars map[string]bool) bool {
	name, _ := f["function_name"].(string)
	if f["filter"] != nil || f["distinct"] == true || f["export_state"] == true {
		return false
	}
	if ob, _ := f["order_bys"].(map[string]any); ob != nil {
		if l, _ := ob["orders"].([]any); len(l) > 0 {
			return false
		}
	}
	if s, _ := f["schema"].(string); s != "" {
		return false
	}
	return scalars[strings.ToLower(name)]
}

// scalarFunctions returns, once per engine, the names DuckDB lists only
// as scalar functions.
func (e *Engine) scalarFunctions(ctx context.Context) (map[string]bool, error) {
	e.scalars.once.Do(func() { e.scalars.names, e.scalars.err = e.loadScalars(ctx) })
	return e.scalars.names, e.scalars.err
}

const scalarNamesSQL = `SELECT DISTINCT lower(function_name) FROM duckdb_functions() WHERE function_type = 'scalar'
EXCEPT SELECT lower(function_name) FROM duckdb_functions() WHERE function_type <> 'scalar'`

func (e *Engine) loadScalars(ctx context.Context) (map[string]bool, error) {
	rs, _, err := e.Query(context.WithoutCancel(ctx), scalarNamesSQL)
	if err != nil {
		return nil, fmt.Errorf("duck: list scalar functions: %w", err)
	}
	defer rs.Close()
	names := map[string]bool{}
	for {
		rec, err := rs.Next()
		if errors.Is(err, io.EOF) {
			return names, nil
		}
		if err != nil {
			return nil, fmt.Errorf("duck: list scalar functions: %w", err)
		}
		col, ok := rec.Column(0).(*array.String)
		if !ok {
			rec.Release()
			return nil, fmt.Errorf("duck: list scalar functions: column of type %s", rec.Column(0).DataType())
		}
		for i := range col.Len() {
			names[strings.Clone(col.Value(i))] = true // the value points into rec
		}
		rec.Release()
	}
}

// scalarNames is the engine's cache of scalarFunctions.
type scalarNames struct {
	once  sync.Once
	names map[string]bool
	err   error
}

// hold makes Close wait until release is called, for work on the
// database that opens no connection of its own; ErrClosed after Close.
func (e *Engine) hold() (release func(), err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.mu.closed {
		return nil, ErrClosed
	}
	e.conns.Add(1)
	return e.conns.Done, nil
}
