package duck

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lakestream/lakestream/internal/scan"
	"github.com/lakestream/lakestream/planner"
)

// Filter pushdown: simple conjuncts of a statement's WHERE clauses, taken
// from DuckDB's own parse tree (json_serialize_sql, as names.go does), are
// handed to the scans of the tables they apply to as scan.Request.Filters,
// which the log uses to skip batches by their statistics. DuckDB still
// evaluates the whole WHERE: a filter may only let a scan skip rows that the
// WHERE would drop anyway. Hence the rules:
//
//   - Only top-level AND conjuncts of a SELECT's WHERE: column op constant
//     (either way round; =, <, <=, >, >=), column IS [NOT] NULL, and column
//     BETWEEN constant AND constant (two conjuncts). Anything else — OR,
//     NOT, functions, casts of the column, parameters, subqueries — is
//     left to DuckDB.
//   - A conjunct applies to a table reference of that SELECT's FROM clause
//     (not of a subquery) that is not on the nullable side of an outer join
//     (LEFT, RIGHT, FULL), nor the right side of a semi, anti or ASOF join,
//     nor either side of a positional join, nor sampled (TABLESAMPLE or
//     USING SAMPLE: the sample is drawn before WHERE), nor time-travelled.
//   - Columns: `col`, and `alias.col` or `table.col`, resolved against the
//     table's schema when DuckDB binds the table, case insensitively as
//     DuckDB does; a name that is not a column of the table is not ours (an
//     outer query's column, a SELECT alias). Three-part names cannot refer
//     to a Lakestream table (a qualified reference becomes a table function
//     call aliased by the table name, names.go).
//   - Constants are converted to the column's type as DuckDB would compare
//     them (filtervalues.go), or dropped when that is not certain.
//
// The table function's bind gets only (db, name), not which reference of
// the statement it binds, so the filters a scan gets are those common to
// every reference that may bind under that name (a self-join with different
// WHEREs on each side pushes only what both share). A name can also reach
// bind from places the tree does not show as a table reference (a table
// function such as query_table('t')), so a statement with any table
// function but a few known harmless ones pushes nothing.

// pushdown is what the parse tree of a statement says about filters.
type pushdown struct {
	refs []refFilters
}

// refFilters are the conjuncts that apply to one table reference.
type refFilters struct {
	schema, table, alias string
	conds                []cond // nil when nothing may be pushed into this reference
}

// cond is one conjunct: column op value.
type cond struct {
	column []string      // the COLUMN_REF's names, qualifiers first
	op     string        // as in scan.Filter
	val    planner.Const // unset for IS [NOT] NULL
}

// harmlessTableFunctions cannot bind a table by name.
var harmlessTableFunctions = map[string]bool{"range": true, "generate_series": true, "unnest": true}

// extractPushdown collects the filters of every table reference in tree;
// nil when the statement must push nothing.
func extractPushdown(tree any) *pushdown {
	var w treeWalker
	w.walk(tree)
	if w.unsafe {
		return nil
	}
	return &pushdown{refs: w.refs}
}

type treeWalker struct {
	refs   []refFilters
	unsafe bool
}

// walk visits every node; table references found here, outside a FROM
// clause walked by from, get no filters.
func (w *treeWalker) walk(v any) {
	switch v := v.(type) {
	case map[string]any:
		switch v["type"] {
		case "SELECT_NODE":
			w.selectNode(v)
			return
		case "BASE_TABLE":
			w.addRef(v, nil)
			return
		case "TABLE_FUNCTION":
			fn, _ := v["function"].(map[string]any)
			name, _ := fn["function_name"].(string)
			if !harmlessTableFunctions[strings.ToLower(name)] {
				w.unsafe = true
			}
		}
		for _, c := range v {
			w.walk(c)
		}
	case []any:
		for _, c := range v {
			w.walk(c)
		}
	}
}

func (w *treeWalker) selectNode(n map[string]any) {
	var conds []cond
	if n["sample"] == nil {
		conds = conjuncts(n["where_clause"], nil)
	}
	w.from(n["from_table"], conds)
	for k, c := range n {
		if k != "from_table" {
			w.walk(c)
		}
	}
}

// from walks a FROM clause's join tree: the table references it reaches
// through joins get conds, unless a join makes them nullable.
func (w *treeWalker) from(v any, conds []cond) {
	m, ok := v.(map[string]any)
	if !ok {
		w.walk(v)
		return
	}
	switch m["type"] {
	case "BASE_TABLE":
		if m["sample"] != nil || m["at_clause"] != nil {
			conds = nil
		}
		w.addRef(m, conds)
	case "JOIN":
		left, right := joinSides(m, conds)
		w.from(m["left"], left)
		w.from(m["right"], right)
		w.walk(m["condition"])
	default:
		w.walk(m)
	}
}

// joinSides returns the conjuncts each side of a join may take: those of a
// side whose rows reach the WHERE unchanged, or with NULLs (inner, and
// the preserved side of an outer join).
func joinSides(join map[string]any, conds []cond) (left, right []cond) {
	jt, _ := join["join_type"].(string)
	switch ref, _ := join["ref_type"].(string); ref {
	case "REGULAR", "CROSS", "NATURAL":
		switch jt {
		case "INNER":
			return conds, conds
		case "LEFT", "SEMI", "ANTI":
			return conds, nil
		case "RIGHT":
			return nil, conds
		}
	case "ASOF":
		// The right side's rows are matched by nearness: removing some
		// changes which one a left row meets.
		if jt == "INNER" || jt == "LEFT" {
			return conds, nil
		}
	}
	return nil, nil
}

func (w *treeWalker) addRef(m map[string]any, conds []cond) {
	r := refFilters{conds: conds}
	r.schema, _ = m["schema_name"].(string)
	r.table, _ = m["table_name"].(string)
	r.alias, _ = m["alias"].(string)
	if cat, _ := m["catalog_name"].(string); cat != "" {
		r.conds = nil
	}
	w.refs = append(w.refs, r)
}

// compareOps maps DuckDB's comparison types to scan.Filter operators, and
// to the operator with the operands swapped.
var compareOps = map[string][2]string{
	"COMPARE_EQUAL":                {"=", "="},
	"COMPARE_LESSTHAN":             {"<", ">"},
	"COMPARE_LESSTHANOREQUALTO":    {"<=", ">="},
	"COMPARE_GREATERTHAN":          {">", "<"},
	"COMPARE_GREATERTHANOREQUALTO": {">=", "<="},
}

// conjuncts appends the simple conjuncts of a WHERE expression to out.
func conjuncts(e any, out []cond) []cond {
	m, ok := e.(map[string]any)
	if !ok {
		return out
	}
	t, _ := m["type"].(string)
	switch t {
	case "CONJUNCTION_AND":
		children, _ := m["children"].([]any)
		for _, c := range children {
			out = conjuncts(c, out)
		}
	case "OPERATOR_IS_NULL", "OPERATOR_IS_NOT_NULL":
		children, _ := m["children"].([]any)
		if len(children) != 1 {
			return out
		}
		if col, ok := columnRef(children[0]); ok {
			op := "IS NULL"
			if t == "OPERATOR_IS_NOT_NULL" {
				op = "IS NOT NULL"
			}
			out = append(out, cond{column: col, op: op})
		}
	case "COMPARE_BETWEEN":
		col, ok := columnRef(m["input"])
		if !ok {
			return out
		}
		if v, ok := parseConstant(m["lower"]); ok {
			out = append(out, cond{column: col, op: ">=", val: v})
		}
		if v, ok := parseConstant(m["upper"]); ok {
			out = append(out, cond{column: col, op: "<=", val: v})
		}
	default:
		ops, ok := compareOps[t]
		if !ok {
			return out
		}
		if col, ok := columnRef(m["left"]); ok {
			if v, ok := parseConstant(m["right"]); ok {
				out = append(out, cond{column: col, op: ops[0], val: v})
			}
		} else if col, ok := columnRef(m["right"]); ok {
			if v, ok := parseConstant(m["left"]); ok {
				out = append(out, cond{column: col, op: ops[1], val: v})
			}
		}
	}
	return out
}

func columnRef(e any) ([]string, bool) {
	m, ok := e.(map[string]any)
	if !ok || m["type"] != "COLUMN_REF" {
		return nil, false
	}
	names, _ := m["column_names"].([]any)
	out := make([]string, len(names))
	for i, n := range names {
		if out[i], ok = n.(string); !ok {
			return nil, false
		}
	}
	return out, len(out) > 0
}

// filters returns the scan filters for a table bound as (db, name) with
// schema: those of the conjuncts that apply to every reference of the
// statement that may bind under that name (see the top of this file).
// Unqualified references bind with db "", so for them every reference
// with that table name counts, whatever its schema.
func (p *pushdown) filters(db, name string, schema *arrow.Schema) []scan.Filter {
	if p == nil {
		return nil
	}
	var common []scan.Filter
	first := true
	for _, r := range p.refs {
		if !strings.EqualFold(r.table, name) || (db != "" && !strings.EqualFold(r.schema, db)) {
			continue
		}
		fs := r.resolve(schema)
		if first {
			common, first = dedupe(fs), false
			continue
		}
		common = intersect(common, fs)
		if len(common) == 0 {
			return nil
		}
	}
	return common
}

// resolve turns the reference's conjuncts into filters on schema's
// columns, leaving out those on other tables' columns and those whose
// constant cannot be compared exactly.
func (r *refFilters) resolve(schema *arrow.Schema) []scan.Filter {
	var out []scan.Filter
	for _, c := range r.conds {
		col, ok := r.column(c.column, schema)
		if !ok {
			continue
		}
		out = append(out, filtersFor(col, schema.Field(col).Type, c.op, c.val)...)
	}
	return out
}

// column resolves a column reference to an index of schema, if it names a
// column of this table reference.
func (r *refFilters) column(names []string, schema *arrow.Schema) (int, bool) {
	var name string
	switch len(names) {
	case 1:
		name = names[0]
	case 2:
		q := r.table
		if r.alias != "" {
			q = r.alias
		}
		if !strings.EqualFold(names[0], q) {
			return 0, false
		}
		name = names[1]
	default:
		return 0, false
	}
	found := -1
	for i, f := range schema.Fields() {
		switch {
		case f.Name == name:
			return i, true
		case strings.EqualFold(f.Name, name):
			if found >= 0 {
				return 0, false // ambiguous without case
			}
			found = i
		}
	}
	return found, found >= 0
}

func filterKey(f scan.Filter) string {
	return fmt.Sprintf("%d %s %T %v", f.Column, f.Op, f.Value, f.Value)
}

func dedupe(fs []scan.Filter) []scan.Filter {
	seen := make(map[string]bool, len(fs))
	out := fs[:0:0]
	for _, f := range fs {
		if k := filterKey(f); !seen[k] {
			seen[k] = true
			out = append(out, f)
		}
	}
	return out
}

func intersect(a, b []scan.Filter) []scan.Filter {
	in := make(map[string]bool, len(b))
	for _, f := range b {
		in[filterKey(f)] = true
	}
	var out []scan.Filter
	for _, f := range a {
		if in[filterKey(f)] {
			out = append(out, f)
		}
	}
	return out
}
