package rowenc

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// newCodec returns the codec of values of type dt: the Arrow types of the
// SQL types (catalog/types_arrow.go).
func newCodec(dt arrow.DataType) (*codec, error) {
	le := binary.LittleEndian
	c := &codec{dt: dt}
	switch dt.ID() {
	case arrow.BOOL:
		c.fixed = 1
		c.enc = func(dst []byte, a arrow.Array, i int) []byte {
			if a.(*array.Boolean).Value(i) {
				return append(dst, 1)
			}
			return append(dst, 0)
		}
	case arrow.INT8:
		c.fixed = 1
		c.enc = func(dst []byte, a arrow.Array, i int) []byte { return append(dst, byte(a.(*array.Int8).Value(i))) }
	case arrow.INT16:
		c.fixed = 2
		c.enc = func(dst []byte, a arrow.Array, i int) []byte {
			return le.AppendUint16(dst, uint16(a.(*array.Int16).Value(i)))
		}
	case arrow.INT32:
		c.fixed = 4
		c.enc = func(dst []byte, a arrow.Array, i int) []byte {
			return le.AppendUint32(dst, uint32(a.(*array.Int32).Value(i)))
		}
	case arrow.DATE32:
		c.fixed = 4
		c.enc = func(dst []byte, a arrow.Array, i int) []byte {
			return le.AppendUint32(dst, uint32(a.(*array.Date32).Value(i)))
		}
	case arrow.FLOAT32:
		c.fixed = 4
		c.enc = func(dst []byte, a arrow.Array, i int) []byte {
			return le.AppendUint32(dst, math.Float32bits(a.(*array.Float32).Value(i)))
		}
	case arrow.INT64:
		c.fixed = 8
		c.enc = func(dst []byte, a arrow.Array, i int) []byte {
			return le.AppendUint64(dst, uint64(a.(*array.Int64).Value(i)))
		}
	case arrow.TIME64:
		c.fixed = 8
		c.enc = func(dst []byte, a arrow.Array, i int) []byte {
			return le.AppendUint64(dst, uint64(a.(*array.Time64).Value(i)))
		}
	case arrow.TIMESTAMP:
		c.fixed = 8
		c.enc = func(dst []byte, a arrow.Array, i int) []byte {
			return le.AppendUint64(dst, uint64(a.(*array.Timestamp).Value(i)))
		}
	case arrow.FLOAT64:
		c.fixed = 8
		c.enc = func(dst []byte, a arrow.Array, i int) []byte {
			return le.AppendUint64(dst, math.Float64bits(a.(*array.Float64).Value(i)))
		}
	case arrow.DECIMAL128:
		c.fixed = 16
		c.enc = func(dst []byte, a arrow.Array, i int) []byte {
			v := a.(*array.Decimal128).Value(i)
			return le.AppendUint64(le.AppendUint64(dst, v.LowBits()), uint64(v.HighBits()))
		}
	case arrow.STRING:
		c.enc = func(dst []byte, a arrow.Array, i int) []byte { return append(dst, a.(*array.String).Value(i)...) }
	case arrow.BINARY:
		c.enc = func(dst []byte, a arrow.Array, i int) []byte { return append(dst, a.(*array.Binary).Value(i)...) }
	case arrow.LIST:
		return listCodec(c, dt.(*arrow.ListType))
	case arrow.STRUCT:
		return structCodec(c, dt.(*arrow.StructType))
	case arrow.MAP:
		return mapCodec(c, dt.(*arrow.MapType))
	default:
		return nil, fmt.Errorf("unsupported type %s", dt)
	}
	return c, nil
}

func listCodec(c *codec, lt *arrow.ListType) (*codec, error) {
	elem, err := newCodec(lt.Elem())
	if err != nil {
		return nil, err
	}
	c.kids = []*codec{elem}
	c.enc = func(dst []byte, a arrow.Array, i int) []byte {
		l := a.(*array.List)
		from, to := l.ValueOffsets(i)
		vals := l.ListValues()
		dst = binary.AppendUvarint(dst, uint64(to-from))
		dst = appendNullmap(dst, int(to-from), func(j int) bool { return vals.IsNull(int(from) + j) })
		for j := from; j < to; j++ {
			if !vals.IsNull(int(j)) {
				dst = elem.appendEncoded(dst, vals, int(j))
			}
		}
		return dst
	}
	return c, nil
}

func structCodec(c *codec, st *arrow.StructType) (*codec, error) {
	for _, f := range st.Fields() {
		k, err := newCodec(f.Type)
		if err != nil {
			return nil, err
		}
		c.kids = append(c.kids, k)
	}
	c.enc = func(dst []byte, a arrow.Array, i int) []byte {
		s := a.(*array.Struct)
		dst = appendNullmap(dst, len(c.kids), func(f int) bool { return s.Field(f).IsNull(i) })
		for f, k := range c.kids {
			if !s.Field(f).IsNull(i) {
				dst = k.appendEncoded(dst, s.Field(f), i)
			}
		}
		return dst
	}
	return c, nil
}

func mapCodec(c *codec, mt *arrow.MapType) (*codec, error) {
	kc, err := newCodec(mt.KeyType())
	if err != nil {
		return nil, err
	}
	vc, err := newCodec(mt.ItemType())
	if err != nil {
		return nil, err
	}
	c.kids = []*codec{kc, vc}
	c.enc = func(dst []byte, a arrow.Array, i int) []byte {
		m := a.(*array.Map)
		from, to := m.ValueOffsets(i)
		keys, items := m.Keys(), m.Items()
		dst = binary.AppendUvarint(dst, uint64(to-from))
		dst = appendNullmap(dst, int(to-from), func(j int) bool { return items.IsNull(int(from) + j) })
		for j := int(from); j < int(to); j++ {
			dst = kc.appendEncoded(dst, keys, j)
			if !items.IsNull(j) {
				dst = vc.appendEncoded(dst, items, j)
			}
		}
		return dst
	}
	return c, nil
}

// appendEncoded appends value i of a (not null) as one item of a sequence.
func (c *codec) appendEncoded(dst []byte, a arrow.Array, i int) []byte {
	if c.fixed > 0 {
		return c.enc(dst, a, i)
	}
	// Encode after a maximal length prefix, then move it down: the length
	// is known only afterwards.
	start := len(dst)
	dst = append(dst, make([]byte, binary.MaxVarintLen64)...)
	dst = c.enc(dst, a, i)
	n := len(dst) - start - binary.MaxVarintLen64
	var pre [binary.MaxVarintLen64]byte
	k := binary.PutUvarint(pre[:], uint64(n))
	copy(dst[start:], pre[:k])
	copy(dst[start+k:], dst[start+binary.MaxVarintLen64:])
	return dst[:start+k+n]
}
