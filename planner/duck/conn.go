package duck

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	bindings "github.com/duckdb/duckdb-go-bindings"

	"github.com/lakestream/lakestream/internal/scan"
)

// One statement, one connection: a DuckDB connection runs one statement at
// a time, and DuckDB's callbacks identify the statement only by its
// connection (table function bind gets the client context, whose
// connection id maps to the queryState here).

// queryState is the Go side of one statement on one connection.
type queryState struct {
	ctx context.Context
	// stop ends ctx with a cause; nil for a callback outside a statement.
	stop context.CancelCauseFunc
	// started is when the statement started (the memory watchdog's
	// weights, memlimit.go).
	started time.Time

	mu struct {
		sync.Mutex
		// err is the first Go error a callback reported to DuckDB. DuckDB
		// only carries the message; this keeps the error chain (e.g.
		// scan.ErrTableNotFound) for the caller.
		err error
		// names is the name analysis of the statement being prepared.
		names analysis
	}
}

func (q *queryState) setNames(a analysis) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.mu.names = a
}

// notFound is a one-sentence scan.ErrTableNotFound.
type notFound string

func (e notFound) Error() string        { return string(e) }
func (e notFound) Is(target error) bool { return target == scan.ErrTableNotFound }

// checkBare reports whether a bare table name from the replacement scan
// really is unqualified in the statement (names.go).
func (q *queryState) checkBare(name string) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	switch q.mu.names.check {
	case namesParsed:
		if !q.mu.names.bare[name] && q.mu.names.kept[name] {
			// Only a qualified name DuckDB does not know (main.events)
			// reaches the replacement scan without being bare.
			return notFound(fmt.Sprintf("table %q does not exist in DuckDB's own schemas (main, information_schema, pg_catalog) or catalogs, which a name qualified with one of them reads; a Lakestream table is named t or db.t", name))
		}
	case namesUnparsed:
		return errUnanalyzable
	}
	return nil
}

// filters returns the filters to push into the scan of a table bound as
// (db, name) with schema.
func (q *queryState) filters(db, name string, schema *arrow.Schema) []scan.Filter {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.mu.names.pushdown.filters(db, name, schema)
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

// connect opens a connection for one statement and registers its state;
// stop ends ctx with a cause.
func (e *Engine) connect(ctx context.Context, stop context.CancelCauseFunc) (*conn, error) {
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
	qs := &queryState{ctx: ctx, stop: stop, started: time.Now()}
	e.mu.queries[id] = qs
	e.conns.Add(1)
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
	e.conns.Done()
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
