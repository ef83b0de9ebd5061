package catalog

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// pgSchema is the PostgreSQL schema that holds the catalog's tables. Every
// connection of the catalog has it as its search_path, so the statements
// name the tables as on SQLite. The schema keeps the catalog apart from
// the other users of a shared database: the cluster's metadata store
// (tables lakestream_… in the default schema) and an Iceberg SQL catalog.
const pgSchema = "lakestream_catalog"

// pgMigrateLockKey is the advisory lock that keeps two nodes starting at
// once from migrating the catalog together ("lkca" in ASCII; the
// metadata store's is "lkst").
const pgMigrateLockKey = 0x6c6b6361

// pgMaxConns bounds the pool: every statement of the catalog runs under
// writeMu (reads are served from the snapshot), so one connection does
// the work; a second one lets a write begin while a broken connection
// is being replaced.
const pgMaxConns = 2

// IsPostgresURL reports whether where names a PostgreSQL database
// (postgres:// or postgresql://) rather than a SQLite file.
func IsPostgresURL(where string) bool {
	return strings.HasPrefix(where, "postgres://") || strings.HasPrefix(where, "postgresql://")
}

// OpenPostgres opens the catalog in the PostgreSQL database at url
// (postgres://user:password@host:port/dbname?sslmode=…, pgx's syntax),
// creating its schema and tables if needed (see migrations), and loads
// every table. Several processes may open one catalog: each write locks
// the change counter and first reloads what the others changed, and
// Refresh and Watch bring a handle's snapshot up to date between writes.
// The URL's user needs CREATE on the database (for the schema, at every
// open, as the metadata store needs it for its tables). cfg.BusyTimeout
// does not apply.
func OpenPostgres(ctx context.Context, url string, cfg Config) (*Catalog, error) {
	cfg.EnsureDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	pc, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("open catalog: %w", err)
	}
	where := fmt.Sprintf("postgres %s@%s/%s", pc.User, pc.Host, pc.Database) // no password in errors
	pc.RuntimeParams["search_path"] = pgSchema
	// A node that stops inside a write transaction would hold the change
	// counter's lock that every other node's DDL waits for: the server
	// ends such a session after 2 s, and the node's transaction fails.
	pc.RuntimeParams["idle_in_transaction_session_timeout"] = "2000"
	db := stdlib.OpenDB(*pc)
	db.SetMaxOpenConns(pgMaxConns)
	db.SetMaxIdleConns(pgMaxConns)
	c := &Catalog{cfg: cfg, db: db, d: postgresDialect}
	if err := c.start(ctx); err != nil {
		return nil, errors.Join(fmt.Errorf("open catalog %s: %w", where, err), db.Close())
	}
	return c, nil
}

// pgPrepareSchema, first in the migration transaction, waits for any
// other node's migration and creates the catalog's schema.
func pgPrepareSchema(ctx context.Context, tx *sql.Tx) error {
	if _, err := tx.ExecContext(ctx, fmt.Sprintf(`SELECT pg_advisory_xact_lock(%d)`, pgMigrateLockKey)); err != nil {
		return fmt.Errorf("lock for migration: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `CREATE SCHEMA IF NOT EXISTS `+pgSchema); err != nil {
		return fmt.Errorf("create schema %s: %w", pgSchema, err)
	}
	return nil
}
