// Package planner classifies SQL statements and plans them: DDL goes to the
// catalog, plain scans (SELECT * or a column list from one table, nothing
// else) take the zero-copy path that forwards stored batches, and every other
// query runs in embedded DuckDB (planner/duck) over the scan interface.
//
// DELETE and UPDATE of primary-key tables become queries over the table's
// state whose rows the table applies (dml.go); queries by the whole key are
// recognised as lookups (lookup.go); "t$binlog" pairs a changelog's
// before and after images in one row (binlog.go).
//
// It also owns the changes() filter: the parser of its WHERE
// (changes_filter.go) and its binding to the changelog schema and
// evaluation over the followed batches (filter.go), which flightsrv calls;
// the SQL literal rules that filter and planner/duck's filter pushdown
// share (literal.go); and the SQL lexer of every parser here and of
// planner/duck's look at statement text (lexer.go).
//
// planner reads table data only through internal/scan; it does not import
// columnarlog, tables or flightsrv.
package planner
