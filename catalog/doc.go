// Package catalog owns Lakestream's metadata: databases, table definitions,
// their schema versions and table options, and the parser for Lakestream's DDL
// (CREATE/DROP DATABASE, CREATE/DROP TABLE, ALTER TABLE ... ADD COLUMN,
// CREATE TABLE ... AS, CREATE/DROP VIEW).
//
// The pieces, each in its own file:
//
//   - lexer.go, parser*.go: a hand-written tokenizer and recursive-descent
//     parser turning DDL text into Statement values (*CreateDatabase,
//     *DropDatabase, *CreateTable, *DropTable, *AddColumn). Errors are
//     *SyntaxError with a byte position.
//   - types*.go: the SQL type system and its one-to-one mapping to Arrow.
//   - options*.go: the WITH (...) table options, typed, with defaults.
//   - definition.go: turns a parsed CREATE TABLE into a validated *Table,
//     reporting every problem at once.
//   - limits.go: the limits on definitions (type depth, columns, fields,
//     names), which the parser, the definition checks and ColumnsFromArrow
//     keep before anything is stored or converted.
//   - table.go: Table, Column, Schema; a *Table is an immutable snapshot.
//     Every change (ADD COLUMN) creates a new one with a new schema version,
//     and every version is kept so that batches written under an old schema
//     stay readable (SchemaAt, ArrowSchemaAt).
//   - views.go: persistent views, a name for a query that the query
//     engine expands; a view and a table never share a name.
//   - users.go, grants*.go: users, roles, role memberships, privileges
//     and owners, stored, with the parsing of their statements (CREATE
//     USER, CREATE ROLE, GRANT, REVOKE). The catalog answers what a user
//     holds (Grants.Held) from an immutable copy; who may do what is
//     package auth's.
//   - store*.go, migrate.go, snapshot.go, exec.go: the durable Catalog, a
//     SQLite database (modernc.org/sqlite, pure Go) inside the data dir,
//     with versioned schema migrations; reads are served from an in-memory
//     copy-on-write snapshot. Exec applies a parsed Statement. A table
//     whose stored definition does not load is kept apart (broken.go) so
//     that one bad definition neither stops the catalog from opening nor
//     loses its name and ID.
//   - postgres.go, dialect.go, write.go: the same Catalog on PostgreSQL
//     (OpenPostgres), shared by the nodes of a cluster. The statements
//     are shared; the dialect differs in placeholders, in how an insert
//     learns its id, and in the migrations' text (each version has both).
//     Every change runs through Catalog.write: on PostgreSQL it locks a
//     one-row change counter, reloads the snapshot when another process
//     moved it, checks and writes against that fresh state and raises the
//     counter; Refresh and Watch take in other processes' changes between
//     writes (docs/cluster.md, "Where table definitions live").
//
// SQLite does its own file I/O, so the catalog does not go through the vfs
// seam that the log uses; crash safety comes from SQLite's WAL with
// synchronous=FULL (PostgreSQL's from its own WAL).
//
// Lock order: Catalog.writeMu, then the database's locks (SQLite's file
// lock, PostgreSQL's counter row). Config.OnChange is called with neither
// held.
//
// catalog imports only the standard library, arrow-go, the SQLite driver
// and pgx; it must not import other Lakestream packages
// (docs/architecture.md: it sits under tables, planner, tiering and
// flightsrv, next to columnarlog).
package catalog
