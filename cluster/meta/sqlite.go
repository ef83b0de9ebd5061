package meta

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strconv"

	_ "modernc.org/sqlite" // database/sql driver "sqlite"
)

// SQLite is the Store of a node that runs alone: a SQLite file in its data
// directory. Every write transaction begins IMMEDIATE, taking SQLite's one
// write lock up front, so writes are serialized and each one's condition
// is checked against the latest committed state. Its clock (Options.Now)
// decides lease expiry.
type SQLite struct {
	*sqlStore
}

// OpenSQLite opens (creating if needed) the store in the SQLite file at
// path, with default Options.
func OpenSQLite(path string) (*SQLite, error) {
	return OpenSQLiteWith(path, Options{})
}

// OpenSQLiteWith opens the store at path with opts and migrates its schema.
func OpenSQLiteWith(path string, opts Options) (*SQLite, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	db, err := sql.Open("sqlite", sqliteDSN(path, opts))
	if err != nil {
		return nil, fmt.Errorf("open metadata store %s: %w", path, err)
	}
	db.SetMaxOpenConns(opts.MaxConns)
	now := opts.Now
	s := &SQLite{&sqlStore{db: db, opts: opts, d: dialect{
		name:   "sqlite",
		rebind: func(q string) string { return q },
		now: func(context.Context, querier) (int64, error) {
			return now().UnixMicro(), nil
		},
	}}}
	if err := s.migrate(context.Background()); err != nil {
		return nil, errors.Join(fmt.Errorf("open metadata store %s: %w", path, err), db.Close())
	}
	return s, nil
}

// sqliteDSN is the SQLite URI: WAL, synchronous=FULL so that a committed
// decision survives power loss, and immediate transactions so that a write
// takes the write lock when it begins, not on its first write (where two
// readers upgrading at once would fail with SQLITE_BUSY).
func sqliteDSN(path string, opts Options) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = path
	}
	q := url.Values{}
	q.Set("_busy_timeout", strconv.FormatInt(opts.BusyTimeout.Milliseconds(), 10))
	q.Set("_journal_mode", "WAL")
	q.Set("_synchronous", "FULL")
	q.Set("_txlock", "immediate")
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(abs), RawQuery: q.Encode()}
	return u.String()
}
