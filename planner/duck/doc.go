// Package duck is Lakestream's embedded query engine: an in-memory DuckDB
// (github.com/duckdb/duckdb-go-bindings, the C API) in which every
// Lakestream table is a table function over scan.Table (docs/architecture.md).
//
//	Engine.Query(sql, args)  ─►  one DuckDB connection per statement
//	   │ repair.go    what DuckDB 2.0 parses and 1.5 does not (SELECT 1 share,
//	   │              default.t), repaired where the parser stops
//	   │ views.go     persistent views expanded as subqueries (Views)
//	   │ names.go     qualified names rewritten to lakestream_scan('db','t'),
//	   │              bare names resolved by a replacement scan
//	   │ filters.go   simple WHERE conjuncts of each table reference, from the
//	   │              same parse tree, as scan filters (filtervalues.go)
//	   │ query.go     exactly one SELECT (or EXPLAIN of one), else ErrNotQuery
//	   │ params*.go   parameters bound with their types (Arrow scalars as
//	   │              the DuckDB value of their Arrow type), ParamError;
//	   │              describe.go: the result schema with values bound
//	   │ tablefunc.go bind: Resolver.Table and its filters; init: Table.Plan
//	   │              (projection, filters) and part readers (scanner.go);
//	   │              function: records → vectors (vectors.go)
//	   ▼ result.go    streaming result, chunk by chunk, exported to Arrow by
//	                  DuckDB's own converter and imported zero-copy (cdata)
//
// The engine is locked down at start-up: no file or network access, no
// extension install or load, configuration locked (engine.go). Each
// statement has a deadline (Options.QueryTimeout) and, with
// Options.QueryMemoryLimit, a memory watchdog stops the one holding too
// much of the engine's memory (memlimit.go). DuckDB's own
// catalog is not writable through Query.
//
// duck owns nothing but the DuckDB instance: it reads data only through
// internal/scan and must not import the log, the lake, the catalog or the
// network packages. It does not use duckdb-go's database/sql driver: that
// driver yields rows as Go values, and its Arrow interface needs the
// duckdb_arrow build tag, which the lakestream binary is not built with.
package duck
