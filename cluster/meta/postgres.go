package meta

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// Postgres is the Store of a cluster: tables in a PostgreSQL database that
// every node reaches (pgx through database/sql). Transactions run at READ
// COMMITTED, and every write first locks the change counter's row, so
// writes are serialized in the database and each statement after the lock
// sees every write committed before it. PostgreSQL's clock_timestamp()
// decides lease expiry.
type Postgres struct {
	*sqlStore
}

// OpenPostgres connects to the database at uri (postgres://…), with
// default Options, and migrates the schema.
func OpenPostgres(ctx context.Context, uri string) (*Postgres, error) {
	return OpenPostgresWith(ctx, uri, Options{})
}

// idleInTxTimeout is PostgreSQL's idle_in_transaction_session_timeout on
// the store's sessions, in milliseconds: below the controller lease's 3 s,
// so that a frozen node cannot keep the others from taking the lease over.
const idleInTxTimeout = "2000"

// migrateLockKey is the advisory lock that keeps two nodes starting at once
// from migrating the schema together ("lkst" in ASCII).
const migrateLockKey = 0x6c6b7374

// OpenPostgresWith connects to the database at uri with opts and migrates
// the schema.
func OpenPostgresWith(ctx context.Context, uri string, opts Options) (*Postgres, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	cfg, err := pgx.ParseConfig(uri)
	if err != nil {
		return nil, fmt.Errorf("open metadata store: %w", err)
	}
	// A node that stops inside a write transaction (frozen, swapping, a
	// long pause) holds the write lock that every other node's writes
	// wait for: the server ends such a session after idleInTxTimeout, the
	// lock goes, and the node's own transaction fails.
	cfg.RuntimeParams["idle_in_transaction_session_timeout"] = idleInTxTimeout
	db := stdlib.OpenDB(*cfg)
	db.SetMaxOpenConns(opts.MaxConns)
	db.SetMaxIdleConns(opts.MaxConns)
	s := &Postgres{&sqlStore{db: db, opts: opts, d: dialect{
		name:        "postgres",
		rebind:      rebindDollar,
		txOptions:   &sql.TxOptions{Isolation: sql.LevelReadCommitted},
		lockWrites:  `SELECT n FROM lakestream_changes WHERE id = 1 FOR UPDATE`,
		lockMigrate: fmt.Sprintf(`SELECT pg_advisory_xact_lock(%d)`, migrateLockKey),
		now:         pgNow,
	}}}
	if err := s.migrate(ctx); err != nil {
		return nil, errors.Join(fmt.Errorf("open metadata store %s@%s/%s: %w", cfg.User, cfg.Host, cfg.Database, err), db.Close())
	}
	return s, nil
}

// pgNow is PostgreSQL's clock in Unix microseconds. clock_timestamp(), not
// now(): now() is the transaction's start, before the write lock was
// granted.
func pgNow(ctx context.Context, q querier) (int64, error) {
	var us int64
	err := q.QueryRowContext(ctx, `SELECT (EXTRACT(EPOCH FROM clock_timestamp()) * 1000000)::BIGINT`).Scan(&us)
	return us, err
}
