package planner

import (
	"bytes"
	"cmp"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Filter is the WHERE of a changes() subscription bound to the changelog
// schema. The followers read the selected columns followed by the filter
// columns that are not selected; the filter keeps rows, then drops those
// extra columns. It is evaluated with plain loops over the typed arrays:
// an earlier version built on arrow's compute kernels hung under -race for
// reasons never found, and the conditions are simple enough not to need
// them.
type Filter struct {
	conds []boundCond
	// out is the number of leading read columns that are sent.
	out    int
	schema *arrow.Schema // the sent schema
}

type boundCond struct {
	col  int // index into the read columns
	pred predicate
}

// predicate narrows a selection: it clears sel[i] for the rows of arr that
// do not meet it, and leaves cleared rows alone.
type predicate interface {
	keep(arr arrow.Array, sel []bool) error
}

// BindFilter checks where against the changelog schema and returns the
// columns to read (cols, then the filter's other columns) and the filter,
// nil when there is no WHERE. A literal that does not convert to its
// column's type is an ErrInvalid naming the column.
func BindFilter(schema *arrow.Schema, cols []int, where []Condition) ([]int, *Filter, error) {
	if len(where) == 0 {
		return cols, nil, nil
	}
	read := append([]int(nil), cols...)
	f := &Filter{out: len(cols), schema: selectFields(schema, cols)}
	for _, c := range where {
		idx := ColumnIndex(schema, c.Column)
		if idx < 0 {
			return nil, nil, fmt.Errorf("%w: changes(): WHERE %s: column %q not found in changes", ErrInvalid, c, c.Column)
		}
		pred, err := bindPredicate(schema.Field(idx), c)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: changes(): WHERE %s: %v", ErrInvalid, c, err)
		}
		pos := indexOf(read, idx)
		if pos < 0 {
			pos = len(read)
			read = append(read, idx)
		}
		f.conds = append(f.conds, boundCond{col: pos, pred: pred})
	}
	return read, f, nil
}

// ColumnIndex is the index of the field of s named name: the exact name
// if there is one, else the first that matches without case, as unquoted
// names are matched; -1 when none does.
func ColumnIndex(s *arrow.Schema, name string) int {
	for i, f := range s.Fields() {
		if f.Name == name {
			return i
		}
	}
	for i, f := range s.Fields() {
		if strings.EqualFold(f.Name, name) {
			return i
		}
	}
	return -1
}

// selectFields is the schema of the columns cols of s, in that order.
func selectFields(s *arrow.Schema, cols []int) *arrow.Schema {
	fields := make([]arrow.Field, len(cols))
	for i, c := range cols {
		fields[i] = s.Field(c)
	}
	return arrow.NewSchema(fields, nil)
}

func indexOf(xs []int, x int) int {
	for i, v := range xs {
		if v == x {
			return i
		}
	}
	return -1
}

// Apply returns the rows of rec that meet every condition, with the sent
// columns only, or nil when none does. It takes ownership of rec. Kept
// rows keep their _offset: a consumer resumes from them as from an
// unfiltered stream.
func (f *Filter) Apply(rec arrow.RecordBatch, mem memory.Allocator) (arrow.RecordBatch, error) {
	defer rec.Release()
	n := int(rec.NumRows())
	sel := make([]bool, n)
	for i := range sel {
		sel[i] = true
	}
	for _, c := range f.conds {
		if err := c.pred.keep(rec.Column(c.col), sel); err != nil {
			return nil, err
		}
	}
	runs := keptRuns(sel)
	if len(runs) == 0 {
		return nil, nil
	}
	cols := make([]arrow.Array, f.out)
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	kept := 0
	for _, r := range runs {
		kept += r[1] - r[0]
	}
	for i := range cols {
		var err error
		if cols[i], err = takeRuns(rec.Column(i), runs, mem); err != nil {
			return nil, err
		}
	}
	return array.NewRecordBatch(f.schema, cols, int64(kept)), nil
}

// keptRuns are the [start, end) runs of selected rows.
func keptRuns(sel []bool) [][2]int {
	var runs [][2]int
	for i := 0; i < len(sel); {
		if !sel[i] {
			i++
			continue
		}
		j := i
		for j < len(sel) && sel[j] {
			j++
		}
		runs = append(runs, [2]int{i, j})
		i = j
	}
	return runs
}

// takeRuns returns the runs of arr: a zero-copy slice for one run, a
// concatenation of the slices for more.
func takeRuns(arr arrow.Array, runs [][2]int, mem memory.Allocator) (arrow.Array, error) {
	if len(runs) == 1 {
		return array.NewSlice(arr, int64(runs[0][0]), int64(runs[0][1])), nil
	}
	parts := make([]arrow.Array, len(runs))
	for i, r := range runs {
		parts[i] = array.NewSlice(arr, int64(r[0]), int64(r[1]))
	}
	defer func() {
		for _, p := range parts {
			p.Release()
		}
	}()
	return array.Concatenate(parts, mem)
}

// holds reports whether a comparison whose operands compare as c (-1, 0,
// 1) meets op.
func holds(op Op, c int) bool {
	switch op {
	case OpEq:
		return c == 0
	case OpNe:
		return c != 0
	case OpLt:
		return c < 0
	case OpLe:
		return c <= 0
	case OpGt:
		return c > 0
	case OpGe:
		return c >= 0
	}
	return false
}

// bindPredicate converts c's literal to field's type. The conversions are
// DuckDB's for a constant compared with a column: the constant takes the
// column's type, except that a fractional number compared with an integer
// column compares numerically (id > 1.5 keeps 2).
func bindPredicate(field arrow.Field, c Condition) (predicate, error) {
	if c.Op == OpIsNull || c.Op == OpIsNotNull {
		return nullPred{notNull: c.Op == OpIsNotNull}, nil
	}
	lit := c.Value
	switch dt := field.Type.(type) {
	case *arrow.Int8Type, *arrow.Int16Type, *arrow.Int32Type, *arrow.Int64Type:
		r, err := integerLiteral(lit)
		if err != nil {
			return nil, err
		}
		return newIntPred(c.Op, r), nil
	case *arrow.TimestampType:
		r, err := timestampLiteral(lit)
		if err != nil {
			return nil, err
		}
		return newIntPred(c.Op, r), nil
	case *arrow.Date32Type:
		r, err := dateLiteral(lit)
		if err != nil {
			return nil, err
		}
		return newIntPred(c.Op, r), nil
	case *arrow.Time64Type:
		r, err := timeLiteral(lit, dt.Unit)
		if err != nil {
			return nil, err
		}
		return newIntPred(c.Op, r), nil
	case *arrow.Float32Type, *arrow.Float64Type:
		v, err := floatLiteral(lit, field.Type.ID() == arrow.FLOAT32)
		if err != nil {
			return nil, err
		}
		return floatPred{op: c.Op, v: v}, nil
	case *arrow.Decimal128Type:
		r, err := numericLiteral(lit)
		if err != nil {
			return nil, err
		}
		return newDecimalPred(c.Op, r, dt.Scale), nil
	case *arrow.StringType, *arrow.BinaryType:
		if lit.Kind != LitString {
			return nil, fmt.Errorf("%s is %s: compare it with a 'string'", field.Name, field.Type)
		}
		return bytesPred{op: c.Op, v: []byte(lit.Text)}, nil
	case *arrow.BooleanType:
		v, err := boolLiteral(lit)
		if err != nil {
			return nil, err
		}
		return boolPred{op: c.Op, v: v}, nil
	}
	return nil, fmt.Errorf("cannot filter on %s of type %s", field.Name, field.Type)
}

func literalError(lit Literal, want string) error {
	return fmt.Errorf("cannot convert %s literal %q to %s", lit.Kind, lit.Text, want)
}

// integerLiteral reads a literal compared with an integer column: any
// number, or a string holding an integer (DuckDB casts it to the column's
// type).
func integerLiteral(lit Literal) (*big.Rat, error) {
	switch lit.Kind {
	case LitNumber:
		return numericLiteral(lit)
	case LitString:
		if v, err := strconv.ParseInt(strings.TrimSpace(lit.Text), 10, 64); err == nil {
			return new(big.Rat).SetInt64(v), nil
		}
	}
	return nil, literalError(lit, "an integer")
}

// numericLiteral reads a number exactly, from a number or a string.
func numericLiteral(lit Literal) (*big.Rat, error) {
	if lit.Kind == LitNumber || lit.Kind == LitString {
		if r, ok := new(big.Rat).SetString(strings.TrimSpace(lit.Text)); ok {
			return r, nil
		}
	}
	return nil, literalError(lit, "a number")
}

// timestampLiteral is microseconds since the epoch, exactly (a literal
// with nanoseconds is a fraction). Without an offset it is UTC.
func timestampLiteral(lit Literal) (*big.Rat, error) {
	switch lit.Kind {
	case LitTimestamp, LitString, LitDate:
		t, err := parseTimestamp(lit.Text)
		if err != nil {
			return nil, literalError(lit, "a timestamp")
		}
		return big.NewRat(t.UnixNano(), 1000), nil
	}
	return nil, literalError(lit, "a timestamp")
}

// dateLiteral is days since the epoch; a timestamp literal is a fraction
// of a day, as DuckDB compares a date with a timestamp as timestamps.
func dateLiteral(lit Literal) (*big.Rat, error) {
	switch lit.Kind {
	case LitDate, LitString:
		t, err := time.Parse("2006-01-02", strings.TrimSpace(lit.Text))
		if err != nil {
			return nil, literalError(lit, "a date")
		}
		return big.NewRat(t.Unix(), 86400), nil
	case LitTimestamp:
		r, err := timestampLiteral(lit)
		if err != nil {
			return nil, err
		}
		return r.Quo(r, big.NewRat(86400e6, 1)), nil
	}
	return nil, literalError(lit, "a date")
}

// timeLiteral is the time of day in unit.
func timeLiteral(lit Literal, unit arrow.TimeUnit) (*big.Rat, error) {
	if lit.Kind == LitTime || lit.Kind == LitString {
		for _, layout := range []string{"15:04:05.999999999", "15:04"} {
			if t, err := time.Parse(layout, strings.TrimSpace(lit.Text)); err == nil {
				ns := int64(t.Hour())*int64(time.Hour) + int64(t.Minute())*int64(time.Minute) +
					int64(t.Second())*int64(time.Second) + int64(t.Nanosecond())
				return big.NewRat(ns, int64(unit.Multiplier())), nil
			}
		}
	}
	return nil, literalError(lit, "a time")
}

// floatLiteral reads a number, or a string such as 'NaN' or 'inf'.
func floatLiteral(lit Literal, single bool) (float64, error) {
	if lit.Kind != LitNumber && lit.Kind != LitString {
		return 0, literalError(lit, "a floating-point number")
	}
	bits := 64
	if single {
		bits = 32
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(lit.Text), bits)
	if err != nil {
		return 0, literalError(lit, "a floating-point number")
	}
	return v, nil
}

func boolLiteral(lit Literal) (bool, error) {
	if lit.Kind == LitBool || lit.Kind == LitString {
		switch strings.ToLower(strings.TrimSpace(lit.Text)) {
		case "true", "t":
			return true, nil
		case "false", "f":
			return false, nil
		}
	}
	return false, literalError(lit, "a boolean")
}

// nullPred is IS [NOT] NULL.
type nullPred struct{ notNull bool }

func (p nullPred) keep(arr arrow.Array, sel []bool) error {
	for i := range sel {
		if sel[i] && arr.IsNull(i) == p.notNull {
			sel[i] = false
		}
	}
	return nil
}

// intPred compares an integer-stored column (integers, timestamps, dates,
// times) with a literal made exact in that column's integer domain, or,
// when no integer equals the literal's effect, with a constant outcome.
type intPred struct {
	op Op
	v  int64
	// konst, when not 0, is the outcome for every non-null row: 1 true,
	// -1 false.
	konst int
}

// rewrite turns x op r for a rational r into x op' v for an integer v,
// for an integer x: for a fraction, x < r and x <= r are x <= floor(r),
// x > r and x >= r are x > floor(r), x = r never holds and x <> r always
// does (konst -1 or 1).
func rewrite(op Op, r *big.Rat) (Op, *big.Int, int) {
	v := new(big.Int).Quo(r.Num(), r.Denom()) // truncated
	if r.IsInt() {
		return op, v, 0
	}
	if r.Sign() < 0 {
		v.Sub(v, big.NewInt(1)) // floor
	}
	switch op {
	case OpEq:
		return op, v, -1
	case OpNe:
		return op, v, 1
	case OpLt:
		op = OpLe
	case OpGe:
		op = OpGt
	}
	return op, v, 0
}

// outOfRange is the constant outcome of x op v for every x of a type
// whose values are all below v (v > 0) or all above it.
func outOfRange(op Op, v *big.Int) int {
	if holds(op, -v.Sign()) {
		return 1
	}
	return -1
}

func newIntPred(op Op, r *big.Rat) intPred {
	op, v, konst := rewrite(op, r)
	switch {
	case konst != 0:
		return intPred{op: op, konst: konst}
	case !v.IsInt64():
		return intPred{op: op, konst: outOfRange(op, v)}
	}
	return intPred{op: op, v: v.Int64()}
}

func (p intPred) keep(arr arrow.Array, sel []bool) error {
	switch a := arr.(type) {
	case *array.Int8:
		keepInts(a.Int8Values(), arr, p, sel)
	case *array.Int16:
		keepInts(a.Int16Values(), arr, p, sel)
	case *array.Int32:
		keepInts(a.Int32Values(), arr, p, sel)
	case *array.Int64:
		keepInts(a.Int64Values(), arr, p, sel)
	case *array.Timestamp:
		keepInts(a.TimestampValues(), arr, p, sel)
	case *array.Date32:
		keepInts(a.Date32Values(), arr, p, sel)
	case *array.Time64:
		keepInts(a.Time64Values(), arr, p, sel)
	default:
		return fmt.Errorf("changes(): filter: integer comparison over %s", arr.DataType())
	}
	return nil
}

func keepInts[T ~int8 | ~int16 | ~int32 | ~int64](vals []T, arr arrow.Array, p intPred, sel []bool) {
	nulls := arr.NullN() > 0
	for i, v := range vals {
		switch {
		case !sel[i]:
		case nulls && arr.IsNull(i):
			sel[i] = false
		case p.konst != 0:
			sel[i] = p.konst > 0
		default:
			sel[i] = holds(p.op, cmp.Compare(int64(v), p.v))
		}
	}
}

// floatPred compares in DuckDB's order: NaN above every number and equal
// to itself.
type floatPred struct {
	op Op
	v  float64
}

func compareFloat(a, b float64) int {
	an, bn := math.IsNaN(a), math.IsNaN(b)
	switch {
	case an && bn:
		return 0
	case an:
		return 1
	case bn:
		return -1
	}
	return cmp.Compare(a, b)
}

func (p floatPred) keep(arr arrow.Array, sel []bool) error {
	switch a := arr.(type) {
	case *array.Float32:
		keepFloats(a.Float32Values(), arr, p, sel)
	case *array.Float64:
		keepFloats(a.Float64Values(), arr, p, sel)
	default:
		return fmt.Errorf("changes(): filter: float comparison over %s", arr.DataType())
	}
	return nil
}

func keepFloats[T float32 | float64](vals []T, arr arrow.Array, p floatPred, sel []bool) {
	nulls := arr.NullN() > 0
	for i, v := range vals {
		switch {
		case !sel[i]:
		case nulls && arr.IsNull(i):
			sel[i] = false
		default:
			sel[i] = holds(p.op, compareFloat(float64(v), p.v))
		}
	}
}

// decimalPred compares unscaled decimal values, the literal rewritten as
// for integers.
type decimalPred struct {
	op    Op
	v     decimal128.Num
	konst int
}

// newDecimalPred compares unscaled values: r times 10^scale, rewritten
// as for integers.
func newDecimalPred(op Op, r *big.Rat, scale int32) decimalPred {
	pow := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil)
	op, v, konst := rewrite(op, new(big.Rat).Mul(r, new(big.Rat).SetInt(pow)))
	switch {
	case konst != 0:
		return decimalPred{op: op, konst: konst}
	case v.BitLen() > 127: // beyond 128 bits: no stored value is as large
		return decimalPred{op: op, konst: outOfRange(op, v)}
	}
	return decimalPred{op: op, v: decimal128.FromBigInt(v)}
}

func (p decimalPred) keep(arr arrow.Array, sel []bool) error {
	a, ok := arr.(*array.Decimal128)
	if !ok {
		return fmt.Errorf("changes(): filter: decimal comparison over %s", arr.DataType())
	}
	vals := a.Values()
	nulls := arr.NullN() > 0
	for i, v := range vals {
		switch {
		case !sel[i]:
		case nulls && arr.IsNull(i):
			sel[i] = false
		case p.konst != 0:
			sel[i] = p.konst > 0
		default:
			sel[i] = holds(p.op, v.Cmp(p.v))
		}
	}
	return nil
}

// bytesPred compares strings and blobs bytewise, DuckDB's default
// (binary) collation.
type bytesPred struct {
	op Op
	v  []byte
}

func (p bytesPred) keep(arr arrow.Array, sel []bool) error {
	nulls := arr.NullN() > 0
	switch a := arr.(type) {
	case *array.String:
		v := string(p.v)
		for i := range sel {
			if sel[i] {
				sel[i] = !(nulls && arr.IsNull(i)) && holds(p.op, strings.Compare(a.Value(i), v))
			}
		}
	case *array.Binary:
		for i := range sel {
			if sel[i] {
				sel[i] = !(nulls && arr.IsNull(i)) && holds(p.op, bytes.Compare(a.Value(i), p.v))
			}
		}
	default:
		return fmt.Errorf("changes(): filter: string comparison over %s", arr.DataType())
	}
	return nil
}

// boolPred compares booleans, false before true.
type boolPred struct {
	op Op
	v  bool
}

func (p boolPred) keep(arr arrow.Array, sel []bool) error {
	a, ok := arr.(*array.Boolean)
	if !ok {
		return fmt.Errorf("changes(): filter: boolean comparison over %s", arr.DataType())
	}
	b2i := func(b bool) int {
		if b {
			return 1
		}
		return 0
	}
	nulls := arr.NullN() > 0
	for i := range sel {
		if sel[i] {
			sel[i] = !(nulls && arr.IsNull(i)) && holds(p.op, cmp.Compare(b2i(a.Value(i)), b2i(p.v)))
		}
	}
	return nil
}

// parseTimestamp reads the TIMESTAMP literals users write.
func parseTimestamp(s string) (time.Time, error) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02 15:04:05.999999999Z07:00", "2006-01-02 15:04:05.999999999Z07",
		"2006-01-02 15:04:05.999999999", "2006-01-02T15:04:05.999999999", "2006-01-02"} {
		if t, err := time.Parse(layout, strings.TrimSpace(s)); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%w: changes(): timestamp %q: want e.g. '2026-01-02 15:04:05' (UTC) or with an offset", ErrInvalid, s)
}
