package tables

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"

	"github.com/lakestream/lakestream/internal/scan"
)

// A RemoteQuery travels as a byte frame, little-endian (part of the wire
// format between nodes; docs/format/replication.md):
//
//	v u8 | table i64 | schema i32 | bucket i32 | layer u8 | from i64
//	| to i64 | ncols i32 (-1: all) | ncols × column i32
//	| nfilters u16 | nfilters × (column i32 | op u8-string | value)
//	| nhave u32 | nhave × base offset i64
//
//	value  tag u8 | payload, by the Go type of the filter's value:
//	       0 none (IS NULL, IS NOT NULL)
//	       1 int8 2 int16 3 int32 4 int64 5 Date32 6 Date64 7 Time32
//	       8 Time64 9 Timestamp: i64
//	       10 uint8 11 uint16 12 uint32 13 uint64: u64
//	       14 float32 15 float64: the float64's bits, u64
//	       16 bool: u8
//	       17 decimal128: hi i64 | lo u64
//	       18 string 19 []byte: u32 length | bytes
const remoteQueryVersion = 1

// Bounds of a decoded RemoteQuery: a table has far fewer columns, a WHERE
// clause far fewer conjuncts.
const (
	maxRemoteColumns = 1 << 16
	maxRemoteFilters = 1 << 12
	maxRemoteHave    = maxSeenBatches
)

func (q RemoteQuery) encode() ([]byte, error) {
	w := make([]byte, 0, 64)
	w = append(w, remoteQueryVersion)
	w = binary.LittleEndian.AppendUint64(w, uint64(q.TableID))
	w = binary.LittleEndian.AppendUint32(w, uint32(q.SchemaID))
	w = binary.LittleEndian.AppendUint32(w, uint32(q.Bucket))
	w = append(w, byte(q.Layer))
	w = binary.LittleEndian.AppendUint64(w, uint64(q.From))
	w = binary.LittleEndian.AppendUint64(w, uint64(q.To))
	if q.Columns == nil {
		w = binary.LittleEndian.AppendUint32(w, math.MaxUint32) // -1
	} else {
		w = binary.LittleEndian.AppendUint32(w, uint32(len(q.Columns)))
		for _, c := range q.Columns {
			w = binary.LittleEndian.AppendUint32(w, uint32(c))
		}
	}
	w = binary.LittleEndian.AppendUint16(w, uint16(len(q.Filters)))
	for _, f := range q.Filters {
		if len(f.Op) > 255 {
			return nil, fmt.Errorf("%w: filter operator %q", ErrBadRemoteQuery, f.Op)
		}
		w = binary.LittleEndian.AppendUint32(w, uint32(f.Column))
		w = append(w, byte(len(f.Op)))
		w = append(w, f.Op...)
		var err error
		if w, err = appendFilterValue(w, f.Value); err != nil {
			return nil, err
		}
	}
	if len(q.Have) > maxRemoteHave {
		q.Have = q.Have[:maxRemoteHave] // the rest go whole
	}
	w = binary.LittleEndian.AppendUint32(w, uint32(len(q.Have)))
	for _, o := range q.Have {
		w = binary.LittleEndian.AppendUint64(w, uint64(o))
	}
	return w, nil
}

func appendFilterValue(w []byte, v any) ([]byte, error) {
	i64 := func(tag byte, x int64) []byte { return binary.LittleEndian.AppendUint64(append(w, tag), uint64(x)) }
	u64 := func(tag byte, x uint64) []byte { return binary.LittleEndian.AppendUint64(append(w, tag), x) }
	bytes := func(tag byte, b []byte) []byte {
		return append(binary.LittleEndian.AppendUint32(append(w, tag), uint32(len(b))), b...)
	}
	switch x := v.(type) {
	case nil:
		return append(w, 0), nil
	case int8:
		return i64(1, int64(x)), nil
	case int16:
		return i64(2, int64(x)), nil
	case int32:
		return i64(3, int64(x)), nil
	case int64:
		return i64(4, x), nil
	case arrow.Date32:
		return i64(5, int64(x)), nil
	case arrow.Date64:
		return i64(6, int64(x)), nil
	case arrow.Time32:
		return i64(7, int64(x)), nil
	case arrow.Time64:
		return i64(8, int64(x)), nil
	case arrow.Timestamp:
		return i64(9, int64(x)), nil
	case uint8:
		return u64(10, uint64(x)), nil
	case uint16:
		return u64(11, uint64(x)), nil
	case uint32:
		return u64(12, uint64(x)), nil
	case uint64:
		return u64(13, x), nil
	case float32:
		return u64(14, math.Float64bits(float64(x))), nil
	case float64:
		return u64(15, math.Float64bits(x)), nil
	case bool:
		b := byte(0)
		if x {
			b = 1
		}
		return append(w, 16, b), nil
	case decimal128.Num:
		w = i64(17, x.HighBits())
		return binary.LittleEndian.AppendUint64(w, x.LowBits()), nil
	case string:
		return bytes(18, []byte(x)), nil
	case []byte:
		return bytes(19, x), nil
	}
	return nil, fmt.Errorf("%w: a filter value of type %T", ErrBadRemoteQuery, v)
}

// wireReader reads a frame, remembering its first error.
type wireReader struct {
	b   []byte
	err error
}

func (r *wireReader) take(n int) []byte {
	if r.err != nil || n < 0 || len(r.b) < n {
		if r.err == nil {
			r.err = fmt.Errorf("%w: truncated", ErrBadRemoteQuery)
		}
		return make([]byte, min(max(n, 0), 8)) // never a length a peer chose
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

func (r *wireReader) u8() uint8   { return r.take(1)[0] }
func (r *wireReader) u16() uint16 { return binary.LittleEndian.Uint16(r.take(2)) }
func (r *wireReader) u32() uint32 { return binary.LittleEndian.Uint32(r.take(4)) }
func (r *wireReader) u64() uint64 { return binary.LittleEndian.Uint64(r.take(8)) }

// decodeRemoteQuery decodes a RemoteQuery frame; its errors wrap
// ErrBadRemoteQuery.
func decodeRemoteQuery(b []byte) (RemoteQuery, error) {
	r := &wireReader{b: b}
	var q RemoteQuery
	if v := r.u8(); r.err == nil && v != remoteQueryVersion {
		return q, fmt.Errorf("%w: version %d, this node speaks %d", ErrBadRemoteQuery, v, remoteQueryVersion)
	}
	q.TableID = int64(r.u64())
	q.SchemaID = int32(r.u32())
	q.Bucket = int(int32(r.u32()))
	q.Layer = Layer(r.u8())
	q.From = int64(r.u64())
	q.To = int64(r.u64())
	if q.Layer != LayerTable && q.Layer != LayerChangelog && r.err == nil {
		return q, fmt.Errorf("%w: layer %d", ErrBadRemoteQuery, q.Layer)
	}
	if n := r.u32(); n != math.MaxUint32 {
		if n > maxRemoteColumns {
			return q, fmt.Errorf("%w: %d columns", ErrBadRemoteQuery, n)
		}
		q.Columns = make([]int, 0, min(int(n), len(r.b)/4))
		for range n {
			q.Columns = append(q.Columns, int(int32(r.u32())))
		}
	}
	n := r.u16()
	if n > maxRemoteFilters {
		return q, fmt.Errorf("%w: %d filters", ErrBadRemoteQuery, n)
	}
	for range n {
		if r.err != nil {
			break
		}
		f := scan.Filter{Column: int(int32(r.u32()))}
		f.Op = string(r.take(int(r.u8())))
		f.Value = readFilterValue(r)
		q.Filters = append(q.Filters, f)
	}
	if nh := r.u32(); r.err == nil {
		if nh > maxRemoteHave {
			return q, fmt.Errorf("%w: %d cached batches", ErrBadRemoteQuery, nh)
		}
		q.Have = make([]int64, 0, min(int(nh), len(r.b)/8))
		for range nh {
			q.Have = append(q.Have, int64(r.u64()))
		}
	}
	if r.err == nil && len(r.b) > 0 {
		r.err = fmt.Errorf("%w: %d bytes after the query", ErrBadRemoteQuery, len(r.b))
	}
	return q, r.err
}

func readFilterValue(r *wireReader) any {
	tag := r.u8()
	switch {
	case tag == 0:
		return nil
	case tag >= 1 && tag <= 9:
		x := int64(r.u64())
		return [...]any{nil, int8(x), int16(x), int32(x), x, arrow.Date32(x), arrow.Date64(x), arrow.Time32(x), arrow.Time64(x), arrow.Timestamp(x)}[tag]
	case tag >= 10 && tag <= 13:
		x := r.u64()
		return [...]any{uint8(x), uint16(x), uint32(x), x}[tag-10]
	case tag == 14:
		return float32(math.Float64frombits(r.u64()))
	case tag == 15:
		return math.Float64frombits(r.u64())
	case tag == 16:
		return r.u8() != 0
	case tag == 17:
		hi := int64(r.u64())
		return decimal128.New(hi, r.u64())
	case tag == 18, tag == 19:
		b := r.take(int(r.u32()))
		if tag == 18 {
			return string(b)
		}
		return append([]byte(nil), b...)
	}
	if r.err == nil {
		r.err = fmt.Errorf("%w: filter value tag %d", ErrBadRemoteQuery, tag)
	}
	return nil
}
