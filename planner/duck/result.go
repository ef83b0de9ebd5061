package duck

/*
#include "cabi.h"
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/cdata"
	bindings "github.com/duckdb/duckdb-go-bindings"
)

// The result path: DuckDB → Arrow.
//
// A query runs as a DuckDB streaming result: duckdb_fetch_chunk executes the
// plan until the next chunk (≤ 2048 rows) is ready, so the result is never
// materialised. Each chunk is converted by DuckDB's own Arrow exporter
// (duckdb_data_chunk_to_arrow, the code behind DuckDB's Python/ADBC Arrow
// results) and imported without copying through the Arrow C data
// interface: the record's buffers are DuckDB-allocated and are freed by
// their release callback when the record is released.
//
// Types are DuckDB's Arrow mapping with default settings: VARCHAR → utf8,
// BLOB → binary, DATE → date32, TIME → time64[us], TIMESTAMP →
// timestamp[us], TIMESTAMPTZ → timestamp[us, tz=UTC], DECIMAL(p,s) →
// decimal128(p,s), HUGEINT (e.g. sum(BIGINT)) → decimal128(38,0), INTERVAL →
// month_day_nano, UUID → utf8, LIST/STRUCT/MAP → list/struct/map.

// resultStream is the scan.RecordStream of one Query.
type resultStream struct {
	e      *Engine
	c      *conn
	cancel context.CancelFunc
	// stopInterrupt unregisters the ctx watcher that interrupts DuckDB.
	stopInterrupt func() bool

	stmt   bindings.PreparedStatement
	res    bindings.Result
	hasRes bool
	opts   bindings.ArrowOptions
	schema *arrow.Schema

	// mu serialises Next and Close: a RecordStream has one reader, but
	// Close may come from another goroutine (e.g. a cancelled Flight call).
	mu     sync.Mutex
	done   bool
	err    error // sticky: Next fails the same way after a failure
	closed bool
}

// start prepares, binds and starts the statement. The caller holds s.mu.
func (s *resultStream) start(sql string, args []any) error {
	ctx := s.c.qs.ctx
	stmt, err := s.e.prepare(s.c, sql)
	if err != nil {
		return err
	}
	s.stmt = stmt
	if err := bindArgs(stmt, args); err != nil {
		return err
	}
	s.stopInterrupt = context.AfterFunc(ctx, s.c.interrupt)
	if ctx.Err() != nil {
		return ctxError(ctx)
	}
	if bindings.ExecutePreparedStreaming(stmt, &s.res) == bindings.StateError {
		msg := bindings.ResultError(&s.res)
		bindings.DestroyResult(&s.res)
		if err := conversionError(stmt, args, msg); err != nil {
			return err // which parameter (params_errors.go)
		}
		return s.failure(msg)
	}
	s.hasRes = true
	s.opts = arrowOptions(s.c)
	s.schema, err = resultSchema(s.opts, &s.res)
	return err
}

// failure builds the error of a failed execution or fetch. After an
// interrupt DuckDB reports "INTERRUPT Error: Interrupted!"; the context
// says why.
func (s *resultStream) failure(msg string) error {
	if ctx := s.c.qs.ctx; ctx.Err() != nil {
		return fmt.Errorf("duck: query: %w (%s)", ctxError(ctx), strings.TrimSpace(msg))
	}
	return duckError(msg, s.c.qs.getErr())
}

// Next returns the next record batch, or (nil, io.EOF) at the end.
func (s *resultStream) Next() (arrow.RecordBatch, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errors.New("duck: next on closed stream")
	}
	for !s.done && s.err == nil {
		chunk := bindings.FetchChunk(s.res)
		if chunk.Ptr == nil {
			s.done = true
			if msg := bindings.ResultError(&s.res); msg != "" {
				s.err = s.failure(msg)
			}
			break
		}
		rec, err := s.convert(chunk)
		bindings.DestroyDataChunk(&chunk)
		if err != nil {
			s.err = err
			break
		}
		if rec != nil {
			return rec, nil
		}
	}
	if s.err != nil {
		return nil, s.err
	}
	return nil, io.EOF
}

// convert exports one DuckDB chunk as an Arrow record; nil for an empty
// chunk.
func (s *resultStream) convert(chunk bindings.DataChunk) (arrow.RecordBatch, error) {
	if bindings.DataChunkGetSize(chunk) == 0 {
		return nil, nil
	}
	arr := (*C.struct_ArrowArray)(C.calloc(1, C.sizeof_struct_ArrowArray))
	defer C.free(unsafe.Pointer(arr))
	if err := errorData(C.duckdb_data_chunk_to_arrow(s.opts.Ptr, chunk.Ptr, arr)); err != nil {
		return nil, fmt.Errorf("duck: export chunk to arrow: %w", err)
	}
	rec, err := cdata.ImportCRecordBatchWithSchema((*cdata.CArrowArray)(unsafe.Pointer(arr)), s.schema)
	if err != nil {
		C.ls_release_array(arr)
		return nil, fmt.Errorf("duck: import arrow chunk: %w", err)
	}
	return rec, nil
}

// Close stops the query if it is still running and frees its resources.
func (s *resultStream) Close() error {
	s.cancel() // stops the scans' readers first, so no DuckDB thread waits on them
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	if s.stopInterrupt != nil {
		s.stopInterrupt()
	}
	if s.hasRes {
		if !s.done {
			s.c.interrupt()
		}
		bindings.DestroyResult(&s.res)
	}
	if s.opts.Ptr != nil {
		bindings.DestroyArrowOptions(&s.opts)
	}
	if s.stmt.Ptr != nil {
		bindings.DestroyPrepare(&s.stmt)
	}
	s.e.disconnect(s.c)
	s.e.removeStream(s)
	return nil
}

// arrowOptions returns the Arrow export settings of a connection.
func arrowOptions(c *conn) bindings.ArrowOptions {
	var o bindings.ArrowOptions
	bindings.ConnectionGetArrowOptions(c.c, &o)
	return o
}

// errorData converts a duckdb_error_data, destroying it.
func errorData(p unsafe.Pointer) error {
	if p == nil {
		return nil
	}
	ed := bindings.ErrorData{Ptr: p}
	defer bindings.DestroyErrorData(&ed)
	if !bindings.ErrorDataHasError(ed) {
		return nil
	}
	return errors.New(bindings.ErrorDataMessage(ed))
}
