package columnarlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// The statistics section of a batch (present when AttrHasStats is set): per
// column, the null count and the minimum and maximum value, so that a scan
// can skip a batch without decompressing it. Little-endian. This is part of
// the on-disk and wire format.
//
//	stats   := u32 length (the batch framing: bytes after it)
//	           | version u8 (StatsV1) | column count u16 | count × column
//	column  := kind u8 (StatsKind)
//	           | if kind != StatsNone:
//	               flags u8 (StatsFlags) | null count u32
//	               | if flags & StatsHasMinMax: min value | max value
//	value   := by kind:
//	             StatsInt64      8 bytes  int64
//	             StatsUint64     8 bytes  uint64
//	             StatsFloat64    8 bytes  IEEE 754 binary64
//	             StatsDecimal128 16 bytes low uint64 | high int64 (the column's unscaled integer)
//	             StatsBool       1 byte   0 or 1
//	             StatsBytes      len u8 (≤ MaxStatsBytes) | len bytes;
//	                             no max value if flags & StatsMaxUnbounded
//
// Columns are those of the schema the batch was written with (SchemaId), in
// order. The meaning of a value is the column's type: an int64 is a
// timestamp in the column's unit, days for a date, a time in the column's
// unit; a float32 column is widened to binary64 exactly.
//
// The minimum and maximum ignore nulls and NaNs: StatsHasMinMax is clear
// when every value is null or NaN, StatsHasNaN says whether some value is
// NaN. A bytes minimum longer than MaxStatsBytes is cut to that prefix
// (StatsMinTruncated; the prefix is still a lower bound); a longer maximum
// is cut and its last byte that is not 0xFF incremented, the 0xFF bytes
// after it dropped, so it stays an upper bound that no value reaches
// (StatsMaxExclusive), or, when the prefix is all 0xFF, left out
// (StatsMaxUnbounded).
//
// Nested columns and other types get kind StatsNone and nothing else:
// readers never skip a batch on a column without statistics, nor on a batch
// without the section, nor on a section of a version they do not know.
const (
	// StatsV1 is the version of the section's layout.
	StatsV1 uint8 = 1
	// MaxStatsBytes bounds a bytes minimum or maximum.
	MaxStatsBytes = 32
)

// StatsKind is how a column's minimum and maximum are encoded.
type StatsKind uint8

const (
	StatsNone       StatsKind = 0 // no statistics
	StatsInt64      StatsKind = 1 // signed integers, dates, times, timestamps
	StatsUint64     StatsKind = 2 // unsigned integers
	StatsFloat64    StatsKind = 3 // float32 and float64
	StatsDecimal128 StatsKind = 4 // decimal128, unscaled
	StatsBool       StatsKind = 5 // booleans: false < true
	StatsBytes      StatsKind = 6 // strings and binaries, bytewise order
)

// StatsFlags qualify a column's statistics.
type StatsFlags uint8

const (
	// StatsHasMinMax: a minimum and a maximum follow; clear when every
	// value is null or NaN.
	StatsHasMinMax StatsFlags = 1 << 0
	// StatsHasNaN: some value is NaN (floats).
	StatsHasNaN StatsFlags = 1 << 1
	// StatsMinTruncated: the bytes minimum is a prefix of the true one.
	StatsMinTruncated StatsFlags = 1 << 2
	// StatsMaxExclusive: the bytes maximum was cut and incremented; every
	// value is strictly below it.
	StatsMaxExclusive StatsFlags = 1 << 3
	// StatsMaxUnbounded: there is no bytes maximum.
	StatsMaxUnbounded StatsFlags = 1 << 4

	statsKnownFlags = StatsHasMinMax | StatsHasNaN | StatsMinTruncated | StatsMaxExclusive | StatsMaxUnbounded
)

// Int128 is a decimal128's unscaled value, two's complement.
type Int128 struct {
	Hi int64
	Lo uint64
}

// Cmp returns -1, 0 or +1 as a is less than, equal to or greater than b.
func (a Int128) Cmp(b Int128) int {
	switch {
	case a.Hi < b.Hi:
		return -1
	case a.Hi > b.Hi:
		return 1
	case a.Lo < b.Lo:
		return -1
	case a.Lo > b.Lo:
		return 1
	}
	return 0
}

// ColumnStats are one column's statistics. Only the Min/Max pair of its
// Kind is meaningful, and only with StatsHasMinMax.
type ColumnStats struct {
	Kind      StatsKind
	Flags     StatsFlags
	NullCount uint32

	MinInt, MaxInt     int64 // StatsInt64; StatsBool as 0 and 1
	MinUint, MaxUint   uint64
	MinFloat, MaxFloat float64
	MinDec, MaxDec     Int128
	// MinBytes and MaxBytes alias the decoded section.
	MinBytes, MaxBytes []byte
}

// Has reports whether all of flags are set.
func (c *ColumnStats) Has(flags StatsFlags) bool { return c.Flags&flags == flags }

// ErrUnknownStats is returned by DecodeStats for a section of a version it
// does not know; readers then use no statistics.
var ErrUnknownStats = errors.New("unknown statistics version")

// AppendStatsSection appends the statistics section of a batch built with
// StartBatch — its u32 length, then the encoded columns — to dst. The batch
// must be finished with AttrHasStats set.
func AppendStatsSection(dst []byte, cols []ColumnStats) ([]byte, error) {
	if len(cols) > math.MaxUint16 {
		return dst, fmt.Errorf("stats: %d columns, over %d", len(cols), math.MaxUint16)
	}
	start := len(dst)
	le := binary.LittleEndian
	dst = le.AppendUint32(dst, 0)
	dst = append(dst, StatsV1)
	dst = le.AppendUint16(dst, uint16(len(cols)))
	for i := range cols {
		var err error
		if dst, err = appendColumnStats(dst, &cols[i]); err != nil {
			return dst[:start], fmt.Errorf("stats: column %d: %w", i, err)
		}
	}
	le.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst, nil
}

// EncodeStats encodes the statistics for NewBatch (without the u32 length,
// which NewBatch writes).
func EncodeStats(cols []ColumnStats) ([]byte, error) {
	b, err := AppendStatsSection(nil, cols)
	if err != nil {
		return nil, err
	}
	return b[4:], nil
}

func appendColumnStats(dst []byte, c *ColumnStats) ([]byte, error) {
	dst = append(dst, byte(c.Kind))
	if c.Kind == StatsNone {
		return dst, nil
	}
	if c.Kind > StatsBytes {
		return dst, fmt.Errorf("kind %d unknown", c.Kind)
	}
	if c.Flags&^statsKnownFlags != 0 {
		return dst, fmt.Errorf("flags %#x unknown", c.Flags)
	}
	le := binary.LittleEndian
	dst = append(dst, byte(c.Flags))
	dst = le.AppendUint32(dst, c.NullCount)
	if !c.Has(StatsHasMinMax) {
		return dst, nil
	}
	switch c.Kind {
	case StatsInt64:
		dst = le.AppendUint64(dst, uint64(c.MinInt))
		dst = le.AppendUint64(dst, uint64(c.MaxInt))
	case StatsUint64:
		dst = le.AppendUint64(dst, c.MinUint)
		dst = le.AppendUint64(dst, c.MaxUint)
	case StatsFloat64:
		dst = le.AppendUint64(dst, math.Float64bits(c.MinFloat))
		dst = le.AppendUint64(dst, math.Float64bits(c.MaxFloat))
	case StatsDecimal128:
		for _, d := range [2]Int128{c.MinDec, c.MaxDec} {
			dst = le.AppendUint64(dst, d.Lo)
			dst = le.AppendUint64(dst, uint64(d.Hi))
		}
	case StatsBool:
		dst = append(dst, byte(c.MinInt&1), byte(c.MaxInt&1))
	case StatsBytes:
		if len(c.MinBytes) > MaxStatsBytes || len(c.MaxBytes) > MaxStatsBytes {
			return dst, fmt.Errorf("bytes bound over %d bytes", MaxStatsBytes)
		}
		dst = append(dst, byte(len(c.MinBytes)))
		dst = append(dst, c.MinBytes...)
		if !c.Has(StatsMaxUnbounded) {
			dst = append(dst, byte(len(c.MaxBytes)))
			dst = append(dst, c.MaxBytes...)
		}
	}
	return dst, nil
}

// DecodeStats decodes a statistics section as Batch.Stats returns it (after
// the u32 length). Bytes bounds alias section. It returns ErrUnknownStats
// for a version it does not know, and an error wrapping ErrCorrupt for
// bytes that are not a valid section.
func DecodeStats(section []byte) ([]ColumnStats, error) {
	d := statsDecoder{b: section}
	if v := d.u8(); d.err == nil && v != StatsV1 {
		return nil, fmt.Errorf("%w %d", ErrUnknownStats, v)
	}
	n := int(d.u16())
	if d.err != nil {
		return nil, d.err
	}
	// A column takes at least one byte: a count the section cannot hold
	// is refused before allocating for it.
	if n > len(d.b) {
		return nil, fmt.Errorf("%w: stats of %d columns in %d bytes", ErrCorrupt, n, len(d.b))
	}
	cols := make([]ColumnStats, n)
	for i := range cols {
		d.column(&cols[i])
		if d.err != nil {
			return nil, fmt.Errorf("stats column %d: %w", i, d.err)
		}
	}
	if len(d.b) != 0 {
		return nil, fmt.Errorf("%w: %d bytes after the stats columns", ErrCorrupt, len(d.b))
	}
	return cols, nil
}

// ColumnStats decodes the batch's statistics section; nil, nil when the
// batch has none.
func (b Batch) ColumnStats() ([]ColumnStats, error) {
	st, err := b.Stats()
	if err != nil || b.Attributes()&AttrHasStats == 0 {
		return nil, err
	}
	return DecodeStats(st)
}

// statsDecoder reads the section; the first error sticks and later reads
// return zeros.
type statsDecoder struct {
	b   []byte
	err error
}

func (d *statsDecoder) take(n int) []byte {
	if d.err != nil {
		return nil
	}
	if n > len(d.b) {
		d.err = fmt.Errorf("%w: stats cut off", ErrCorrupt)
		return nil
	}
	p := d.b[:n:n]
	d.b = d.b[n:]
	return p
}

func (d *statsDecoder) u8() uint8 {
	if p := d.take(1); p != nil {
		return p[0]
	}
	return 0
}

func (d *statsDecoder) u16() uint16 {
	if p := d.take(2); p != nil {
		return binary.LittleEndian.Uint16(p)
	}
	return 0
}

func (d *statsDecoder) u32() uint32 {
	if p := d.take(4); p != nil {
		return binary.LittleEndian.Uint32(p)
	}
	return 0
}

func (d *statsDecoder) u64() uint64 {
	if p := d.take(8); p != nil {
		return binary.LittleEndian.Uint64(p)
	}
	return 0
}

func (d *statsDecoder) bytes() []byte {
	n := int(d.u8())
	if n > MaxStatsBytes {
		d.fail("bytes bound of %d bytes", n)
		return nil
	}
	return d.take(n)
}

func (d *statsDecoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: "+format, append([]any{ErrCorrupt}, args...)...)
	}
}

// column decodes one column's entry.
func (d *statsDecoder) column(c *ColumnStats) {
	c.Kind = StatsKind(d.u8())
	if c.Kind == StatsNone || d.err != nil {
		return
	}
	if c.Kind > StatsBytes {
		d.fail("kind %d", c.Kind)
		return
	}
	c.Flags = StatsFlags(d.u8())
	if c.Flags&^statsKnownFlags != 0 {
		d.fail("flags %#x", c.Flags)
		return
	}
	c.NullCount = d.u32()
	if !c.Has(StatsHasMinMax) {
		return
	}
	switch c.Kind {
	case StatsInt64:
		c.MinInt, c.MaxInt = int64(d.u64()), int64(d.u64())
	case StatsUint64:
		c.MinUint, c.MaxUint = d.u64(), d.u64()
	case StatsFloat64:
		c.MinFloat, c.MaxFloat = math.Float64frombits(d.u64()), math.Float64frombits(d.u64())
	case StatsDecimal128:
		c.MinDec = Int128{Lo: d.u64(), Hi: int64(d.u64())}
		c.MaxDec = Int128{Lo: d.u64(), Hi: int64(d.u64())}
	case StatsBool:
		c.MinInt, c.MaxInt = int64(d.u8()), int64(d.u8())
		if c.MinInt > 1 || c.MaxInt > 1 {
			d.fail("boolean bound %d, %d", c.MinInt, c.MaxInt)
		}
	case StatsBytes:
		c.MinBytes = d.bytes()
		if !c.Has(StatsMaxUnbounded) {
			c.MaxBytes = d.bytes()
		}
	}
}
