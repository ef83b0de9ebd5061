package flightsrv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"google.golang.org/grpc/codes"

	"github.com/lakestream/lakestream/auth"
	"github.com/lakestream/lakestream/internal/scan"
	"github.com/lakestream/lakestream/planner/duck"
)

// Limits are the caps on what one client may hold at once, so that no
// single client takes the node down (docs/security.md, "Resource
// limits"). A call over a cap fails at once with ResourceExhausted and a
// message that names the cap and the flag that sets it; nothing waits.
// Zero fields take their defaults; a negative one is no cap.
type Limits struct {
	// QueriesPerUser caps the statements one user runs in the query
	// engine at once: queries, and the queries behind INSERT ... SELECT,
	// UPDATE, DELETE and CREATE TABLE ... AS, each from its start until
	// its result stream is closed. Calls without a user (authentication
	// off) are capped per client connection instead. Default 8.
	QueriesPerUser int
	// SubscriptionsPerSession caps the change streams (subscriptions)
	// one client connection has open. Default 64.
	SubscriptionsPerSession int
	// PreparedPerSession caps the prepared statements one client
	// connection holds (until ClosePreparedStatement, or until they
	// expire idle). Default 256.
	PreparedPerSession int
}

func (l *Limits) ensureDefaults() {
	if l.QueriesPerUser == 0 {
		l.QueriesPerUser = 8
	}
	if l.SubscriptionsPerSession == 0 {
		l.SubscriptionsPerSession = 64
	}
	if l.PreparedPerSession == 0 {
		l.PreparedPerSession = 256
	}
}

// A session is one client connection: the peer address of its gRPC
// connection (host:port). Flight SQL has no session of its own, and an
// ADBC or JDBC connection is one gRPC connection. A client that opens
// many connections gets the caps many times; QueriesPerUser, which
// follows the user, is what bounds an authenticated client's load.

// limitKind is one of the capped resources.
type limitKind int

const (
	limitQueries limitKind = iota
	limitSubscriptions
	limitPrepared
)

// limitError is the error of a call over a cap (ResourceExhausted).
type limitError struct {
	kind  limitKind
	who   string // the user, or the connection's address
	limit int
}

func (e *limitError) Error() string {
	switch e.kind {
	case limitQueries:
		return fmt.Sprintf("too many concurrent queries: %s already runs %d, the most one user (without authentication, one connection) may run at once (the node's --max-queries-per-user); wait for one to finish",
			e.who, e.limit)
	case limitSubscriptions:
		return fmt.Sprintf("too many subscriptions: %s already has %d open, the most one connection may (the node's --max-subscriptions-per-session); close one first",
			e.who, e.limit)
	default:
		return fmt.Sprintf("too many prepared statements: %s already holds %d, the most one connection may (the node's --max-prepared-per-session); close some first",
			e.who, e.limit)
	}
}

// limiter counts what each user and connection holds, and the calls
// refused or stopped at a limit (LimitStats).
type limiter struct {
	lim     Limits
	refused [3]atomic.Int64 // by limitKind
	stopped struct{ timeout, memory, engine atomic.Int64 }
	mu      struct {
		sync.Mutex
		held map[limitKey]int
	}
}

type limitKey struct {
	kind limitKind
	who  string
}

func newLimiter(lim Limits) *limiter {
	l := &limiter{lim: lim}
	l.mu.held = map[limitKey]int{}
	return l
}

func (l *limiter) max(kind limitKind) int {
	switch kind {
	case limitQueries:
		return l.lim.QueriesPerUser
	case limitSubscriptions:
		return l.lim.SubscriptionsPerSession
	}
	return l.lim.PreparedPerSession
}

// whoOf is what a cap of kind counts for the call in ctx: its user for
// queries (its connection when it has none), else its connection.
func whoOf(ctx context.Context, kind limitKind) string {
	if kind == limitQueries {
		if id, ok := auth.FromContext(ctx); ok && id.User != "" {
			return fmt.Sprintf("user %q", id.User)
		}
	}
	if p := peerAddr(ctx); p != "" {
		return "connection " + p
	}
	return "a connection without an address"
}

// acquire takes one of kind for the call in ctx, or fails with a
// *limitError. release gives it back; it may be called more than once.
func (l *limiter) acquire(ctx context.Context, kind limitKind) (release func(), err error) {
	k := limitKey{kind, whoOf(ctx, kind)}
	max := l.max(kind)
	l.mu.Lock()
	defer l.mu.Unlock()
	if max >= 0 && l.mu.held[k] >= max {
		l.refused[kind].Add(1)
		return nil, &limitError{kind: kind, who: k.who, limit: max}
	}
	l.mu.held[k]++
	var once sync.Once
	return func() { once.Do(func() { l.release(k) }) }, nil
}

func (l *limiter) release(k limitKey) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch n := l.mu.held[k]; {
	case n > 1:
		l.mu.held[k] = n - 1
	case n == 1:
		delete(l.mu.held, k) // the map holds only who holds something
	default:
		panic("flightsrv: limit released more often than acquired")
	}
}

// held is how many of kind who holds, for tests.
func (l *limiter) held(kind limitKind, who string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mu.held[limitKey{kind, who}]
}

// limitedEngine is the query engine with Limits.QueriesPerUser applied:
// every statement the server runs goes through it. Describe runs nothing
// and is not counted.
type limitedEngine struct {
	QueryEngine
	l *limiter
}

func (e limitedEngine) Query(ctx context.Context, sql string, args ...any) (scan.RecordStream, *arrow.Schema, error) {
	release, err := e.l.acquire(ctx, limitQueries)
	if err != nil {
		return nil, nil, err
	}
	rs, schema, err := e.QueryEngine.Query(ctx, sql, args...)
	if err != nil {
		e.l.countStop(err)
		release()
		return nil, nil, err
	}
	return &releasingStream{RecordStream: rs, release: release, l: e.l}, schema, nil
}

// releasingStream gives its query's slot back when it is closed, and
// counts its stop at an engine limit.
type releasingStream struct {
	scan.RecordStream
	release func()
	l       *limiter
	failed  bool // Next failed once; its error is sticky
}

func (r *releasingStream) Next() (arrow.RecordBatch, error) {
	rec, err := r.RecordStream.Next()
	if err != nil && !errors.Is(err, io.EOF) && !r.failed {
		r.failed = true
		r.l.countStop(err)
	}
	return rec, err
}

func (r *releasingStream) Close() error {
	defer r.release()
	return r.RecordStream.Close()
}

// countStop counts a statement stopped at one of the engine's limits.
func (l *limiter) countStop(err error) {
	var timeout *duck.QueryTimeoutError
	var mem *duck.QueryMemoryError
	var de *duck.Error
	switch {
	case errors.As(err, &timeout):
		l.stopped.timeout.Add(1)
	case errors.As(err, &mem):
		l.stopped.memory.Add(1)
	case errors.As(err, &de) && strings.HasPrefix(de.Msg, "Out of Memory Error"):
		l.stopped.engine.Add(1)
	}
}

// LimitStats counts, since the server started, the calls refused at each
// of the Limits and the statements the engine stopped at its limits.
type LimitStats struct {
	QueriesPerUser, SubscriptionsPerSession, PreparedPerSession int64 // refused
	QueryTimeout, QueryMemory, EngineMemory                     int64 // stopped
}

// LimitStats reports the calls refused or stopped at a limit.
func (s *Server) LimitStats() LimitStats {
	l := s.limits
	return LimitStats{
		QueriesPerUser: l.refused[limitQueries].Load(), SubscriptionsPerSession: l.refused[limitSubscriptions].Load(),
		PreparedPerSession: l.refused[limitPrepared].Load(),
		QueryTimeout:       l.stopped.timeout.Load(), QueryMemory: l.stopped.memory.Load(), EngineMemory: l.stopped.engine.Load(),
	}
}

// isLimit says whether err is a call over one of the Limits.
func isLimit(err error) bool {
	var le *limitError
	return errors.As(err, &le)
}

// engineLimit maps a statement the engine stopped at one of its limits to
// its code, with a message that names the limit and the flag that sets it
// (toStatus asks it first). DuckDB's own advice on running out of memory
// (SET memory_limit, SET threads) is dropped: the engine's configuration
// is locked.
func engineLimit(err error) (codes.Code, string, bool) {
	var timeout *duck.QueryTimeoutError
	if errors.As(err, &timeout) {
		return codes.DeadlineExceeded, timeout.Error() + ": the query was stopped (the node's --query-timeout sets the limit)", true
	}
	var mem *duck.QueryMemoryError
	if errors.As(err, &mem) {
		return codes.ResourceExhausted, mem.Error() + " and was stopped (the node's --query-memory-limit sets the limit)", true
	}
	var de *duck.Error
	if errors.As(err, &de) && strings.HasPrefix(de.Msg, "Out of Memory Error") {
		first, _, _ := strings.Cut(de.Msg, "\n")
		return codes.ResourceExhausted, strings.TrimSpace(first) + ": the queries running together reached the engine's memory limit (the node's --engine-memory sets it)", true
	}
	return codes.OK, "", false
}
