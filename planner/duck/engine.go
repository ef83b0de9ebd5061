package duck

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"unsafe"

	bindings "github.com/duckdb/duckdb-go-bindings"

	"github.com/lakestream/lakestream/internal/scan"
)

// scanFunctionName is the table function every Lakestream table reference
// becomes: lakestream_scan('db', 'table').
const scanFunctionName = "lakestream_scan"

// ErrClosed is returned by an Engine after Close.
var ErrClosed = errors.New("duck: engine closed")

// Engine is an embedded, locked-down DuckDB instance in which every
// Lakestream table is reachable by name. It is safe for concurrent use: each
// Query and Describe runs on its own DuckDB connection.
type Engine struct {
	res  scan.Resolver
	opts Options
	log  *slog.Logger

	db bindings.Database
	// self is a C-allocated cgo.Handle of the Engine, given to DuckDB as the
	// extra data of the table function and the replacement scan.
	self unsafe.Pointer

	mu struct {
		sync.Mutex
		closed bool
		// queries maps a DuckDB connection id to the Go state of the
		// statement running on it, so that callbacks (which DuckDB calls
		// with a connection, never with a Go context) find their context.
		queries map[uint64]*queryState
	}
	// streams counts open RecordStreams; Close waits for them.
	streams sync.WaitGroup
}

// queryState is the Go side of one statement on one connection.
type queryState struct {
	ctx context.Context

	mu struct {
		sync.Mutex
		// err is the first Go error a callback reported to DuckDB. DuckDB
		// only carries the message; this keeps the error chain (e.g.
		// scan.ErrTableNotFound) for the caller.
		err error
	}
}

func (q *queryState) setErr(err error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.mu.err == nil {
		q.mu.err = err
	}
}

func (q *queryState) getErr() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.mu.err
}

// New opens an in-memory DuckDB, locks it down (DESIGN §6) and registers the
// Lakestream table function and name resolution over res.
func New(res scan.Resolver, opts Options) (*Engine, error) {
	if res == nil {
		return nil, errors.New("duck: nil resolver")
	}
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("duck: options: %w", err)
	}
	e := &Engine{res: res, opts: opts, log: opts.Logger}
	e.mu.queries = make(map[uint64]*queryState)

	db, err := openLocked(opts)
	if err != nil {
		return nil, err
	}
	e.db = db
	e.self = newHandle(e)
	if err := e.register(); err != nil {
		bindings.Close(&e.db)
		return nil, err
	}
	e.log.Info("duckdb engine started", "version", bindings.LibraryVersion(),
		"threads", opts.Threads, "memory_limit", opts.MemoryLimit)
	return e, nil
}

// openLocked opens the database with the lockdown settings in its start-up
// configuration, so that no statement ever runs on an unlocked instance.
//
// Settings (DESIGN §6):
//   - enable_external_access=false: no file system or network access from
//     SQL (read_csv, read_parquet, COPY, ATTACH, httpfs...).
//   - autoinstall/autoload_known_extensions=false, allow_community_extensions
//     =false: no extension is fetched or loaded on demand. Extensions that
//     are statically linked (core_functions, icu, json, parquet, ...) stay
//     available; INSTALL and LOAD fail.
//   - TimeZone=UTC: TIMESTAMPTZ results are exported as timestamp[us, UTC]
//     whatever the host's zone.
//   - lock_configuration=true: SET of any setting fails from now on.
//
// TimeZone is an option of the ICU extension, unknown until the database
// has loaded it, so it and the lock are SET on a first connection before
// the engine is handed out.
func openLocked(opts Options) (bindings.Database, error) {
	var cfg bindings.Config
	if bindings.CreateConfig(&cfg) == bindings.StateError {
		return bindings.Database{}, errors.New("duck: create config")
	}
	defer bindings.DestroyConfig(&cfg)
	settings := [][2]string{
		{"duckdb_api", "lakestream"},
		{"threads", strconv.Itoa(opts.Threads)},
		{"enable_external_access", "false"},
		{"autoinstall_known_extensions", "false"},
		{"autoload_known_extensions", "false"},
		{"allow_community_extensions", "false"},
		{"allow_unsigned_extensions", "false"},
	}
	if opts.MemoryLimit != "" {
		settings = append(settings, [2]string{"memory_limit", opts.MemoryLimit})
	}
	for _, s := range settings {
		if bindings.SetConfig(cfg, s[0], s[1]) == bindings.StateError {
			return bindings.Database{}, fmt.Errorf("duck: config %s=%s: rejected", s[0], s[1])
		}
	}
	var db bindings.Database
	var msg string
	if bindings.OpenExt(":memory:", &db, cfg, &msg) == bindings.StateError {
		bindings.Close(&db)
		return bindings.Database{}, fmt.Errorf("duck: open: %s", msg)
	}
	if err := execAll(db, "SET GLOBAL TimeZone = 'UTC'", "SET GLOBAL lock_configuration = true"); err != nil {
		bindings.Close(&db)
		return bindings.Database{}, err
	}
	return db, nil
}

// execAll runs set-up statements on a fresh connection.
func execAll(db bindings.Database, stmts ...string) error {
	var c bindings.Connection
	if bindings.Connect(db, &c) == bindings.StateError {
		return errors.New("duck: connect")
	}
	defer bindings.Disconnect(&c)
	for _, sql := range stmts {
		var res bindings.Result
		state := bindings.Query(c, sql, &res)
		msg := bindings.ResultError(&res)
		bindings.DestroyResult(&res)
		if state == bindings.StateError {
			return fmt.Errorf("duck: %s: %s", sql, msg)
		}
	}
	return nil
}

// Close waits for open result streams to be closed, then closes DuckDB.
// Queries started after Close fail with ErrClosed.
func (e *Engine) Close() error {
	e.mu.Lock()
	if e.mu.closed {
		e.mu.Unlock()
		return nil
	}
	e.mu.closed = true
	e.mu.Unlock()
	e.streams.Wait()
	// Closing the database destroys the registered functions and the
	// replacement scan, whose delete callbacks free e.self.
	bindings.Close(&e.db)
	return nil
}

// conn is one DuckDB connection with the Go state of the statement on it.
type conn struct {
	c  bindings.Connection
	id uint64
	qs *queryState

	// mu orders interrupt (from a context watcher goroutine) before the
	// disconnect that frees the connection.
	mu           sync.Mutex
	disconnected bool
}

// interrupt asks DuckDB to stop the statement running on c, if any.
func (c *conn) interrupt() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.disconnected {
		bindings.Interrupt(c.c)
	}
}

// connect opens a connection for one statement and registers its state.
func (e *Engine) connect(ctx context.Context) (*conn, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.mu.closed {
		return nil, ErrClosed
	}
	var c bindings.Connection
	if bindings.Connect(e.db, &c) == bindings.StateError {
		return nil, errors.New("duck: connect")
	}
	var cc bindings.ClientContext
	bindings.ConnectionGetClientContext(c, &cc)
	id := uint64(bindings.ClientContextGetConnectionId(cc))
	bindings.DestroyClientContext(&cc)
	qs := &queryState{ctx: ctx}
	e.mu.queries[id] = qs
	return &conn{c: c, id: id, qs: qs}, nil
}

// disconnect closes a connection from connect.
func (e *Engine) disconnect(c *conn) {
	e.mu.Lock()
	delete(e.mu.queries, c.id)
	e.mu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.disconnected = true
	bindings.Disconnect(&c.c)
}

// query returns the state of the statement running on connection id.
func (e *Engine) query(id uint64) *queryState {
	e.mu.Lock()
	defer e.mu.Unlock()
	if qs, ok := e.mu.queries[id]; ok {
		return qs
	}
	// A connection Lakestream did not open (there are none) or a callback
	// after the statement ended: run without cancellation.
	return &queryState{ctx: context.Background()}
}
