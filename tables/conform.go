package tables

import (
	"context"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lakestream/lakestream/internal/scan"
)

// SchemaError reports an incoming record that does not fit the table. It
// names the column.
type SchemaError struct {
	Table  string
	Column string
	Msg    string
}

func (e *SchemaError) Error() string {
	if e.Column == "" {
		return fmt.Sprintf("table %s: %s", e.Table, e.Msg)
	}
	return fmt.Sprintf("table %s, column %q: %s", e.Table, e.Column, e.Msg)
}

// conform returns rec as a record of the table schema: columns matched by
// name (exactly, else case-insensitively), missing nullable columns filled
// with nulls, safe widenings cast. Anything else is a *SchemaError. The
// caller releases the result.
func conform(table string, target *arrow.Schema, rec arrow.RecordBatch, mem memory.Allocator) (arrow.RecordBatch, error) {
	in := rec.Schema()
	// Incoming data is only as good as its sender: offsets that run
	// backwards or past their data would crash the bucket split or be
	// stored and crash every reader.
	for i, c := range rec.Columns() {
		if err := validateFull(c); err != nil {
			return nil, &SchemaError{table, in.Field(i).Name, "invalid data: " + err.Error()}
		}
	}
	if in.Equal(target) {
		// The sender's schema says NOT NULL; its data may disagree.
		for i, f := range target.Fields() {
			if n := rec.Column(i).NullN(); !f.Nullable && n > 0 {
				return nil, &SchemaError{table, f.Name, fmt.Sprintf("NOT NULL, but %d of %d values are null", n, rec.NumRows())}
			}
		}
		rec.Retain()
		return rec, nil
	}
	used := make([]bool, in.NumFields())
	cols := make([]arrow.Array, 0, target.NumFields())
	defer func() {
		for _, c := range cols {
			c.Release()
		}
	}()
	for _, f := range target.Fields() {
		i := scan.FieldIndex(in, f.Name)
		if i < 0 {
			if !f.Nullable {
				return nil, &SchemaError{table, f.Name, "missing, and the column is NOT NULL"}
			}
			cols = append(cols, array.MakeArrayOfNull(mem, f.Type, int(rec.NumRows())))
			continue
		}
		used[i] = true
		col, err := conformColumn(f, rec.Column(i), mem)
		if err != nil {
			return nil, &SchemaError{table, f.Name, err.Error()}
		}
		cols = append(cols, col)
	}
	for i, u := range used {
		if !u {
			return nil, &SchemaError{table, in.Field(i).Name, "not a column of the table (columns: " + fieldNames(target) + ")"}
		}
	}
	out := array.NewRecordBatch(target, cols, rec.NumRows())
	return out, nil
}

func fieldNames(s *arrow.Schema) string {
	names := make([]string, s.NumFields())
	for i, f := range s.Fields() {
		names[i] = f.Name
	}
	return strings.Join(names, ", ")
}

// validateFull is array.ValidateFull, which panics rather than fails on
// some bad input: arrow-go v18.8's String.ValidateFull slices the data at
// each offset before it checks that the offsets do not decrease, so an
// offset past the data followed by a smaller one indexes out of range
// (found by FuzzStoreSent). The panic is the input's fault, and is
// reported as such.
func validateFull(c arrow.Array) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("offsets out of range of the data: %v", r)
		}
	}()
	return array.ValidateFull(c)
}

// conformColumn checks one column's nullability and type, casting safe
// widenings. It returns a new reference.
func conformColumn(f arrow.Field, col arrow.Array, mem memory.Allocator) (arrow.Array, error) {
	plain, err := plainArray(col, mem) // views, large, dictionary, extension types (conform_types.go)
	if err != nil {
		return nil, err
	}
	defer plain.Release()
	col = plain
	if !f.Nullable && col.NullN() > 0 {
		return nil, fmt.Errorf("NOT NULL, but %d of %d values are null", col.NullN(), col.Len())
	}
	if arrow.TypeEqual(col.DataType(), f.Type) {
		col.Retain()
		return col, nil
	}
	if !safeCast(col.DataType(), f.Type) {
		return nil, fmt.Errorf("got %s, the table has %s; no safe conversion", col.DataType(), f.Type)
	}
	out, err := compute.CastArray(compute.WithAllocator(context.Background(), mem), col, compute.SafeCastOptions(f.Type))
	if err != nil {
		return nil, fmt.Errorf("converting %s to %s: %v", col.DataType(), f.Type, err)
	}
	return out, nil
}

// safeCast says whether from converts to to without changing any value's
// meaning: integer and float widening, string and binary of other offset
// widths, timestamps of other units or zones (the cast checks that no
// precision is lost), dates.
func safeCast(from, to arrow.DataType) bool {
	rank := func(t arrow.Type) (kind, size int) {
		switch t {
		case arrow.INT8:
			return 1, 1
		case arrow.INT16:
			return 1, 2
		case arrow.INT32:
			return 1, 4
		case arrow.INT64:
			return 1, 8
		case arrow.UINT8:
			return 2, 1
		case arrow.UINT16:
			return 2, 2
		case arrow.UINT32:
			return 2, 4
		case arrow.FLOAT16:
			return 3, 2
		case arrow.FLOAT32:
			return 3, 4
		case arrow.FLOAT64:
			return 3, 8
		}
		return 0, 0
	}
	fk, fs := rank(from.ID())
	tk, ts := rank(to.ID())
	switch {
	case fk == 1 && tk == 1, fk == 3 && tk == 3:
		return fs < ts
	case fk == 2 && tk == 1:
		return fs < ts // unsigned into a wider signed integer
	case (fk == 1 || fk == 2) && tk == 3:
		return fs < ts && ts == 8 || fs <= 2 && ts == 4
	}
	switch to.ID() {
	case arrow.STRING:
		return from.ID() == arrow.LARGE_STRING || from.ID() == arrow.STRING_VIEW
	case arrow.BINARY:
		return from.ID() == arrow.LARGE_BINARY || from.ID() == arrow.BINARY_VIEW || from.ID() == arrow.FIXED_SIZE_BINARY
	case arrow.TIMESTAMP:
		return from.ID() == arrow.TIMESTAMP || from.ID() == arrow.DATE32 || from.ID() == arrow.DATE64
	case arrow.DATE32:
		return from.ID() == arrow.DATE64
	case arrow.TIME64:
		return from.ID() == arrow.TIME32 || from.ID() == arrow.TIME64
	case arrow.DECIMAL128:
		if fd, ok := from.(*arrow.Decimal128Type); ok {
			td := to.(*arrow.Decimal128Type)
			return fd.Scale <= td.Scale && fd.Precision-fd.Scale <= td.Precision-td.Scale
		}
		return fk == 1 || fk == 2
	}
	return false
}
