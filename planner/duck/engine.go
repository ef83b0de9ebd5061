package duck

import (
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"

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

	mu struct {
		sync.Mutex
		closed bool
		// queries maps a DuckDB connection id to the Go state of the
		// statement running on it, so that callbacks (which DuckDB calls
		// with a connection, never with a Go context) find their context.
		queries map[uint64]*queryState
		// streams are the open result streams, closed by Close.
		streams map[*resultStream]struct{}
	}
	// conns counts open connections; Close waits for them before it frees
	// the database.
	conns sync.WaitGroup
	// parsers are idle prepared json_serialize_sql connections (parser.go).
	parsers chan *parser
	// scalars are the names of DuckDB's scalar functions (rowwise.go).
	scalars scalarNames
	// watchdog is the memory watchdog (memlimit.go); nil without
	// QueryMemoryLimit. Close closes done and waits for stopped.
	watchdog *struct{ done, stopped chan struct{} }
}

// New opens an in-memory DuckDB, locks it down (docs/sql.md) and registers the
// Lakestream table function and name resolution over res.
func New(res scan.Resolver, opts Options) (*Engine, error) {
	return newEngine(res, opts, true)
}

// newEngine is New, with the lockdown optional for benchmarks that need a
// native DuckDB table next to Lakestream's.
func newEngine(res scan.Resolver, opts Options, lock bool) (*Engine, error) {
	if res == nil {
		return nil, errors.New("duck: nil resolver")
	}
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("duck: options: %w", err)
	}
	e := &Engine{res: res, opts: opts, log: opts.Logger}
	e.mu.queries = make(map[uint64]*queryState)
	e.mu.streams = make(map[*resultStream]struct{})
	e.parsers = make(chan *parser, opts.Threads)

	db, err := openDB(opts, lock)
	if err != nil {
		return nil, err
	}
	e.db = db
	if err := e.register(); err != nil {
		bindings.Close(&e.db)
		return nil, err
	}
	if opts.QueryMemoryLimit > 0 {
		w := &struct{ done, stopped chan struct{} }{make(chan struct{}), make(chan struct{})}
		e.watchdog = w
		go func() {
			defer close(w.stopped)
			e.watchMemory(w.done)
		}()
	}
	e.log.Info("duckdb engine started", "version", bindings.LibraryVersion(),
		"threads", opts.Threads, "memory_limit", opts.MemoryLimit, "query_timeout", opts.QueryTimeout, "query_memory_limit", opts.QueryMemoryLimit)
	return e, nil
}

// openDB opens the database with the lockdown settings in its start-up
// configuration, so that no statement ever runs on an unlocked instance.
//
// Settings (docs/sql.md, "Queries"):
//   - enable_external_access=false: no file system or network access from
//     SQL (read_csv, read_parquet, COPY, ATTACH, httpfs...).
//   - autoinstall/autoload_known_extensions=false, allow_community_extensions
//     =false: no extension is fetched or loaded on demand. Extensions that
//     are statically linked (core_functions, icu, json, parquet, ...) stay
//     available; INSTALL and LOAD fail.
//   - temp_directory empty: nothing spills to disk; a query over memory_limit
//     fails with an out-of-memory error. DuckDB adds its temp directory to
//     the paths SQL may read even with external access off (read_text,
//     read_blob and glob of it work, measured with DuckDB 1.5), and
//     allowed_directories cannot be changed once external access is off:
//     with a temp directory, every client could list and read the spill
//     files of every other client's queries. Its default, ".tmp" under the
//     working directory, is readable the same way.
//   - TimeZone=UTC: TIMESTAMPTZ results are exported as timestamp[us, UTC]
//     whatever the host's zone.
//   - lock_configuration=true: SET of any setting fails from now on.
//
// TimeZone is an option of the ICU extension, unknown until the database
// has loaded it, so it and the lock are SET on a first connection before
// the engine is handed out.
func openDB(opts Options, lock bool) (bindings.Database, error) {
	var cfg bindings.Config
	if bindings.CreateConfig(&cfg) == bindings.StateError {
		return bindings.Database{}, errors.New("duck: create config")
	}
	defer bindings.DestroyConfig(&cfg)
	settings := [][2]string{
		{"duckdb_api", "lakestream"},
		{"threads", strconv.Itoa(opts.Threads)},
		{"temp_directory", ""},
	}
	if lock {
		settings = append(settings, [][2]string{
			{"enable_external_access", "false"},
			{"autoinstall_known_extensions", "false"},
			{"autoload_known_extensions", "false"},
			{"allow_community_extensions", "false"},
			{"allow_unsigned_extensions", "false"},
		}...)
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
	setup := []string{"SET GLOBAL TimeZone = 'UTC'"}
	if lock {
		setup = append(setup, "SET GLOBAL lock_configuration = true")
	}
	if err := execAll(db, setup...); err != nil {
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

// Close stops and closes the result streams still open (their Next fails
// from then on, their Close is a no-op), then closes DuckDB. Queries started
// after Close fail with ErrClosed.
func (e *Engine) Close() error {
	e.mu.Lock()
	if e.mu.closed {
		e.mu.Unlock()
		return nil
	}
	e.mu.closed = true
	open := make([]*resultStream, 0, len(e.mu.streams))
	for s := range e.mu.streams {
		open = append(open, s)
	}
	e.mu.Unlock()
	var errs []error
	for _, s := range open {
		errs = append(errs, s.Close())
	}
	if w := e.watchdog; w != nil {
		close(w.done)
		<-w.stopped
	}
	// What is left are Describes and Queries being set up: short.
	e.conns.Wait()
	e.closeParsers()
	// Closing the database destroys the registered function and the
	// replacement scan, whose delete callbacks free their handles.
	bindings.Close(&e.db)
	return errors.Join(errs...)
}

// addStream registers an open stream; false once the engine is closed.
func (e *Engine) addStream(s *resultStream) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.mu.closed {
		return false
	}
	e.mu.streams[s] = struct{}{}
	return true
}

func (e *Engine) removeStream(s *resultStream) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.mu.streams, s)
}

// Version is the embedded DuckDB's version, e.g. "v1.5.6".
func Version() string { return bindings.LibraryVersion() }
