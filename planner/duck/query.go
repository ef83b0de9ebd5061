package duck

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	bindings "github.com/duckdb/duckdb-go-bindings"

	"github.com/lakestream/lakestream/internal/scan"
)

// ErrNotQuery is returned for a statement Query does not run: anything but
// SELECT (with WITH, VALUES, TABLE, ...) and EXPLAIN. DDL and DML on
// Lakestream tables are the planner's job; DuckDB's own catalog is not
// writable from outside.
var ErrNotQuery = errors.New("duck: not a query")

// Query runs one SELECT (DuckDB dialect) with optional positional
// parameters (? or $1) and streams the result as Arrow record batches. It
// does not buffer the result: DuckDB produces chunks as the stream is read.
// Cancelling ctx interrupts the query and fails the stream's Next; the
// caller must Close the stream either way.
func (e *Engine) Query(ctx context.Context, sql string, args ...any) (scan.RecordStream, *arrow.Schema, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	qctx, cancel := context.WithCancel(ctx)
	c, err := e.connect(qctx)
	if err != nil {
		cancel()
		return nil, nil, err
	}
	e.streams.Add(1)
	s := &resultStream{e: e, c: c, cancel: cancel}
	if err := s.start(sql, args); err != nil {
		s.Close()
		return nil, nil, err
	}
	return s, s.schema, nil
}

// Describe returns the result schema of a statement and the schema of its
// parameters without running it (Flight SQL's DatasetSchema and
// ParameterSchema). Parameters are named "1", "2", ...; a parameter whose
// type DuckDB cannot infer is of Arrow type null, as ADBC specifies.
func (e *Engine) Describe(ctx context.Context, sql string) (result, params *arrow.Schema, err error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	c, err := e.connect(ctx)
	if err != nil {
		return nil, nil, err
	}
	defer e.disconnect(c)
	stmt, err := prepare(c, sql)
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

// prepare parses and binds exactly one statement and checks that it is a
// query. Binding resolves Lakestream tables (lakestream_scan's bind) but
// starts no scan.
func prepare(c *conn, sql string) (bindings.PreparedStatement, error) {
	var stmts bindings.ExtractedStatements
	n := bindings.ExtractStatements(c.c, sql, &stmts)
	defer bindings.DestroyExtracted(&stmts)
	switch {
	case n == 0:
		if msg := bindings.ExtractStatementsError(stmts); msg != "" {
			return bindings.PreparedStatement{}, duckError(msg, nil)
		}
		return bindings.PreparedStatement{}, fmt.Errorf("%w: empty statement", ErrNotQuery)
	case n > 1:
		return bindings.PreparedStatement{}, fmt.Errorf("%w: %d statements, want one", ErrNotQuery, n)
	}
	var stmt bindings.PreparedStatement
	if bindings.PrepareExtractedStatement(c.c, stmts, 0, &stmt) == bindings.StateError {
		msg := bindings.PrepareError(stmt)
		bindings.DestroyPrepare(&stmt)
		return bindings.PreparedStatement{}, duckError(msg, c.qs.getErr())
	}
	if err := checkQuery(stmt); err != nil {
		bindings.DestroyPrepare(&stmt)
		return bindings.PreparedStatement{}, err
	}
	return stmt, nil
}

// checkQuery refuses everything but SELECT and plain EXPLAIN.
//
// The statement type of the prepared statement is DuckDB's own
// classification after parsing, so no SQL text is inspected here. EXPLAIN
// ANALYZE executes its statement, so it is allowed only for a SELECT: its
// result is DuckDB's plan text, and DuckDB reports the explained
// statement's type nowhere else, so that one case is checked on the text.
func checkQuery(stmt bindings.PreparedStatement) error {
	switch t := bindings.PreparedStatementType(stmt); t {
	case bindings.StatementTypeSelect, bindings.StatementTypeExplain:
		return nil
	default:
		return fmt.Errorf("%w: %s statement; only SELECT runs here", ErrNotQuery, statementTypeName(t))
	}
}

func statementTypeName(t bindings.StatementType) string {
	names := map[bindings.StatementType]string{
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
	if n, ok := names[t]; ok {
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
