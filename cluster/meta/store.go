package meta

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// Options configures a store. The zero value is valid.
type Options struct {
	// Now is the caller's clock: a lease's Expires is Now at the start of
	// AcquireLease plus the ttl. The SQLite store also decides expiry by
	// it (it is the store's clock there); PostgreSQL decides by its own
	// clock_timestamp(). Default: time.Now.
	Now func() time.Time
	// MaxConns bounds the open connections. Default: 4.
	MaxConns int
	// BusyTimeout is how long SQLite waits for another connection's write
	// lock before failing (SQLite only). Default: 10s.
	BusyTimeout time.Duration
}

// EnsureDefaults sets every zero field to its default.
func (o *Options) EnsureDefaults() {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.MaxConns == 0 {
		o.MaxConns = 4
	}
	if o.BusyTimeout == 0 {
		o.BusyTimeout = 10 * time.Second
	}
}

// Validate reports every invalid field at once.
func (o *Options) Validate() error {
	var errs []error
	if o.MaxConns < 1 {
		errs = append(errs, fmt.Errorf("meta: MaxConns %d is under 1", o.MaxConns))
	}
	if o.BusyTimeout < 0 {
		errs = append(errs, fmt.Errorf("meta: BusyTimeout %s is negative", o.BusyTimeout))
	}
	return errors.Join(errs...)
}

// dialect is what differs between the SQL databases; the statements are
// otherwise shared, written with ? placeholders.
type dialect struct {
	name string
	// rebind turns ? placeholders into the database's.
	rebind func(string) string
	// txOptions are the options of every transaction.
	txOptions *sql.TxOptions
	// lockWrites, run first in every write transaction, takes the lock
	// that orders all writes ("" when beginning the transaction took it).
	lockWrites string
	// lockMigrate, run first in the migration transaction, keeps two
	// processes from migrating at once ("" when beginning took a lock).
	lockMigrate string
	// now is the store's clock in Unix microseconds, the one that decides
	// whether a lease has expired.
	now func(ctx context.Context, q querier) (int64, error)
}

// querier is a *sql.DB or a *sql.Tx.
type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// rebindDollar numbers ? placeholders as $1, $2, … (PostgreSQL). The
// statements of this package hold no ? in literals.
func rebindDollar(q string) string {
	var b strings.Builder
	n := 0
	for _, r := range q {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// sqlStore is the Store over database/sql; SQLite and Postgres embed it.
type sqlStore struct {
	db     *sql.DB
	d      dialect
	opts   Options
	closed atomic.Bool
}

// migrations are the schema, one entry per version; entry i takes the
// schema from version i to i+1. Append only. Applied versions are rows of
// lakestream_meta_schema. Names carry the lakestream_ prefix: in a
// cluster the PostgreSQL database may be shared (an Iceberg catalog).
//
//	lakestream_buckets  (table_id, part, bucket) -> replicas, isr (JSON
//	                    arrays of node ids), leader ('' = none), epoch,
//	                    version
//	lakestream_leases   name -> holder ('' = released), token (kept
//	                    across holders), expires_us (store clock, Unix µs)
//	lakestream_changes  the one row (id 1) of the change counter n
//	lakestream_secrets  name -> value (hex): keys the nodes share, each
//	                    stored once by the first node that asks
var migrations = [][]string{
	{
		`CREATE TABLE lakestream_buckets (
			table_id BIGINT  NOT NULL,
			part     TEXT    NOT NULL,
			bucket   INTEGER NOT NULL,
			replicas TEXT    NOT NULL,
			leader   TEXT    NOT NULL,
			epoch    INTEGER NOT NULL,
			isr      TEXT    NOT NULL,
			version  BIGINT  NOT NULL,
			PRIMARY KEY (table_id, part, bucket)
		)`,
		`CREATE TABLE lakestream_leases (
			name       TEXT   PRIMARY KEY,
			holder     TEXT   NOT NULL,
			token      BIGINT NOT NULL,
			expires_us BIGINT NOT NULL
		)`,
		`CREATE TABLE lakestream_changes (
			id INTEGER PRIMARY KEY CHECK (id = 1),
			n  BIGINT  NOT NULL
		)`,
		`INSERT INTO lakestream_changes (id, n) VALUES (1, 0)`,
	},
	{
		`CREATE TABLE lakestream_secrets (
			name  TEXT PRIMARY KEY,
			value TEXT NOT NULL
		)`,
	},
}

// migrate applies the pending migrations in one transaction. It is
// idempotent, and refuses a schema written by a newer binary.
func (s *sqlStore) migrate(ctx context.Context) error {
	return s.inTx(ctx, s.d.lockMigrate, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS lakestream_meta_schema (
			version    INTEGER PRIMARY KEY,
			applied_us BIGINT  NOT NULL
		)`); err != nil {
			return fmt.Errorf("create schema table: %w", err)
		}
		var have int
		if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM lakestream_meta_schema`).Scan(&have); err != nil {
			return fmt.Errorf("read schema version: %w", err)
		}
		if have > len(migrations) {
			return fmt.Errorf("schema version %d is newer than this binary's %d", have, len(migrations))
		}
		for v := have; v < len(migrations); v++ {
			for _, stmt := range migrations[v] {
				if _, err := tx.ExecContext(ctx, stmt); err != nil {
					return fmt.Errorf("migrate to version %d: %w", v+1, err)
				}
			}
			if _, err := tx.ExecContext(ctx, s.d.rebind(`INSERT INTO lakestream_meta_schema (version, applied_us) VALUES (?, ?)`),
				v+1, time.Now().UnixMicro()); err != nil {
				return fmt.Errorf("record schema version %d: %w", v+1, err)
			}
		}
		return nil
	})
}

// inTx runs fn in one transaction, lock (if any) first, and commits it.
func (s *sqlStore) inTx(ctx context.Context, lock string, fn func(*sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, s.d.txOptions)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	if lock != "" {
		if _, err := tx.ExecContext(ctx, lock); err != nil {
			return errors.Join(fmt.Errorf("lock: %w", err), rollback(tx))
		}
	}
	if err := fn(tx); err != nil {
		return errors.Join(err, rollback(tx))
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

func rollback(tx *sql.Tx) error {
	if err := tx.Rollback(); err != nil && !errors.Is(err, sql.ErrTxDone) {
		return fmt.Errorf("rollback: %w", err)
	}
	return nil
}

// write runs fn in a write transaction: under the write lock, and with the
// change counter raised in the same transaction when fn reports that it
// changed what readers see.
func (s *sqlStore) write(ctx context.Context, fn func(*sql.Tx) (changed bool, err error)) error {
	if s.closed.Load() {
		return ErrClosed
	}
	return s.inTx(ctx, s.d.lockWrites, func(tx *sql.Tx) error {
		changed, err := fn(tx)
		if err != nil || !changed {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE lakestream_changes SET n = n + 1 WHERE id = 1`); err != nil {
			return fmt.Errorf("count change: %w", err)
		}
		return nil
	})
}

func (s *sqlStore) q(query string) string { return s.d.rebind(query) }

// Close closes the database. Later calls return ErrClosed.
func (s *sqlStore) Close() error {
	if s.closed.Swap(true) {
		return ErrClosed
	}
	return s.db.Close()
}

// Changes returns the change counter.
func (s *sqlStore) Changes(ctx context.Context) (int64, error) {
	if s.closed.Load() {
		return 0, ErrClosed
	}
	var n int64
	if err := s.db.QueryRowContext(ctx, `SELECT n FROM lakestream_changes WHERE id = 1`).Scan(&n); err != nil {
		return 0, fmt.Errorf("read changes: %w", err)
	}
	return n, nil
}

// encodeIDs is the stored form of a node id list: a JSON array.
func encodeIDs(ids []string) string {
	if ids == nil {
		ids = []string{}
	}
	b, err := json.Marshal(ids)
	if err != nil {
		panic(fmt.Sprintf("meta: marshal node ids: %v", err)) // []string always marshals
	}
	return string(b)
}

// decodeIDs reads encodeIDs's form; an empty list is nil.
func decodeIDs(s string) ([]string, error) {
	var ids []string
	if err := json.Unmarshal([]byte(s), &ids); err != nil {
		return nil, fmt.Errorf("decode node ids %q: %w", s, err)
	}
	if len(ids) == 0 {
		return nil, nil
	}
	return ids, nil
}
