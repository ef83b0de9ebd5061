package catalog

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
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
	// before failing (SQLite only). Default: 5s.
	BusyTimeout time.Duration
	// Now is the clock for creation times. Default: time.Now.
	Now func() time.Time
	// PollInterval is how often Watch asks PostgreSQL whether another
	// process changed the catalog (one query of one row). Default: 200ms.
	PollInterval time.Duration
	// OnChange, if set, is called after this handle's snapshot took in
	// changes made by another process (PostgreSQL only): from Refresh,
	// Watch, or a write that found the catalog changed. It is called
	// without any lock held, possibly from several goroutines at once, so
	// it should be quick (a non-blocking send on a channel of capacity 1,
	// say). Default: nil.
	OnChange func()
	// Logger receives what Watch cannot report otherwise: a failed
	// poll. Default: a logger that discards.
	Logger *slog.Logger
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
	if c.PollInterval == 0 {
		c.PollInterval = 200 * time.Millisecond
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
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
	if c.PollInterval < 0 {
		errs = append(errs, invalidf("catalog: PollInterval %s is negative", c.PollInterval))
	}
	return errors.Join(errs...)
}

// Catalog is the durable store of databases and tables: a SQLite file
// (Open) or a PostgreSQL database shared by the nodes of a cluster
// (OpenPostgres). It is safe for concurrent use.
//
// Reads are served from an in-memory snapshot that is replaced, never
// modified, after each committed change, so reads (on every query plan) take
// no lock and never wait for the database.
//
// On SQLite the snapshot is only valid while this process is the only
// writer, so the file is opened with locking_mode=EXCLUSIVE: a second
// process (or a second Open) fails with "database is locked" instead of
// silently diverging.
//
// On PostgreSQL several processes write one catalog. A change counter (one
// row) orders them: each write transaction locks it first, reloads the
// snapshot when the counter moved since this handle last loaded it, runs
// its checks against that fresh state, and raises the counter with its
// change (write.go). Between writes a handle's snapshot may lag the others'
// changes until Refresh or Watch brings it up to date.
type Catalog struct {
	cfg Config
	db  *sql.DB
	d   dialect
	// writeMu serializes changes: the existence checks, the transaction
	// and the publication of the new snapshot happen under it, and so
	// does a reload.
	writeMu sync.Mutex
	// seen is the change counter the published snapshot and users
	// reflect (PostgreSQL only). Guarded by writeMu.
	seen   int64
	state  atomic.Pointer[snapshot]
	users  atomic.Pointer[userSet] // users.go
	grants atomic.Pointer[Grants]  // grants.go
	closed atomic.Bool
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
	c := &Catalog{cfg: cfg, db: db, d: sqliteDialect}
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
	if err := migrate(ctx, c.db, c.d); err != nil {
		return err
	}
	if c.d.shared {
		_, err := c.reloadLocked(ctx) // no one else has c yet
		return err
	}
	snap, users, grants, err := loadAll(ctx, c.db)
	if err != nil {
		return err
	}
	c.state.Store(snap)
	c.users.Store(users)
	c.grants.Store(grants)
	return nil
}

// Close closes the database. Later calls return ErrClosed.
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

func (c *Catalog) now() time.Time { return c.cfg.Now().UTC().Truncate(time.Microsecond) }
