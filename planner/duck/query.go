package duck

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	bindings "github.com/duckdb/duckdb-go-bindings"

	"github.com/lakestream/lakestream/internal/scan"
)

// ErrNotQuery is returned for a statement Query does not run: anything but
// SELECT (with WITH, VALUES, TABLE, ...) and EXPLAIN. DDL and DML on
// Lakestream tables are the planner's job; DuckDB's own catalog is not
// writable from outside.
var ErrNotQuery = errors.New("not a query")

// Query runs one SELECT (DuckDB dialect) with optional positional
// parameters (? or $1) and streams the result as Arrow record batches. It
// does not buffer the result: DuckDB produces chunks as the stream is read.
// Cancelling ctx, or Options.QueryTimeout passing, interrupts the query and
// fails the stream's Next; the caller must Close the stream either way
// (Engine.Close closes streams left open).
func (e *Engine) Query(ctx context.Context, sql string, args ...any) (scan.RecordStream, *arrow.Schema, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	qctx, cancel, stop := e.statementContext(ctx)
	c, err := e.connect(qctx, stop)
	if err != nil {
		cancel()
		return nil, nil, err
	}
	s := &resultStream{e: e, c: c, cancel: cancel}
	s.mu.Lock() // Engine.Close may close s once added: not while it starts
	if !e.addStream(s) {
		s.mu.Unlock()
		cancel()
		e.disconnect(c)
		return nil, nil, ErrClosed
	}
	err = s.start(sql, args)
	s.mu.Unlock()
	if err != nil {
		s.Close()
		return nil, nil, err
	}
	return s, s.schema, nil
}

// Describe returns the result schema of a statement and the schema of its
// parameters without running it (Flight SQL's DatasetSchema and
// ParameterSchema). Parameters are named "1", "2", ...; a parameter whose
// type DuckDB cannot infer is of Arrow type null, as ADBC specifies. The
// result schema is nil when it depends on parameter types (SELECT ? AS p):
// DuckDB knows it only once the parameters are bound.
func (e *Engine) Describe(ctx context.Context, sql string) (result, params *arrow.Schema, err error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	ctx, cancel, stop := e.statementContext(ctx)
	defer cancel()
	c, err := e.connect(ctx, stop)
	if err != nil {
		return nil, nil, err
	}
	defer e.disconnect(c)
	stmt, err := e.prepare(c, sql)
	if err != nil {
		return nil, nil, err
	}
	defer bindings.DestroyPrepare(&stmt)
	opts := arrowOptions(c)
	defer bindings.DestroyArrowOptions(&opts)
	if result, err = preparedSchema(opts, stmt); err != nil {
		return nil, nil, err
	}
	if params, err = paramSchema(opts, stmt); err != nil {
		return nil, nil, err
	}
	return result, params, nil
}

// statementContext is the context of one statement: ctx, bounded by
// Options.QueryTimeout, and stop, which ends it with a cause (the memory
// watchdog's, memlimit.go).
func (e *Engine) statementContext(ctx context.Context) (context.Context, context.CancelFunc, context.CancelCauseFunc) {
	ctx, stop := context.WithCancelCause(ctx)
	if e.opts.QueryTimeout <= 0 {
		return ctx, func() { stop(context.Canceled) }, stop
	}
	ctx, cancel := context.WithTimeoutCause(ctx, e.opts.QueryTimeout, &QueryTimeoutError{Timeout: e.opts.QueryTimeout})
	return ctx, func() { cancel(); stop(context.Canceled) }, stop
}

// QueryTimeoutError is the error of a statement that ran past
// Options.QueryTimeout. It is a context.DeadlineExceeded.
type QueryTimeoutError struct {
	Timeout time.Duration
}

func (e *QueryTimeoutError) Error() string {
	return fmt.Sprintf("query timeout of %s exceeded", e.Timeout)
}

func (e *QueryTimeoutError) Unwrap() error { return context.DeadlineExceeded }

// ctxError is the error of a statement whose context ended: its cause (a
// *QueryTimeoutError, when the timeout passed), else ctx.Err().
func ctxError(ctx context.Context) error {
	if cause := context.Cause(ctx); cause != nil {
		return cause
	}
	return ctx.Err()
}

// errUnanalyzable is reported by bind for a statement whose table names
// could not be analysed (names.go); prepare turns it into ErrNotQuery.
var errUnanalyzable = errors.New("statement cannot be analysed")

// prepare parses and binds exactly one statement and checks that it is a
// query. Binding resolves Lakestream tables (lakestream_scan's bind) but
// starts no scan.
func (e *Engine) prepare(c *conn, sql string) (bindings.PreparedStatement, error) {
	if err := checkOne(c, sql); err != nil {
		fixed, ok := e.repair(sql) // repair.go
		if !ok || checkOne(c, fixed) != nil {
			return bindings.PreparedStatement{}, err
		}
		sql = fixed
	}
	sql, err := e.expandViews(c.qs.ctx, sql) // views.go
	if err != nil {
		return bindings.PreparedStatement{}, err
	}
	a, err := e.analyze(sql)
	if err != nil {
		return bindings.PreparedStatement{}, err
	}
	c.qs.setNames(a)
	var stmt bindings.PreparedStatement
	if bindings.Prepare(c.c, a.sql, &stmt) == bindings.StateError {
		msg := bindings.PrepareError(stmt)
		bindings.DestroyPrepare(&stmt)
		return bindings.PreparedStatement{}, e.prepareError(c, sql, a, msg)
	}
	if err := checkQuery(stmt, a); err != nil {
		bindings.DestroyPrepare(&stmt)
		return bindings.PreparedStatement{}, err
	}
	return stmt, nil
}

// prepareError explains a failed prepare. DuckDB binds before it reports a
// statement's type, so INSERT INTO a table DuckDB does not have fails as a
// catalog error; a statement that is not a SELECT is reported as
// ErrNotQuery first, whatever else is wrong with it.
func (e *Engine) prepareError(c *conn, sql string, a analysis, msg string) error {
	cause := c.qs.getErr()
	if a.check != namesParsed {
		if tree, err := e.serialize(sql); err == nil && tree == nil {
			// DuckDB's message says what it refused (COPY ... TO a file);
			// ErrNotQuery's text, "not a query", leads it once.
			return &Error{Msg: "not a query: only SELECT statements run here (" + strings.TrimSpace(msg) + ")", Err: ErrNotQuery}
		}
		if errors.Is(cause, errUnanalyzable) {
			return fmt.Errorf("%w: cannot analyse the table names of this statement", ErrNotQuery)
		}
	}
	return duckError(msg, cause)
}

// checkOne checks that sql is exactly one statement; a syntax error comes
// back here with DuckDB's message and position.
func checkOne(c *conn, sql string) error {
	var stmts bindings.ExtractedStatements
	n := bindings.ExtractStatements(c.c, sql, &stmts)
	defer bindings.DestroyExtracted(&stmts)
	switch {
	case n == 0:
		if msg := bindings.ExtractStatementsError(stmts); msg != "" {
			return duckError(msg, nil)
		}
		return fmt.Errorf("%w: empty statement", ErrNotQuery)
	case n > 1:
		return fmt.Errorf("%w: %d statements, want one", ErrNotQuery, n)
	}
	return nil
}

// checkQuery refuses everything but SELECT and EXPLAIN of a SELECT.
//
// The statement type is DuckDB's own classification. EXPLAIN ANALYZE runs
// the statement it explains, and DuckDB reports that statement's type
// nowhere, so an EXPLAIN is accepted only if its body serialised, which
// json_serialize_sql does for SELECT statements only (names.go).
func checkQuery(stmt bindings.PreparedStatement, a analysis) error {
	switch t := bindings.PreparedStatementType(stmt); t {
	case bindings.StatementTypeSelect:
		return nil
	case bindings.StatementTypeExplain:
		if a.check == namesParsed {
			return nil
		}
		return fmt.Errorf("%w: EXPLAIN of a statement that is not a SELECT", ErrNotQuery)
	default:
		return fmt.Errorf("%w: %s statement; only SELECT runs here", ErrNotQuery, statementTypeName(t))
	}
}

var statementTypeNames = map[bindings.StatementType]string{
	bindings.StatementTypeInsert: "INSERT", bindings.StatementTypeUpdate: "UPDATE",
	bindings.StatementTypeDelete: "DELETE", bindings.StatementTypePrepare: "PREPARE",
	bindings.StatementTypeCreate: "CREATE", bindings.StatementTypeExecute: "EXECUTE",
	bindings.StatementTypeAlter: "ALTER", bindings.StatementTypeTransaction: "TRANSACTION",
	bindings.StatementTypeCopy: "COPY", bindings.StatementTypeAnalyze: "ANALYZE",
	bindings.StatementTypeVariableSet: "SET VARIABLE", bindings.StatementTypeCreateFunc: "CREATE FUNCTION",
	bindings.StatementTypeDrop: "DROP", bindings.StatementTypeExport: "EXPORT",
	bindings.StatementTypePragma: "PRAGMA", bindings.StatementTypeVacuum: "VACUUM",
	bindings.StatementTypeCall: "CALL", bindings.StatementTypeSet: "SET",
	bindings.StatementTypeLoad: "LOAD", bindings.StatementTypeAttach: "ATTACH",
	bindings.StatementTypeDetach: "DETACH", bindings.StatementTypeMulti: "MULTI",
}

func statementTypeName(t bindings.StatementType) string {
	if n, ok := statementTypeNames[t]; ok {
		return n
	}
	return fmt.Sprintf("type %d", int(t))
}

// duckError turns a DuckDB error message into an error. When a callback
// reported a Go error for this statement (e.g. an unknown table), that
// error is kept in the chain so callers can test it with errors.Is.
func duckError(msg string, cause error) error {
	msg = strings.TrimSpace(msg)
	if cause != nil {
		return &Error{Msg: msg, Err: cause}
	}
	return &Error{Msg: msg}
}

// Error is an error reported by DuckDB. Msg is DuckDB's message, which for
// parser errors includes the position ("LINE 1: ...").
type Error struct {
	Msg string
	Err error // the Go error behind it, if a Lakestream callback failed
}

func (e *Error) Error() string {
	if e.Err != nil && !strings.Contains(e.Msg, e.Err.Error()) {
		return e.Msg + ": " + e.Err.Error()
	}
	return e.Msg
}

func (e *Error) Unwrap() error { return e.Err }
