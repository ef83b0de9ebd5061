package tables

import (
	"bytes"
	"errors"
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"

	"github.com/lakestream/lakestream/catalog"
	"github.com/lakestream/lakestream/columnarlog"
	"github.com/lakestream/lakestream/internal/scan"
)

// Batch pruning: a decoded scan skips a stored batch, before decompressing
// it, when the batch's statistics prove that none of its rows satisfies one
// of the scan's filters (scan.Request.Filters, conjuncts). It may only
// prune: a batch is kept whenever that cannot be proven — no statistics
// section, a section of an unknown version, a column without statistics.
//
// A filter's Value is the Go value of the column's Arrow type, as arrow-go
// holds it: int8, int16, int32, int64, uint8, ..., uint64, float32,
// float64, bool, string (utf8 and large_utf8), []byte (binary and
// large_binary), decimal128.Num (unscaled, at the column's scale),
// arrow.Date32, arrow.Date64, arrow.Time32, arrow.Time64 and
// arrow.Timestamp (in the column's unit). Comparisons follow SQL as DuckDB
// evaluates it: a null satisfies no comparison, NaN equals NaN and is
// greater than every other float, strings and binaries compare bytewise.
// The planner converts its constants to these values (planner/duck).
//
// Columns added after a batch was written (ALTER TABLE ADD COLUMN) are
// null in it: such a batch satisfies IS NULL and nothing else on them.

// Comparison operators of scan.Filter.
type op uint8

const (
	opEq op = iota
	opLt
	opLe
	opGt
	opGe
	opIsNull
	opIsNotNull
)

var ops = map[string]op{
	"=": opEq, "<": opLt, "<=": opLe, ">": opGt, ">=": opGe,
	"IS NULL": opIsNull, "IS NOT NULL": opIsNotNull,
}

// bound is a filter's value in the representation of its column's
// statistics kind.
type bound struct {
	kind columnarlog.StatsKind
	i    int64 // StatsInt64, StatsBool
	u    uint64
	f    float64
	d    columnarlog.Int128
	b    []byte
}

// filter is a validated scan.Filter.
type filter struct {
	col int
	op  op
	typ arrow.DataType // the column's type in the scanned schema
	val bound
}

// pruner decides whether a batch may hold rows that satisfy every filter.
// It is immutable and shared by the parts of a plan.
type pruner struct {
	def     *catalog.Table
	filters []filter
	// ncols is the number of table columns; in the changelog view the
	// columns after them are the virtual _change_type, _bucket, _offset
	// and _commit_timestamp.
	ncols int
}

// errBadFilter is wrapped by the errors of filters a scan cannot take.
var errBadFilter = errors.New("invalid scan filter")

// newPruner validates the filters against schema, the scanned schema (the
// table's, or the changelog view's). It returns nil when there is nothing
// to prune by.
func newPruner(def *catalog.Table, schema *arrow.Schema, fs []scan.Filter) (*pruner, error) {
	if len(fs) == 0 {
		return nil, nil
	}
	p := &pruner{def: def, ncols: len(def.Columns)}
	for _, f := range fs {
		vf, err := validateFilter(schema, f)
		if err != nil {
			return nil, err
		}
		p.filters = append(p.filters, vf)
	}
	return p, nil
}

func validateFilter(schema *arrow.Schema, f scan.Filter) (filter, error) {
	if f.Column < 0 || f.Column >= schema.NumFields() {
		return filter{}, fmt.Errorf("%w: column %d out of range", errBadFilter, f.Column)
	}
	o, ok := ops[f.Op]
	if !ok {
		return filter{}, fmt.Errorf("%w: operator %q", errBadFilter, f.Op)
	}
	field := schema.Field(f.Column)
	vf := filter{col: f.Column, op: o, typ: field.Type}
	if o == opIsNull || o == opIsNotNull {
		if f.Value != nil {
			return filter{}, fmt.Errorf("%w: %s on %q with a value", errBadFilter, f.Op, field.Name)
		}
		return vf, nil
	}
	v, ok := boundOf(field.Type, f.Value)
	if !ok {
		return filter{}, fmt.Errorf("%w: %q %s %T: not a value of type %s", errBadFilter, field.Name, f.Op, f.Value, field.Type)
	}
	vf.val = v
	return vf, nil
}

// boundOf converts a filter value of the Go type of column type t (see the
// top of this file). ok is false for a value of another type, and for a
// column type without statistics.
func boundOf(t arrow.DataType, v any) (bound, bool) {
	i := func(x int64) (bound, bool) { return bound{kind: columnarlog.StatsInt64, i: x}, true }
	u := func(x uint64) (bound, bool) { return bound{kind: columnarlog.StatsUint64, u: x}, true }
	f := func(x float64) (bound, bool) { return bound{kind: columnarlog.StatsFloat64, f: x}, true }
	b := func(x []byte) (bound, bool) { return bound{kind: columnarlog.StatsBytes, b: x}, true }
	switch x := v.(type) {
	case int8:
		if t.ID() == arrow.INT8 {
			return i(int64(x))
		}
	case int16:
		if t.ID() == arrow.INT16 {
			return i(int64(x))
		}
	case int32:
		if t.ID() == arrow.INT32 {
			return i(int64(x))
		}
	case int64:
		if t.ID() == arrow.INT64 {
			return i(x)
		}
	case arrow.Date32:
		if t.ID() == arrow.DATE32 {
			return i(int64(x))
		}
	case arrow.Date64:
		if t.ID() == arrow.DATE64 {
			return i(int64(x))
		}
	case arrow.Time32:
		if t.ID() == arrow.TIME32 {
			return i(int64(x))
		}
	case arrow.Time64:
		if t.ID() == arrow.TIME64 {
			return i(int64(x))
		}
	case arrow.Timestamp:
		if t.ID() == arrow.TIMESTAMP {
			return i(int64(x))
		}
	case uint8:
		if t.ID() == arrow.UINT8 {
			return u(uint64(x))
		}
	case uint16:
		if t.ID() == arrow.UINT16 {
			return u(uint64(x))
		}
	case uint32:
		if t.ID() == arrow.UINT32 {
			return u(uint64(x))
		}
	case uint64:
		if t.ID() == arrow.UINT64 {
			return u(x)
		}
	case float32:
		if t.ID() == arrow.FLOAT32 {
			return f(float64(x))
		}
	case float64:
		if t.ID() == arrow.FLOAT64 {
			return f(x)
		}
	case bool:
		if t.ID() == arrow.BOOL {
			bv := bound{kind: columnarlog.StatsBool}
			if x {
				bv.i = 1
			}
			return bv, true
		}
	case decimal128.Num:
		if t.ID() == arrow.DECIMAL128 {
			return bound{kind: columnarlog.StatsDecimal128, d: columnarlog.Int128{Hi: x.HighBits(), Lo: x.LowBits()}}, true
		}
	case string:
		if t.ID() == arrow.STRING || t.ID() == arrow.LARGE_STRING {
			return b([]byte(x))
		}
	case []byte:
		if t.ID() == arrow.BINARY || t.ID() == arrow.LARGE_BINARY {
			return b(x)
		}
	}
	return bound{}, false
}

// mayMatch reports whether batch b, read from bucket, may hold a row that
// satisfies every filter. It returns an error only for a damaged
// statistics section.
func (p *pruner) mayMatch(b columnarlog.Batch, bucket int) (bool, error) {
	var (
		stats   []columnarlog.ColumnStats
		decoded bool
		schema  *arrow.Schema
	)
	rows := b.RecordCount()
	for i := range p.filters {
		f := &p.filters[i]
		if f.col >= p.ncols {
			st, ok := changelogStats(f.col-p.ncols, b, bucket)
			if ok && !f.mayMatch(&st, rows) {
				return false, nil
			}
			continue
		}
		if schema == nil {
			s, err := p.def.ArrowSchemaAt(b.SchemaID())
			if err != nil {
				return true, nil // the decoder reports it
			}
			schema = s
		}
		if f.col >= schema.NumFields() {
			// Added after the batch was written: null in every row.
			if f.op != opIsNull {
				return false, nil
			}
			continue
		}
		if !decoded {
			var err error
			stats, err = b.ColumnStats()
			if errors.Is(err, columnarlog.ErrUnknownStats) {
				stats, err = nil, nil
			}
			if err != nil {
				return false, fmt.Errorf("batch at offset %d: %w", b.BaseOffset(), err)
			}
			if len(stats) != schema.NumFields() {
				stats = nil // not this schema's: unusable
			}
			decoded = true
		}
		if stats == nil || !arrow.TypeEqual(schema.Field(f.col).Type, f.typ) {
			continue
		}
		if !f.mayMatch(&stats[f.col], rows) {
			return false, nil
		}
	}
	return true, nil
}

// changelogStats are the statistics of a changelog view column that the
// batch header gives exactly: _bucket, _offset and _commit_timestamp.
func changelogStats(which int, b columnarlog.Batch, bucket int) (columnarlog.ColumnStats, bool) {
	st := columnarlog.ColumnStats{Kind: columnarlog.StatsInt64, Flags: columnarlog.StatsHasMinMax}
	switch which {
	case 1:
		st.MinInt, st.MaxInt = int64(bucket), int64(bucket)
	case 2:
		st.MinInt, st.MaxInt = b.BaseOffset(), b.LastOffset()
	case 3:
		st.MinInt, st.MaxInt = b.CommitTimestamp(), b.CommitTimestamp()
	default:
		return st, false
	}
	return st, true
}

// bucketMayMatch reports whether the filters on the changelog view's
// _bucket column accept bucket, whatever its batches: a read asks no other
// node for a bucket they rule out (remote.go). A nil pruner accepts all.
func (p *pruner) bucketMayMatch(bucket int) bool {
	if p == nil {
		return true
	}
	st, _ := changelogStats(1, nil, bucket) // _bucket, which reads no batch
	for i := range p.filters {
		if f := &p.filters[i]; f.col == p.ncols+1 && !f.mayMatch(&st, math.MaxInt32) {
			return false
		}
	}
	return true
}

// mayMatch reports whether a column with statistics st, in a batch of rows
// rows, may hold a value that satisfies f. It is the pure heart of pruning.
func (f *filter) mayMatch(st *columnarlog.ColumnStats, rows int32) bool {
	if st.Kind == columnarlog.StatsNone {
		return true
	}
	switch f.op {
	case opIsNull:
		return st.NullCount > 0
	case opIsNotNull:
		return int64(st.NullCount) < int64(rows)
	}
	if st.Kind != f.val.kind {
		return true // statistics of another type: not ours to read
	}
	if st.Kind == columnarlog.StatsFloat64 {
		if math.IsNaN(f.val.f) {
			return true
		}
		// NaN is greater than every number, so satisfies > and >=.
		if st.Has(columnarlog.StatsHasNaN) && (f.op == opGt || f.op == opGe) {
			return true
		}
	}
	if !st.Has(columnarlog.StatsHasMinMax) {
		return false // every value is null (or NaN, handled above)
	}
	// cmpMin and cmpMax compare the bounds with the value; the bytes
	// maximum may be exclusive (every value below it) or absent.
	cmpMin := compareMin(st, &f.val)
	maxOK := func(strict bool) bool {
		if st.Has(columnarlog.StatsMaxUnbounded) {
			return true
		}
		c := compareMax(st, &f.val)
		if strict || st.Has(columnarlog.StatsMaxExclusive) {
			return c > 0
		}
		return c >= 0
	}
	switch f.op {
	case opEq:
		return cmpMin <= 0 && maxOK(false)
	case opLt:
		return cmpMin < 0
	case opLe:
		return cmpMin <= 0
	case opGt:
		return maxOK(true)
	case opGe:
		return maxOK(false)
	}
	return true
}

func compareMin(st *columnarlog.ColumnStats, v *bound) int {
	switch st.Kind {
	case columnarlog.StatsInt64, columnarlog.StatsBool:
		return cmp3(st.MinInt, v.i)
	case columnarlog.StatsUint64:
		return cmp3(st.MinUint, v.u)
	case columnarlog.StatsFloat64:
		return cmp3(st.MinFloat, v.f)
	case columnarlog.StatsDecimal128:
		return st.MinDec.Cmp(v.d)
	case columnarlog.StatsBytes:
		return bytes.Compare(st.MinBytes, v.b)
	}
	return -1
}

func compareMax(st *columnarlog.ColumnStats, v *bound) int {
	switch st.Kind {
	case columnarlog.StatsInt64, columnarlog.StatsBool:
		return cmp3(st.MaxInt, v.i)
	case columnarlog.StatsUint64:
		return cmp3(st.MaxUint, v.u)
	case columnarlog.StatsFloat64:
		return cmp3(st.MaxFloat, v.f)
	case columnarlog.StatsDecimal128:
		return st.MaxDec.Cmp(v.d)
	case columnarlog.StatsBytes:
		return bytes.Compare(st.MaxBytes, v.b)
	}
	return 1
}

func cmp3[T int64 | uint64 | float64](a, b T) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
