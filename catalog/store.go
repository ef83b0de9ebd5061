package catalog

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	_ "modernc.org/sqlite" // database/sql driver "sqlite"
)

// ErrClosed is returned by every method of a closed Catalog.
var ErrClosed = errors.New("catalog closed")

// Config configures a Catalog. The zero value is valid: EnsureDefaults fills
// in every default.
type Config struct {
	// DefaultBucketNum is bucket.num for tables that do not set it, 1..1024.
	// Default: 1. A table keeps the bucket count it was created with.
	DefaultBucketNum int
	// BusyTimeout is how long SQLite waits for a lock held by someone else
	// before failing. Default: 5s.
	BusyTimeout time.Duration
	// Now is the clock for creation times. Default: time.Now.
	Now func() time.Time
}

// EnsureDefaults sets every zero field to its default.
func (c *Config) EnsureDefaults() {
	if c.DefaultBucketNum == 0 {
		c.DefaultBucketNum = 1
	}
	if c.BusyTimeout == 0 {
		c.BusyTimeout = 5 * time.Second
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}

// Validate reports every invalid field at once.
func (c *Config) Validate() error {
	var errs []error
	if c.DefaultBucketNum < 1 || c.DefaultBucketNum > MaxBucketNum {
		errs = append(errs, invalidf("catalog: DefaultBucketNum %d is not in 1..%d", c.DefaultBucketNum, MaxBucketNum))
	}
	if c.BusyTimeout < 0 {
		errs = append(errs, invalidf("catalog: BusyTimeout %s is negative", c.BusyTimeout))
	}
	return errors.Join(errs...)
}

// Catalog is the durable store of databases and tables, a SQLite database.
// It is safe for concurrent use.
//
// Reads are served from an in-memory snapshot that is replaced, never
// modified, after each committed change, so reads (on every query plan) take
// no lock and never wait for SQLite. The snapshot is only valid while this
// process is the only writer, so the SQLite file is opened with
// locking_mode=EXCLUSIVE: a second process (or a second Open) fails with
// "database is locked" instead of silently diverging.
type Catalog struct {
	cfg Config
	db  *sql.DB
	// writeMu serializes changes: the existence checks, the SQLite
	// transaction and the publication of the new snapshot happen under it.
	writeMu sync.Mutex
	state   atomic.Pointer[snapshot]
	users   atomic.Pointer[userSet] // users.go
	grants  atomic.Pointer[Grants]  // grants.go
	closed  atomic.Bool
}

// Open opens (creating if needed) the catalog in the SQLite file at path,
// applies pending schema migrations and loads every table.
func Open(ctx context.Context, path string, cfg Config) (*Catalog, error) {
	cfg.EnsureDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	db, err := sql.Open("sqlite", dsn(path, cfg))
	if err != nil {
		return nil, fmt.Errorf("open catalog %s: %w", path, err)
	}
	// One connection: it holds the exclusive lock, and DDL is serialized
	// by writeMu anyway. Reads do not touch SQLite.
	db.SetMaxOpenConns(1)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	c := &Catalog{cfg: cfg, db: db}
	if err := c.start(ctx); err != nil {
		if isBusy(err) {
			err = fmt.Errorf("%w (is another lakestream process using this data dir?)", err)
		}
		return nil, errors.Join(fmt.Errorf("open catalog %s: %w", path, err), db.Close())
	}
	return c, nil
}

// isBusy reports whether err is SQLite's SQLITE_BUSY: someone else holds the
// lock. The driver's error has a Code method; its low byte is the primary
// result code.
func isBusy(err error) bool {
	const sqliteBusy = 5
	var coded interface{ Code() int }
	return errors.As(err, &coded) && coded.Code()&0xff == sqliteBusy
}

// dsn builds the SQLite URI: WAL for concurrent-safe, crash-safe commits;
// synchronous=FULL so a committed DDL survives power loss; foreign keys for
// ON DELETE CASCADE; immediate transactions so that a write transaction
// takes its lock up front instead of failing on upgrade.
func dsn(path string, cfg Config) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = path
	}
	q := url.Values{}
	q.Set("_busy_timeout", strconv.FormatInt(cfg.BusyTimeout.Milliseconds(), 10))
	q.Add("_pragma", "locking_mode(EXCLUSIVE)")
	q.Set("_journal_mode", "WAL")
	q.Set("_synchronous", "FULL")
	q.Set("_foreign_keys", "1")
	q.Set("_txlock", "immediate")
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(abs), RawQuery: q.Encode()}
	return u.String()
}

// start migrates the schema and loads the first snapshot.
func (c *Catalog) start(ctx context.Context) error {
	if err := migrate(ctx, c.db); err != nil {
		return err
	}
	snap, err := loadSnapshot(ctx, c.db)
	if err != nil {
		return fmt.Errorf("load: %w", err)
	}
	c.state.Store(snap)
	users, err := loadUsers(ctx, c.db)
	if err != nil {
		return fmt.Errorf("load: %w", err)
	}
	c.users.Store(users)
	grants, err := loadGrants(ctx, c.db)
	if err != nil {
		return fmt.Errorf("load: %w", err)
	}
	c.grants.Store(grants)
	return nil
}

// Close closes the SQLite database. Later calls return ErrClosed.
func (c *Catalog) Close() error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	if c.closed.Swap(true) {
		return ErrClosed
	}
	return c.db.Close()
}

// snap returns the current snapshot, or ErrClosed.
func (c *Catalog) snap() (*snapshot, error) {
	if c.closed.Load() {
		return nil, ErrClosed
	}
	return c.state.Load(), nil
}

// lockWrite takes writeMu for a change and returns the current snapshot.
// The caller must call c.writeMu.Unlock.
func (c *Catalog) lockWrite() (*snapshot, error) {
	c.writeMu.Lock()
	snap, err := c.snap()
	if err != nil {
		c.writeMu.Unlock()
	}
	return snap, err
}

// inTx runs fn in one SQLite transaction and commits it.
func (c *Catalog) inTx(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := c.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	if err := fn(tx); err != nil {
		if rbErr := tx.Rollback(); rbErr != nil && !errors.Is(rbErr, sql.ErrTxDone) {
			return errors.Join(err, fmt.Errorf("rollback: %w", rbErr))
		}
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

func (c *Catalog) now() time.Time { return c.cfg.Now().UTC().Truncate(time.Microsecond) }
