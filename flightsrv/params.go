package flightsrv

import (
	"bytes"
	"context"
	"fmt"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/lakestream/lakestream/planner"
)

// Prepared-statement parameters travel as Arrow scalars of the type the
// client sent, and the engine binds each with the DuckDB type of its Arrow
// type (planner/duck's params_arrow.go): 41 sent as int64 is BIGINT 41, as
// DuckDB's own clients bind it. View, dictionary-encoded and extension
// columns are turned into their plain values here.

// paramScalar is the parameter in row r of col.
func paramScalar(col arrow.Array, r int) (scalar.Scalar, error) {
	switch c := col.(type) {
	case *array.StringView:
		if c.IsNull(r) {
			return scalar.MakeNullScalar(arrow.BinaryTypes.String), nil
		}
		return scalar.NewStringScalar(c.Value(r)), nil
	case *array.BinaryView:
		if c.IsNull(r) {
			return scalar.MakeNullScalar(arrow.BinaryTypes.Binary), nil
		}
		return scalar.NewBinaryScalar(memory.NewBufferBytes(c.Value(r)), arrow.BinaryTypes.Binary), nil
	case *array.Dictionary:
		if c.IsNull(r) {
			return scalar.MakeNullScalar(c.Dictionary().DataType()), nil
		}
		return paramScalar(c.Dictionary(), c.GetValueIndex(r))
	case array.ExtensionArray:
		return paramScalar(c.Storage(), r)
	}
	switch col.DataType().ID() {
	case arrow.SPARSE_UNION, arrow.DENSE_UNION, arrow.RUN_END_ENCODED, arrow.LIST_VIEW, arrow.LARGE_LIST_VIEW:
		return nil, fmt.Errorf("type %s is not supported as a parameter", col.DataType())
	}
	return scalar.GetScalar(col, r)
}

// paramCountError is the error of a bound record whose column count is not
// the statement's parameter count.
func paramCountError(want, got int) error {
	return fmt.Errorf("%w: the statement has %d parameters, %d were bound", errInvalid, want, got)
}

// boundSchema is the result schema of a prepared query executed with args:
// the schema described at prepare time when every argument has the type
// DuckDB inferred for its parameter (no rebinding, e.g. WHERE id = ? with
// an int64), else the engine's description with the values bound.
func (s *Server) boundSchema(ctx context.Context, p *prepared, args []any) (*arrow.Schema, bool, error) {
	if len(args) == 0 || s.engine == nil {
		return nil, false, nil
	}
	if p.dataset != nil && p.paramsSchema != nil && p.paramsSchema.NumFields() == len(args) {
		same := true
		for i, a := range args {
			sc, ok := a.(scalar.Scalar)
			if !ok || !sameBinding(sc.DataType(), p.paramsSchema.Field(i).Type) {
				same = false
				break
			}
		}
		if same {
			return nil, false, nil
		}
	}
	schema, err := s.engine.DescribeBound(ctx, p.stmt.SQL, args...)
	return schema, err == nil, err
}

// preparedSchema is the result schema of the prepared statement handle
// with its bound parameters: described, the schema its DoGet sends.
func (s *Server) preparedSchema(ctx context.Context, handle string, described *arrow.Schema) (*arrow.Schema, error) {
	p, err := s.preparedOf(ctx, handle)
	if err != nil {
		return nil, err
	}
	if p.stmt.Kind != planner.KindQuery {
		return described, nil
	}
	args, err := p.args()
	if err != nil {
		return nil, err
	}
	schema, ok, err := s.boundSchema(ctx, p, args)
	if err != nil || !ok {
		return described, err
	}
	return withColumnMetadata(schema, nil), nil
}

// parameterSchema is the ParameterSchema a prepared statement announces:
// DuckDB's parameter types, with TIME and TIMESTAMP parameters in
// milliseconds. Clients that build parameter vectors from this schema take
// the unit from it, and the Flight SQL JDBC driver (18.3) writes
// milliseconds into TIME and TIMESTAMP vectors whatever their unit: with
// microseconds every value it binds would be a thousand times too small
// (measured, tests/interop/test_jdbc_matrix.py). java.sql values carry
// milliseconds there anyway. Clients that send their own types (ADBC from
// Python and Go) are bound at the precision they send.
func parameterSchema(params *arrow.Schema) *arrow.Schema {
	if params == nil {
		return nil
	}
	fields := params.Fields()
	for i, f := range fields {
		switch t := f.Type.(type) {
		case *arrow.Time64Type:
			fields[i].Type = arrow.FixedWidthTypes.Time32ms
		case *arrow.TimestampType:
			fields[i].Type = &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: t.TimeZone}
		}
	}
	md := params.Metadata()
	return arrow.NewSchema(fields, &md)
}

// sameBinding reports whether values of Arrow types a and b bind as the
// same DuckDB type: equal types, or times and timestamps (of the same
// zone presence) in units DuckDB holds as microseconds.
func sameBinding(a, b arrow.DataType) bool {
	if arrow.TypeEqual(a, b) {
		return true
	}
	at, aok := a.(*arrow.TimestampType)
	bt, bok := b.(*arrow.TimestampType)
	if aok && bok {
		return at.Unit != arrow.Nanosecond && bt.Unit != arrow.Nanosecond && (at.TimeZone == "") == (bt.TimeZone == "")
	}
	isTime := func(t arrow.DataType) bool {
		switch t := t.(type) {
		case *arrow.Time32Type:
			return true
		case *arrow.Time64Type:
			return t.Unit != arrow.Nanosecond
		}
		return false
	}
	return isTime(a) && isTime(b)
}

// encodeParams is the parameters of one execution as a query ticket
// carries them: an Arrow IPC stream of one row, column i+1 holding
// parameter i in the type it was bound with. nil for none.
func encodeParams(args []any, mem memory.Allocator) ([]byte, error) {
	if len(args) == 0 {
		return nil, nil
	}
	fields := make([]arrow.Field, len(args))
	cols := make([]arrow.Array, len(args))
	for i, a := range args {
		sc, ok := a.(scalar.Scalar)
		if !ok {
			return nil, fmt.Errorf("parameter %d is a %T, not an Arrow scalar", i+1, a)
		}
		col, err := scalar.MakeArrayFromScalar(sc, 1, mem)
		if err != nil {
			return nil, fmt.Errorf("%w: parameter %d of type %s cannot be carried in a ticket: %v", errInvalid, i+1, sc.DataType(), err)
		}
		defer col.Release()
		fields[i] = arrow.Field{Name: strconv.Itoa(i + 1), Type: sc.DataType(), Nullable: true}
		cols[i] = col
	}
	rec := array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, 1)
	defer rec.Release()
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(rec.Schema()), ipc.WithAllocator(mem))
	if err := w.Write(rec); err != nil {
		return nil, fmt.Errorf("encode parameters: %w", err)
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("encode parameters: %w", err)
	}
	return buf.Bytes(), nil
}

// decodeParams reads the parameters encodeParams encoded.
func decodeParams(b []byte, mem memory.Allocator) ([]any, error) {
	if len(b) == 0 {
		return nil, nil
	}
	r, err := ipc.NewReader(bytes.NewReader(b), ipc.WithAllocator(mem))
	if err != nil {
		return nil, fmt.Errorf("%w: ticket parameters: %v", errInvalid, err)
	}
	defer r.Release()
	if !r.Next() {
		return nil, fmt.Errorf("%w: ticket parameters: no row (%v)", errInvalid, r.Err())
	}
	rec := r.RecordBatch()
	if rec.NumRows() != 1 {
		return nil, fmt.Errorf("%w: ticket parameters: %d rows, want 1", errInvalid, rec.NumRows())
	}
	rows, err := paramRows(rec)
	if err != nil {
		return nil, err
	}
	return rows[0], nil
}
