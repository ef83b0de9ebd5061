package flightsrv

import (
	"context"
	"errors"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lakestream/lakestream/catalog"
	"github.com/lakestream/lakestream/columnarlog"
	"github.com/lakestream/lakestream/internal/arrowmsg"
	"github.com/lakestream/lakestream/internal/scan"
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
	code := codes.Internal
	switch {
	case errors.Is(err, context.Canceled):
		code = codes.Canceled
	case errors.Is(err, context.DeadlineExceeded):
		code = codes.DeadlineExceeded
	case errors.Is(err, catalog.ErrTableNotFound), errors.Is(err, catalog.ErrDatabaseNotFound),
		errors.Is(err, scan.ErrTableNotFound), errors.Is(err, errUnknownHandle):
		code = codes.NotFound
	case errors.Is(err, catalog.ErrTableExists), errors.Is(err, catalog.ErrDatabaseExists),
		errors.Is(err, catalog.ErrColumnExists):
		code = codes.AlreadyExists
	case errors.Is(err, catalog.ErrDatabaseNotEmpty):
		code = codes.FailedPrecondition
	case errors.As(err, &se), errors.As(err, &syn), errors.Is(err, catalog.ErrInvalid),
		errors.Is(err, arrowmsg.ErrMalformed), errors.Is(err, errInvalid):
		code = codes.InvalidArgument
	case errors.Is(err, arrowmsg.ErrTooLarge), errors.Is(err, columnarlog.ErrBatchTooLarge):
		code = codes.ResourceExhausted
	case errors.Is(err, columnarlog.ErrOffsetOutOfRange):
		code = codes.OutOfRange
	case errors.Is(err, errUnsupported):
		code = codes.Unimplemented
	}
	return status.Error(code, err.Error())
}

var (
	errInvalid       = errors.New("invalid request")
	errUnsupported   = errors.New("not supported")
	errUnknownHandle = errors.New("unknown or expired prepared statement handle")
)
