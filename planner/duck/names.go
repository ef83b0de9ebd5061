package duck

/*
#include "cabi.h"
*/
import "C"

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unsafe"

	bindings "github.com/duckdb/duckdb-go-bindings"
)

// Name resolution: how `events`, `"Events"` and `mydb.events` become
// lakestream_scan('db', 'table').
//
// Unqualified names go through a replacement scan, which DuckDB calls for
// every table reference it cannot find in its own catalog (so CTEs and
// DuckDB's own views keep priority, with DuckDB's scoping). It maps the
// name to lakestream_scan('', name), whose bind resolves it through the
// scan.Resolver: a table is resolved each time a statement is bound, never
// cached, so new tables are visible at once.
//
// Qualified names cannot go that way: DuckDB 1.5's C API hands the
// replacement scan the bare table name ("events" for mydb.events, measured),
// so a.events and b.events would be indistinguishable, and mydb.events would
// silently read default.events. Instead, before preparing, the statement is
// parsed by DuckDB itself (json_serialize_sql): every BASE_TABLE reference
// with a schema, at the byte offset DuckDB reports, is rewritten in the SQL
// text to lakestream_scan('schema', 'table') AS "table" (the alias keeps
// `events.col` working). Rejected alternative: DuckDB schemas with one view
// per Lakestream table, kept in sync by a Refresh call: stale between
// refreshes and needs a listing the scan.Resolver does not have.
//
// References DuckDB owns are left alone: schemas main, information_schema
// and pg_catalog, and three-part names. If such a reference is unknown to
// DuckDB it would still reach the replacement scan as a bare name; bind
// refuses a bare name the statement does not contain unqualified (see
// bindTable), so `main.events` is "not found" rather than default.events.

// duckSchemas are schema names DuckDB resolves itself.
var duckSchemas = map[string]bool{"main": true, "information_schema": true, "pg_catalog": true}

//export lsReplacementScan
func lsReplacementScan(info, tableName, _ unsafe.Pointer) {
	ri := bindings.ReplacementScanInfo{Ptr: info}
	bindings.ReplacementScanSetFunctionName(ri, scanFunctionName)
	for _, s := range []string{"", C.GoString((*C.char)(tableName))} {
		v := bindings.CreateVarchar(s)
		bindings.ReplacementScanAddParameter(ri, v)
		bindings.DestroyValue(&v)
	}
}

// tableRef is a BASE_TABLE node of DuckDB's parse tree.
type tableRef struct {
	Alias         string
	QueryLocation uint64 // byte offset of the name
	Catalog       string
	Schema        string
	Table         string
}

// nameCheck says how bind treats a bare name from the replacement scan.
type nameCheck int

const (
	// namesUnchecked: the statement has no '.', so no name in it is
	// qualified and every bare name is genuine.
	namesUnchecked nameCheck = iota
	// namesParsed: only names in analysis.bare are genuine.
	namesParsed
	// namesUnparsed: DuckDB could not serialise the statement (it is not a
	// SELECT, or is one of the few SELECT forms the serialiser lacks), so
	// bare names cannot be told from qualified ones: bind refuses all.
	namesUnparsed
)

// analysis is what the parse tree says about a statement's table names.
type analysis struct {
	// sql is the text to prepare, with qualified Lakestream names rewritten.
	sql   string
	check nameCheck
	// bare holds the unqualified table names of the statement.
	bare map[string]bool
	// kept holds the table part of the qualified names left to DuckDB
	// (main.t, a.b.t): if one of them reaches the replacement scan, it is
	// not a Lakestream name, unless the statement also has it bare.
	kept map[string]bool
	// pushdown holds the WHERE conjuncts of each table reference
	// (filters.go); nil when there is nothing to push.
	pushdown *pushdown
}

// analyze parses sql (or the statement after an EXPLAIN prefix) with DuckDB,
// rewrites qualified Lakestream table names and extracts the filters to
// push down.
func (e *Engine) analyze(sql string) (analysis, error) {
	start, explain := explainPrefix(sql)
	body := sql[start:]
	filters := !e.opts.NoFilterPushdown && containsFold(body, "where")
	if !explain && !strings.Contains(body, ".") {
		// No qualified name possible: the names need no parse. EXPLAIN is
		// always parsed: only an EXPLAIN of a SELECT may run (query.go).
		a := analysis{sql: sql, check: namesUnchecked}
		if filters {
			// Parsed for the filters alone: a statement the serialiser
			// refuses just pushes nothing, as before.
			if tree, err := e.serialize(body); err == nil && tree != nil {
				a.pushdown = extractPushdown(tree)
			}
		}
		return a, nil
	}
	tree, err := e.serialize(body)
	if err != nil {
		return analysis{}, err
	}
	if tree == nil {
		return analysis{sql: sql, check: namesUnparsed}, nil
	}
	var refs []tableRef
	if err := collectTables(tree, &refs); err != nil {
		return analysis{}, fmt.Errorf("duck: parse statement: %w", err)
	}
	a := analysis{sql: sql, check: namesParsed, bare: make(map[string]bool), kept: make(map[string]bool)}
	if filters {
		a.pushdown = extractPushdown(tree)
	}
	var rewrite []tableRef
	seen := make(map[uint64]bool)
	for _, r := range refs {
		switch {
		case r.Schema == "" && r.Catalog == "":
			a.bare[r.Table] = true
		case r.Catalog == "" && !duckSchemas[r.Schema]:
			if !seen[r.QueryLocation] {
				seen[r.QueryLocation] = true // a node the parser copied
				rewrite = append(rewrite, r)
			}
		default:
			a.kept[r.Table] = true
		}
	}
	cols := qualifiedColumns(tree, refs, rewrite)
	if a.sql, err = rewriteAll(sql, start, rewrite, cols); err != nil {
		return analysis{}, err
	}
	return a, nil
}

// serialize returns DuckDB's parse tree of one SELECT statement, or nil
// when DuckDB cannot serialise it (json_serialize_sql accepts only SELECT).
func (e *Engine) serialize(sql string) (any, error) {
	out, err := e.parseJSON(sql)
	if err != nil {
		return nil, fmt.Errorf("duck: parse statement: %w", err)
	}
	dec := json.NewDecoder(strings.NewReader(out))
	dec.UseNumber()
	var tree map[string]any
	if err := dec.Decode(&tree); err != nil {
		return nil, fmt.Errorf("duck: parse statement: %w", err)
	}
	if failed, _ := tree["error"].(bool); failed {
		return nil, nil
	}
	if stmts, _ := tree["statements"].([]any); len(stmts) != 1 {
		return nil, nil
	}
	return tree, nil
}

// collectTables appends every BASE_TABLE node below v, wherever it sits
// (FROM, JOIN, subqueries in any expression, CTEs, set operations).
func collectTables(v any, out *[]tableRef) error {
	switch v := v.(type) {
	case map[string]any:
		if v["type"] == "BASE_TABLE" {
			r, err := decodeRef(v)
			if err != nil {
				return err
			}
			*out = append(*out, r)
		}
		for _, c := range v {
			if err := collectTables(c, out); err != nil {
				return err
			}
		}
	case []any:
		for _, c := range v {
			if err := collectTables(c, out); err != nil {
				return err
			}
		}
	}
	return nil
}

func decodeRef(v map[string]any) (tableRef, error) {
	var r tableRef
	var ok [4]bool
	r.Alias, ok[0] = v["alias"].(string)
	r.Catalog, ok[1] = v["catalog_name"].(string)
	r.Schema, ok[2] = v["schema_name"].(string)
	r.Table, ok[3] = v["table_name"].(string)
	if ok != [4]bool{true, true, true, true} {
		return tableRef{}, fmt.Errorf("unexpected BASE_TABLE node %v", v)
	}
	loc, _ := v["query_location"].(json.Number)
	n, err := strconv.ParseUint(string(loc), 10, 64)
	if err != nil {
		return tableRef{}, fmt.Errorf("BASE_TABLE query_location %q: %w", loc, err)
	}
	r.QueryLocation = n
	return r, nil
}

// rewriteRefs replaces each reference's name, which DuckDB located at byte
// offset QueryLocation of sql[base:], by a lakestream_scan call.
func rewriteRefs(sql string, base int, refs []tableRef) (string, error) {
	sort.Slice(refs, func(i, j int) bool { return refs[i].QueryLocation > refs[j].QueryLocation })
	for _, r := range refs {
		at := base + int(r.QueryLocation)
		if r.QueryLocation >= uint64(len(sql)) || at >= len(sql) {
			return "", fmt.Errorf("duck: table %s.%s: no position in statement", r.Schema, r.Table)
		}
		parts, end, ok := qualifiedNameAt(sql, at, 2)
		if !ok || parts[0] != r.Schema || parts[1] != r.Table {
			return "", fmt.Errorf("duck: table %s.%s: cannot locate it in the statement", r.Schema, r.Table)
		}
		call := fmt.Sprintf("%s(%s, %s)", scanFunctionName, quoteString(r.Schema), quoteString(r.Table))
		if r.Alias == "" {
			call += " AS " + quoteIdent(r.Table)
		}
		sql = sql[:at] + call + sql[end:]
	}
	return sql, nil
}

// colRef is a COLUMN_REF node whose first two names are a rewritten
// db.table reference: analytics.profiles.id.
type colRef struct {
	loc           uint64
	schema, table string
}

// qualifiedColumns finds the column references that start with the
// db.table of a rewritten, unaliased table reference. Once the reference is
// lakestream_scan(...) AS "table", DuckDB can bind them only as
// "table".column. A first name that is also a table or alias of the
// statement is left alone (it may be alias.struct_column.field).
func qualifiedColumns(tree any, refs, rewritten []tableRef) []colRef {
	names := make(map[string]bool)
	for _, r := range refs {
		names[strings.ToLower(r.Table)] = true
		if r.Alias != "" {
			names[strings.ToLower(r.Alias)] = true
		}
	}
	targets := make(map[[2]string]bool)
	for _, r := range rewritten {
		if r.Alias == "" {
			targets[[2]string{r.Schema, r.Table}] = true
		}
	}
	var out []colRef
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if v["class"] == "COLUMN_REF" {
				if c, ok := columnRefOf(v); ok && targets[[2]string{c.schema, c.table}] && !names[strings.ToLower(c.schema)] {
					out = append(out, c)
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
	walk(tree)
	return out
}

func columnRefOf(v map[string]any) (colRef, bool) {
	parts, _ := v["column_names"].([]any)
	if len(parts) < 3 {
		return colRef{}, false
	}
	schema, ok1 := parts[0].(string)
	table, ok2 := parts[1].(string)
	loc, _ := v["query_location"].(json.Number)
	n, err := strconv.ParseUint(string(loc), 10, 64)
	if !ok1 || !ok2 || err != nil {
		return colRef{}, false
	}
	return colRef{loc: n, schema: schema, table: table}, true
}

// rewriteAll rewrites table references (rewriteRefs) and the db.table
// prefix of qualified column references, from the end of the text so that
// earlier positions stay valid.
func rewriteAll(sql string, base int, refs []tableRef, cols []colRef) (string, error) {
	type edit struct {
		at  int
		ref *tableRef
		col *colRef
	}
	var edits []edit
	for i := range refs {
		edits = append(edits, edit{at: base + int(refs[i].QueryLocation), ref: &refs[i]})
	}
	seen := make(map[uint64]bool)
	for i := range cols {
		if !seen[cols[i].loc] {
			seen[cols[i].loc] = true
			edits = append(edits, edit{at: base + int(cols[i].loc), col: &cols[i]})
		}
	}
	sort.Slice(edits, func(i, j int) bool { return edits[i].at > edits[j].at })
	for _, e := range edits {
		if e.ref != nil {
			out, err := rewriteRefs(sql, base, []tableRef{*e.ref})
			if err != nil {
				return "", err
			}
			sql = out
			continue
		}
		parts, end, ok := qualifiedNameAt(sql, e.at, 2)
		if !ok || parts[0] != e.col.schema || parts[1] != e.col.table {
			return "", fmt.Errorf("duck: column %s.%s...: cannot locate it in the statement", e.col.schema, e.col.table)
		}
		sql = sql[:e.at] + quoteIdent(e.col.table) + sql[end:]
	}
	return sql, nil
}

// containsFold reports whether s contains the ASCII word w, in any case.
func containsFold(s, w string) bool {
	for i := 0; i+len(w) <= len(s); i++ {
		if strings.EqualFold(s[i:i+len(w)], w) {
			return true
		}
	}
	return false
}

func quoteString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
func quoteIdent(s string) string  { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// stringAt reads row i of a VARCHAR vector: DuckDB's string_t is 16 bytes,
// a uint32 length, then either the inlined bytes (length ≤ 12) or a 4-byte
// prefix and a pointer.
func stringAt(vec bindings.Vector, i int) string {
	p := unsafe.Add(bindings.VectorGetData(vec), 16*i)
	n := *(*uint32)(p)
	if n <= 12 {
		return string(unsafe.Slice((*byte)(unsafe.Add(p, 4)), n))
	}
	data := *(*unsafe.Pointer)(unsafe.Add(p, 8))
	return string(unsafe.Slice((*byte)(data), n))
}
