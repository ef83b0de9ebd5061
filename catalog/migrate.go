package catalog

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// migrations are the catalog's schema, one entry per version; entry i
// takes the schema from version i to i+1. Append only: an applied migration
// is never edited. Applied versions are recorded in schema_migrations.
//
// Each version is written twice, for SQLite and for PostgreSQL, side by
// side. A new version appends one entry with both texts:
//
//	{
//		sqlite:   []string{`CREATE TABLE grants (id INTEGER PRIMARY KEY AUTOINCREMENT, …, created_at INTEGER NOT NULL)`},
//		postgres: []string{`CREATE TABLE grants (id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, …, created_at BIGINT NOT NULL)`},
//	},
//
// (TestMigrationsHaveBothTexts fails when one is missing; the store tests
// run on both databases.) The texts create the same tables and columns; they
// differ where the databases do: PostgreSQL's ids are identity columns
// (BIGINT GENERATED ALWAYS AS IDENTITY, never reused, like SQLite's
// AUTOINCREMENT), every 64-bit value (the times, ids, generations) is
// BIGINT where SQLite's INTEGER holds 64 bits anyway, and flags are
// BOOLEAN. PostgreSQL's tables sit in the schema pgSchema (postgres.go), so
// the names are the same in both.
//
//	databases      name, created_at
//	tables         id (AUTOINCREMENT: never reused), db, name, current
//	               schema_id, primary_key / partition_spec (JSON arrays),
//	               options (resolved, JSON), raw_options (as written, JSON)
//	table_schemas  (table_id, schema_id) -> columns (JSON), one row per
//	               version, deleted with the table
//	changes        PostgreSQL only (version 1): the one row (id 1) of the
//	               change counter n, raised by every write (write.go)
//	tables.lake_created_at (version 2): when the table's lake (Iceberg)
//	               table was created, 0 if not recorded; a lake table that
//	               was created and is gone is lost, not new
//	views (version 3) id (AUTOINCREMENT), db, name, query (the defining
//	               query as written), created_at, updated_at; a view's
//	               name is no table's name in its database
//	users (version 4) id (AUTOINCREMENT: never reused), name (unique),
//	               password_hash (package auth's encoding), superuser,
//	               generation (advanced by each password change),
//	               created_at, updated_at
//	roles (version 5) id (AUTOINCREMENT: never reused), name (unique; no
//	               user has it), created_at
//	role_members (version 5) role_id -> member (a user, or a role when
//	               member_role, 0 or 1), deleted with the role
//	privileges (version 5) grantee (user or role) x object (kind, db,
//	               name, id: a table's or view's ID, 0 for a database or
//	               a system table) -> privileges (catalog.Privilege bits)
//	owners (version 5) (object kind, id) -> owning user id, with db and
//	               name for reading
//	api_keys (version 6) id (AUTOINCREMENT: never reused), name (unique),
//	               user_id (the user it authenticates as; deleted with the
//	               user), key_hash (hex SHA-256 of the key, unique),
//	               created_by (a user id), created_at, expires_at (0:
//	               never)
//
// Times are Unix microseconds, UTC.
var migrations = []migration{
	{
		sqlite: []string{
			`CREATE TABLE databases (
				name       TEXT PRIMARY KEY,
				created_at INTEGER NOT NULL
			)`,
			`CREATE TABLE tables (
				id             INTEGER PRIMARY KEY AUTOINCREMENT,
				db             TEXT NOT NULL REFERENCES databases(name),
				name           TEXT NOT NULL,
				schema_id      INTEGER NOT NULL,
				primary_key    TEXT NOT NULL,
				partition_spec TEXT NOT NULL,
				options        TEXT NOT NULL,
				raw_options    TEXT NOT NULL,
				created_at     INTEGER NOT NULL,
				UNIQUE (db, name)
			)`,
			`CREATE TABLE table_schemas (
				table_id   INTEGER NOT NULL REFERENCES tables(id) ON DELETE CASCADE,
				schema_id  INTEGER NOT NULL,
				columns    TEXT NOT NULL,
				created_at INTEGER NOT NULL,
				PRIMARY KEY (table_id, schema_id)
			)`,
			`INSERT INTO databases (name, created_at) VALUES ('default', 0)`,
		},
		postgres: []string{
			`CREATE TABLE databases (
				name       TEXT PRIMARY KEY,
				created_at BIGINT NOT NULL
			)`,
			`CREATE TABLE tables (
				id             BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
				db             TEXT NOT NULL REFERENCES databases(name),
				name           TEXT NOT NULL,
				schema_id      INTEGER NOT NULL,
				primary_key    TEXT NOT NULL,
				partition_spec TEXT NOT NULL,
				options        TEXT NOT NULL,
				raw_options    TEXT NOT NULL,
				created_at     BIGINT NOT NULL,
				UNIQUE (db, name)
			)`,
			`CREATE TABLE table_schemas (
				table_id   BIGINT NOT NULL REFERENCES tables(id) ON DELETE CASCADE,
				schema_id  INTEGER NOT NULL,
				columns    TEXT NOT NULL,
				created_at BIGINT NOT NULL,
				PRIMARY KEY (table_id, schema_id)
			)`,
			`INSERT INTO databases (name, created_at) VALUES ('default', 0)`,
			`CREATE TABLE changes (
				id INTEGER PRIMARY KEY CHECK (id = 1),
				n  BIGINT NOT NULL
			)`,
			`INSERT INTO changes (id, n) VALUES (1, 0)`,
		},
	},
	{
		sqlite:   []string{`ALTER TABLE tables ADD COLUMN lake_created_at INTEGER NOT NULL DEFAULT 0`},
		postgres: []string{`ALTER TABLE tables ADD COLUMN lake_created_at BIGINT NOT NULL DEFAULT 0`},
	},
	{
		sqlite: []string{
			`CREATE TABLE views (
				id         INTEGER PRIMARY KEY AUTOINCREMENT,
				db         TEXT NOT NULL REFERENCES databases(name),
				name       TEXT NOT NULL,
				query      TEXT NOT NULL,
				created_at INTEGER NOT NULL,
				updated_at INTEGER NOT NULL,
				UNIQUE (db, name)
			)`,
		},
		postgres: []string{
			`CREATE TABLE views (
				id         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
				db         TEXT NOT NULL REFERENCES databases(name),
				name       TEXT NOT NULL,
				query      TEXT NOT NULL,
				created_at BIGINT NOT NULL,
				updated_at BIGINT NOT NULL,
				UNIQUE (db, name)
			)`,
		},
	},
	{
		sqlite: []string{
			`CREATE TABLE users (
				id            INTEGER PRIMARY KEY AUTOINCREMENT,
				name          TEXT NOT NULL UNIQUE,
				password_hash TEXT NOT NULL,
				superuser     INTEGER NOT NULL DEFAULT 0,
				generation    INTEGER NOT NULL DEFAULT 0,
				created_at    INTEGER NOT NULL,
				updated_at    INTEGER NOT NULL
			)`,
		},
		postgres: []string{
			`CREATE TABLE users (
				id            BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
				name          TEXT NOT NULL UNIQUE,
				password_hash TEXT NOT NULL,
				superuser     BOOLEAN NOT NULL DEFAULT FALSE,
				generation    BIGINT NOT NULL DEFAULT 0,
				created_at    BIGINT NOT NULL,
				updated_at    BIGINT NOT NULL
			)`,
		},
	},
	{
		sqlite: []string{
			`CREATE TABLE roles (
				id         INTEGER PRIMARY KEY AUTOINCREMENT,
				name       TEXT NOT NULL UNIQUE,
				created_at INTEGER NOT NULL
			)`,
			`CREATE TABLE role_members (
				role_id     INTEGER NOT NULL REFERENCES roles(id) ON DELETE CASCADE,
				member_role INTEGER NOT NULL,
				member_id   INTEGER NOT NULL,
				PRIMARY KEY (role_id, member_role, member_id)
			)`,
			`CREATE TABLE privileges (
				grantee_role INTEGER NOT NULL,
				grantee_id   INTEGER NOT NULL,
				object_kind  TEXT NOT NULL,
				db           TEXT NOT NULL,
				name         TEXT NOT NULL,
				object_id    INTEGER NOT NULL,
				privileges   INTEGER NOT NULL,
				PRIMARY KEY (grantee_role, grantee_id, object_kind, db, name, object_id)
			)`,
			`CREATE TABLE owners (
				object_kind TEXT NOT NULL,
				object_id   INTEGER NOT NULL,
				db          TEXT NOT NULL,
				name        TEXT NOT NULL,
				owner_id    INTEGER NOT NULL,
				PRIMARY KEY (object_kind, object_id)
			)`,
		},
		postgres: []string{
			`CREATE TABLE roles (
				id         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
				name       TEXT NOT NULL UNIQUE,
				created_at BIGINT NOT NULL
			)`,
			`CREATE TABLE role_members (
				role_id     BIGINT NOT NULL REFERENCES roles(id) ON DELETE CASCADE,
				member_role INTEGER NOT NULL,
				member_id   BIGINT NOT NULL,
				PRIMARY KEY (role_id, member_role, member_id)
			)`,
			`CREATE TABLE privileges (
				grantee_role INTEGER NOT NULL,
				grantee_id   BIGINT NOT NULL,
				object_kind  TEXT NOT NULL,
				db           TEXT NOT NULL,
				name         TEXT NOT NULL,
				object_id    BIGINT NOT NULL,
				privileges   INTEGER NOT NULL,
				PRIMARY KEY (grantee_role, grantee_id, object_kind, db, name, object_id)
			)`,
			`CREATE TABLE owners (
				object_kind TEXT NOT NULL,
				object_id   BIGINT NOT NULL,
				db          TEXT NOT NULL,
				name        TEXT NOT NULL,
				owner_id    BIGINT NOT NULL,
				PRIMARY KEY (object_kind, object_id)
			)`,
		},
	},
	{
		sqlite: []string{
			`CREATE TABLE api_keys (
				id         INTEGER PRIMARY KEY AUTOINCREMENT,
				name       TEXT NOT NULL UNIQUE,
				user_id    INTEGER NOT NULL,
				key_hash   TEXT NOT NULL UNIQUE,
				created_by INTEGER NOT NULL,
				created_at INTEGER NOT NULL,
				expires_at INTEGER NOT NULL
			)`,
		},
		postgres: []string{
			`CREATE TABLE api_keys (
				id         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
				name       TEXT NOT NULL UNIQUE,
				user_id    BIGINT NOT NULL,
				key_hash   TEXT NOT NULL UNIQUE,
				created_by BIGINT NOT NULL,
				created_at BIGINT NOT NULL,
				expires_at BIGINT NOT NULL
			)`,
		},
	},
}

// migration is one schema version, in each database's SQL.
type migration struct {
	sqlite   []string
	postgres []string
}

// text is m's statements for d.
func (m migration) text(d dialect) []string {
	if d.shared {
		return m.postgres
	}
	return m.sqlite
}

// migrate applies the pending migrations in one transaction. On SQLite
// that transaction also takes the write lock that EXCLUSIVE locking mode
// then keeps for the life of the connection; on PostgreSQL it first takes
// an advisory lock, so that two nodes starting at once migrate one after
// the other, and creates the schema. It refuses a catalog written by a
// newer binary.
func migrate(ctx context.Context, db *sql.DB, d dialect) (err error) {
	// On PostgreSQL READ COMMITTED: after the lock, see the migration of
	// whoever held it before.
	tx, err := db.BeginTx(ctx, d.writeTx)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback() // the error that made us roll back is the one to report
		}
	}()
	if d.shared {
		if err := pgPrepareSchema(ctx, tx); err != nil {
			return err
		}
	}
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER PRIMARY KEY,
		applied_at BIGINT NOT NULL
	)`); err != nil {
		return fmt.Errorf("create schema_migrations: %w", err)
	}
	var version int
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&version); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	if version > len(migrations) {
		return fmt.Errorf("catalog schema version %d is newer than this binary supports (%d)", version, len(migrations))
	}
	for v := version; v < len(migrations); v++ {
		if err := applyMigration(ctx, tx, d, v+1, migrations[v].text(d)); err != nil {
			return fmt.Errorf("migrate to version %d: %w", v+1, err)
		}
	}
	return tx.Commit()
}

func applyMigration(ctx context.Context, tx *sql.Tx, d dialect, version int, stmts []string) error {
	for _, s := range stmts {
		if _, err := tx.ExecContext(ctx, s); err != nil {
			return err
		}
	}
	_, err := tx.ExecContext(ctx, d.q(`INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)`),
		version, time.Now().UnixMicro())
	return err
}
