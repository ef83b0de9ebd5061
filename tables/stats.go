package tables

import (
	"bytes"
	"encoding/binary"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/lakestream/lakestream/columnarlog"
)

// Batch statistics (columnarlog/stats.go) are computed here, at encode
// time, from the record about to be compressed: one pass over each column's
// values, no copy. On a 64Ki-row batch of events (int64, float64, string,
// timestamp) the pass takes 0.7 ms, half of it the string column, and adds
// 3 to 5% to a zstd encode of ~18 ms (BenchmarkEncodeBatch, 2 shared
// vCPUs; it also warms the caches for the compressor). prune.go uses them.

// computeStats returns the statistics of each of rec's columns.
func computeStats(rec arrow.RecordBatch) []columnarlog.ColumnStats {
	out := make([]columnarlog.ColumnStats, rec.NumCols())
	for i, col := range rec.Columns() {
		out[i] = columnStats(col)
	}
	return out
}

// columnStats is a dispatcher over the column types that have statistics;
// any other type gets StatsNone.
func columnStats(arr arrow.Array) columnarlog.ColumnStats {
	if arr.Len() == 0 {
		return columnarlog.ColumnStats{Kind: columnarlog.StatsNone}
	}
	switch a := arr.(type) {
	case *array.Int8:
		return intStats(a.Int8Values(), arr)
	case *array.Int16:
		return intStats(a.Int16Values(), arr)
	case *array.Int32:
		return intStats(a.Int32Values(), arr)
	case *array.Int64:
		return intStats(a.Int64Values(), arr)
	case *array.Date32:
		return intStats(a.Date32Values(), arr)
	case *array.Date64:
		return intStats(a.Date64Values(), arr)
	case *array.Time32:
		return intStats(a.Time32Values(), arr)
	case *array.Time64:
		return intStats(a.Time64Values(), arr)
	case *array.Timestamp:
		return intStats(a.TimestampValues(), arr)
	case *array.Uint8:
		return uintStats(a.Uint8Values(), arr)
	case *array.Uint16:
		return uintStats(a.Uint16Values(), arr)
	case *array.Uint32:
		return uintStats(a.Uint32Values(), arr)
	case *array.Uint64:
		return uintStats(a.Uint64Values(), arr)
	case *array.Float32:
		return floatStats(a.Float32Values(), arr)
	case *array.Float64:
		return floatStats(a.Float64Values(), arr)
	case *array.Decimal128:
		return decimalStats(a)
	case *array.Boolean:
		return boolStats(a)
	case *array.String:
		return bytesStats(a.ValueOffsets(), a.ValueBytes(), arr)
	case *array.LargeString:
		return bytesStats(a.ValueOffsets(), a.ValueBytes(), arr)
	case *array.Binary:
		return bytesStats(a.ValueOffsets(), a.ValueBytes(), arr)
	case *array.LargeBinary:
		return bytesStats(a.ValueOffsets(), a.ValueBytes(), arr)
	}
	return columnarlog.ColumnStats{Kind: columnarlog.StatsNone}
}

func newStats(kind columnarlog.StatsKind, arr arrow.Array) columnarlog.ColumnStats {
	return columnarlog.ColumnStats{Kind: kind, NullCount: uint32(arr.NullN())}
}

// validRuns calls fn(lo, hi) for each run [lo, hi) of non-null values of
// arr, in order. It reads the validity bitmap a byte at a time where it can,
// so that a column with a few nulls costs about what one without does.
func validRuns(arr arrow.Array, fn func(lo, hi int)) {
	n := arr.Len()
	switch arr.NullN() {
	case 0:
		fn(0, n)
		return
	case n:
		return
	}
	bits, off := arr.NullBitmapBytes(), arr.Data().Offset()
	start := -1
	for i := 0; i < n; {
		j := off + i
		if j&7 == 0 && i+8 <= n {
			switch bits[j>>3] {
			case 0xFF:
				if start < 0 {
					start = i
				}
				i += 8
				continue
			case 0:
				if start >= 0 {
					fn(start, i)
					start = -1
				}
				i += 8
				continue
			}
		}
		if bits[j>>3]&(1<<(j&7)) != 0 {
			if start < 0 {
				start = i
			}
		} else if start >= 0 {
			fn(start, i)
			start = -1
		}
		i++
	}
	if start >= 0 {
		fn(start, n)
	}
}

type signed interface {
	~int8 | ~int16 | ~int32 | ~int64
}

type unsigned interface {
	~uint8 | ~uint16 | ~uint32 | ~uint64
}

// minMax is the minimum and maximum of the valid values; ok is false when
// there are none. The inner loop has no branches but min and max.
func minMax[T signed | unsigned](vals []T, arr arrow.Array) (lo, hi T, ok bool) {
	validRuns(arr, func(a, b int) {
		l, h := vals[a], vals[a]
		if ok {
			l, h = lo, hi
		}
		for _, v := range vals[a:b] {
			l = min(l, v)
			h = max(h, v)
		}
		lo, hi, ok = l, h, true
	})
	return lo, hi, ok
}

func intStats[T signed](vals []T, arr arrow.Array) columnarlog.ColumnStats {
	st := newStats(columnarlog.StatsInt64, arr)
	if lo, hi, ok := minMax(vals, arr); ok {
		st.Flags |= columnarlog.StatsHasMinMax
		st.MinInt, st.MaxInt = int64(lo), int64(hi)
	}
	return st
}

func uintStats[T unsigned](vals []T, arr arrow.Array) columnarlog.ColumnStats {
	st := newStats(columnarlog.StatsUint64, arr)
	if lo, hi, ok := minMax(vals, arr); ok {
		st.Flags |= columnarlog.StatsHasMinMax
		st.MinUint, st.MaxUint = uint64(lo), uint64(hi)
	}
	return st
}

// floatStats skips NaNs for the minimum and maximum and records that there
// were some. It compares with < and > rather than the min and max
// builtins: a comparison with NaN is false, so a NaN never becomes a bound,
// and the builtins' NaN and signed-zero handling cost 1.5× (measured).
// Rejected: branch-free min and max of order-preserving integer keys of
// the floats, with a second pass when NaNs show up: 10% faster, more code.
func floatStats[T float32 | float64](vals []T, arr arrow.Array) columnarlog.ColumnStats {
	st := newStats(columnarlog.StatsFloat64, arr)
	var lo, hi T
	found, nan := false, false
	validRuns(arr, func(a, b int) {
		vs := vals[a:b]
		for !found && len(vs) > 0 {
			if v := vs[0]; v == v {
				lo, hi, found = v, v, true
			} else {
				nan = true
			}
			vs = vs[1:]
		}
		l, h, n := lo, hi, nan
		for _, v := range vs {
			if v < l {
				l = v
			}
			if v > h {
				h = v
			}
			if v != v {
				n = true
			}
		}
		lo, hi, nan = l, h, n
	})
	if nan {
		st.Flags |= columnarlog.StatsHasNaN
	}
	if found {
		st.Flags |= columnarlog.StatsHasMinMax
		st.MinFloat, st.MaxFloat = float64(lo), float64(hi)
	}
	return st
}

func decimalStats(a *array.Decimal128) columnarlog.ColumnStats {
	st := newStats(columnarlog.StatsDecimal128, a)
	vals := a.Values()
	found := false
	validRuns(a, func(lo, hi int) {
		for _, n := range vals[lo:hi] {
			v := columnarlog.Int128{Hi: n.HighBits(), Lo: n.LowBits()}
			switch {
			case !found:
				st.MinDec, st.MaxDec, found = v, v, true
			case v.Cmp(st.MinDec) < 0:
				st.MinDec = v
			case v.Cmp(st.MaxDec) > 0:
				st.MaxDec = v
			}
		}
	})
	if found {
		st.Flags |= columnarlog.StatsHasMinMax
	}
	return st
}

func boolStats(a *array.Boolean) columnarlog.ColumnStats {
	st := newStats(columnarlog.StatsBool, a)
	var seen [2]bool
	validRuns(a, func(lo, hi int) {
		for i := lo; i < hi && !(seen[0] && seen[1]); i++ {
			if a.Value(i) {
				seen[1] = true
			} else {
				seen[0] = true
			}
		}
	})
	if seen[0] || seen[1] {
		st.Flags |= columnarlog.StatsHasMinMax
		st.MinInt, st.MaxInt = 1, 0
		if seen[0] {
			st.MinInt = 0
		}
		if seen[1] {
			st.MaxInt = 1
		}
	}
	return st
}

// bytesStats finds the bytewise minimum and maximum of a string or binary
// column from its offsets and data (the offsets of the array's slice, the
// data from its first value), then bounds them to MaxStatsBytes.
func bytesStats[O int32 | int64](offsets []O, data []byte, arr arrow.Array) columnarlog.ColumnStats {
	st := newStats(columnarlog.StatsBytes, arr)
	base := offsets[0]
	var r bytesRange
	validRuns(arr, func(lo, hi int) {
		rr := r // a local copy keeps the loop's state in registers
		_ = offsets[hi]
		for i := lo; i < hi; i++ {
			s, e := int(offsets[i]-base), int(offsets[i+1]-base)
			if rr.fast && s+16 <= len(data) {
				// Inline: the value's first two words, zero-padded.
				w := data[s : s+16 : s+16]
				k0 := binary.BigEndian.Uint64(w)
				k1 := binary.BigEndian.Uint64(w[8:])
				n := e - s
				switch {
				case n < 8:
					k0 &= keepBytes[n&7]
					k1 = 0
				case n < 16:
					k1 &= keepBytes[(n-8)&7]
				}
				if rr.dw == 0 && rr.l0 < k0 && k0 < rr.h0 ||
					rr.dw == 1 && k0 == rr.l0 && rr.l1 < k1 && k1 < rr.h1 ||
					n == rr.ln && k0 == rr.l0 && k1 == rr.l1 ||
					n == rr.hn && k0 == rr.h0 && k1 == rr.h1 {
					continue
				}
			}
			rr.add(data[s:e])
		}
		r = rr
	})
	if !r.found {
		return st
	}
	st.Flags |= columnarlog.StatsHasMinMax
	lo, hi := r.lo, r.hi
	if len(lo) > columnarlog.MaxStatsBytes {
		lo = lo[:columnarlog.MaxStatsBytes]
		st.Flags |= columnarlog.StatsMinTruncated
	}
	st.MinBytes = lo
	if len(hi) > columnarlog.MaxStatsBytes {
		up, ok := upperBound(hi[:columnarlog.MaxStatsBytes])
		if ok {
			st.MaxBytes = up
			st.Flags |= columnarlog.StatsMaxExclusive
		} else {
			st.Flags |= columnarlog.StatsMaxUnbounded
		}
	} else {
		st.MaxBytes = hi
	}
	return st
}

// bytesRange tracks the least and greatest of byte strings.
//
// Two bytes.Compare calls per value cost 14 ns a value on event kinds
// (BenchmarkComputeStats), 5% of a zstd encode for that one column. Most
// values are neither bound, and bytesStats places them by the 8-byte
// big-endian words of their first 16 bytes, zero-padded, for 5 ns: when the
// bounds differ in their first word (dw 0), a first word strictly between
// theirs puts the value strictly between them; when they share the first
// word and differ in the second (dw 1), a value with that first word and a
// second strictly between theirs does. (A strict difference of padded
// words decides the bytewise order, short strings included.) A value of up
// to 16 bytes with a bound's words and length is that bound. Everything
// else, and bounds that share their first 16 bytes, take the comparisons.
type bytesRange struct {
	lo, hi []byte
	found  bool
	// fast says whether values may be placed by words: l0, l1, h0, h1 are
	// the first two words of lo and hi, dw the first where they differ.
	fast           bool
	dw             int
	l0, l1, h0, h1 uint64
	// ln and hn are the lengths of lo and hi when their words hold all
	// of them (up to 16 bytes), else -1.
	ln, hn int
}

// add takes v as a new bound if it is one.
func (r *bytesRange) add(v []byte) {
	switch {
	case !r.found:
		r.lo, r.hi, r.found = v, v, true
	case bytes.Compare(v, r.lo) < 0:
		r.lo = v
	case bytes.Compare(v, r.hi) > 0:
		r.hi = v
	default:
		return
	}
	r.ln, r.hn = -1, -1
	if len(r.lo) <= 16 {
		r.ln = len(r.lo)
	}
	if len(r.hi) <= 16 {
		r.hn = len(r.hi)
	}
	r.l0, r.l1 = word(r.lo, 0), word(r.lo, 1)
	r.h0, r.h1 = word(r.hi, 0), word(r.hi, 1)
	r.fast = true
	switch {
	case r.l0 != r.h0:
		r.dw = 0
	case r.l1 != r.h1:
		r.dw = 1
	default:
		r.fast = r.ln >= 0 || r.hn >= 0 // only the equality test is left
		r.dw = 2
	}
}

// keepBytes[n] keeps the first n bytes of a big-endian word: a table
// rather than a shift by a variable count, which Go guards for counts of
// 64 and more.
var keepBytes = [8]uint64{
	0, 0xFF << 56, 0xFFFF << 48, 0xFFFFFF << 40, 0xFFFFFFFF << 32,
	0xFFFFFFFFFF << 24, 0xFFFFFFFFFFFF << 16, 0xFFFFFFFFFFFFFF << 8,
}

// word is the w-th 8-byte word of v, zero-padded, big-endian.
func word(v []byte, w int) uint64 {
	var k uint64
	for i := 0; i < 8 && 8*w+i < len(v); i++ {
		k |= uint64(v[8*w+i]) << (56 - 8*i)
	}
	return k
}

// upperBound returns the shortest byte string greater than every string
// that starts with prefix: prefix without its trailing 0xFF bytes, with
// its last byte incremented. There is none when prefix is all 0xFF.
func upperBound(prefix []byte) ([]byte, bool) {
	for i := len(prefix) - 1; i >= 0; i-- {
		if prefix[i] != 0xFF {
			up := append([]byte(nil), prefix[:i+1]...)
			up[i]++
			return up, true
		}
	}
	return nil, false
}
