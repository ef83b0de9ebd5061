package flightsrv

import (
	"context"
	"errors"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lakestream/lakestream/catalog"
	"github.com/lakestream/lakestream/columnarlog"
	"github.com/lakestream/lakestream/internal/arrowmsg"
	"github.com/lakestream/lakestream/internal/scan"
	"github.com/lakestream/lakestream/planner"
	"github.com/lakestream/lakestream/planner/duck"
	"github.com/lakestream/lakestream/tables"
)

// toStatus maps an error to a gRPC status error: the one place that does.
// Errors that are already statuses pass through.
func toStatus(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	var se *tables.SchemaError
	var syn *catalog.SyntaxError
	var de *duck.Error
	var stall stallError
	var spent budgetError
	code := codes.Internal
	if c, ok := authCode(err); ok { // auth.go
		return status.Error(c, err.Error())
	}
	if c, msg, ok := engineLimit(err); ok { // limits.go
		return status.Error(c, msg)
	}
	switch {
	case errors.As(err, &de) && de.Err == nil:
		code = duckCode(de.Msg)
	case errors.Is(err, context.Canceled):
		code = codes.Canceled
	case errors.Is(err, context.DeadlineExceeded):
		code = codes.DeadlineExceeded
	case errors.Is(err, errTicketExpired), errors.Is(err, tables.ErrPinStale):
		code = codes.FailedPrecondition // plan the read again
	case errors.Is(err, tables.ErrQuarantined), errors.Is(err, catalog.ErrDefinitionBroken),
		errors.Is(err, tables.ErrDirExists):
		// The table (or the new table's directory) needs an operator;
		// retrying does not help until then.
		code = codes.FailedPrecondition
	case errors.Is(err, catalog.ErrTableNotFound), errors.Is(err, catalog.ErrDatabaseNotFound),
		errors.Is(err, scan.ErrTableNotFound), errors.Is(err, errUnknownHandle), errors.Is(err, catalog.ErrViewNotFound):
		code = codes.NotFound
	case errors.Is(err, catalog.ErrTableExists), errors.Is(err, catalog.ErrDatabaseExists),
		errors.Is(err, catalog.ErrColumnExists):
		code = codes.AlreadyExists
	case errors.Is(err, catalog.ErrDatabaseNotEmpty), errors.Is(err, tables.ErrHistoryUnavailable), errors.Is(err, errSpread):
		// The lake cannot give that history; a later start can (docs/lake.md).
		code = codes.FailedPrecondition
	case errors.Is(err, tables.ErrWriterSequence):
		code = codes.FailedPrecondition // the writer's sequence went wrong: retrying the same call does not help
	case errors.As(err, &se), errors.As(err, &syn), errors.Is(err, catalog.ErrInvalid),
		errors.Is(err, arrowmsg.ErrMalformed), errors.Is(err, errInvalid), errors.Is(err, planner.ErrInvalid),
		errors.Is(err, duck.ErrNotQuery), errors.As(err, new(*duck.ParamError)), errors.Is(err, duck.ErrViewDepth),
		errors.Is(err, tables.ErrNotPrimaryKey):
		code = codes.InvalidArgument
	case errors.Is(err, arrowmsg.ErrTooLarge), errors.Is(err, columnarlog.ErrBatchTooLarge), errors.Is(err, tables.ErrIdempotentTooLarge),
		errors.As(err, &stall), errors.As(err, &spent), isLimit(err):
		code = codes.ResourceExhausted
	case errors.Is(err, columnarlog.ErrOffsetOutOfRange):
		code = codes.OutOfRange
	case errors.Is(err, errUnsupported), errors.Is(err, arrowmsg.ErrUnsupported), errors.Is(err, errors.ErrUnsupported):
		code = codes.Unimplemented // e.g. a union column in an ingest stream
	case errors.Is(err, tables.ErrWriteConflict):
		code = codes.Aborted // concurrent writes kept changing the rows: run the statement again
	case errors.Is(err, tables.ErrSchemaChanged):
		code = codes.Aborted // retry the write: it is conformed to the new definition
	case errors.Is(err, tables.ErrCaptureRace), errors.Is(err, tables.ErrLakeSnapshotGone), errors.Is(err, tables.ErrKeyIndexRebuilding), errors.Is(err, tables.ErrReplicaUnavailable),
		errors.Is(err, columnarlog.ErrNotStored), // the log repairs itself before the next write
		errors.Is(err, errElsewhere):             // the message names the node that serves it
		code = codes.Unavailable // retry the same call
	case errors.Is(err, columnarlog.ErrCorrupt):
		code = codes.DataLoss // stored data is damaged: a retry meets the same damage
	}
	return status.Error(code, err.Error())
}

// duckCode maps DuckDB's error classes, which lead its messages, to codes:
// what a query got wrong is the client's to fix.
func duckCode(msg string) codes.Code {
	switch {
	case strings.HasPrefix(msg, "Catalog Error: Table") && strings.Contains(msg, "does not exist"):
		return codes.NotFound
	case strings.HasPrefix(msg, "Permission Error"):
		return codes.PermissionDenied
	case strings.HasPrefix(msg, "Not implemented Error"):
		return codes.Unimplemented
	case strings.HasPrefix(msg, "Out of Memory Error"):
		return codes.ResourceExhausted
	case strings.HasPrefix(msg, "INTERNAL Error"), strings.HasPrefix(msg, "FATAL Error"), strings.HasPrefix(msg, "IO Error"):
		return codes.Internal
	}
	return codes.InvalidArgument // parser, binder, catalog, conversion, constraint, out-of-range, invalid input
}

var (
	errInvalid       = errors.New("invalid request")
	errUnsupported   = errors.New("not supported")
	errUnknownHandle = errors.New("unknown or expired prepared statement handle")
)
