package arrowmsg

import (
	"github.com/apache/arrow-go/v18/arrow"
)

// maxDepth bounds type nesting, as arrow-go's IPC reader and writer do
// (kMaxNestingDepth = 64), so recursion over a schema stays shallow.
const maxDepth = 64

// kind groups the types that share a buffer layout.
type kind uint8

const (
	kindNull      kind = iota // no buffers
	kindFixed                 // validity, data of width bits per value
	kindBinary                // validity, offsets, data
	kindList                  // validity, offsets; child
	kindFixedList             // validity; child of size values per value
	kindStruct                // validity; children
	kindView                  // validity, views; variadic data buffers (incoming batches only)
)

// shape is how one type is laid out in a record batch.
type shape struct {
	kind   kind
	bits   int64             // kindFixed: bits per value
	offset int64             // kindBinary, kindList: bytes per offset (4 or 8)
	size   int64             // kindFixedList: values per list
	elem   arrow.DataType    // kindList, kindFixedList: the child type
	fields *arrow.StructType // kindStruct
}

// shapeOf classifies dt. Extension types are laid out as their storage.
func shapeOf(dt arrow.DataType) (shape, error) {
	for {
		ext, ok := dt.(arrow.ExtensionType)
		if !ok {
			break
		}
		dt = ext.StorageType()
	}
	if dt == nil {
		return shape{}, unsupported("a column has no type")
	}
	switch dt.ID() {
	case arrow.DICTIONARY, arrow.SPARSE_UNION, arrow.DENSE_UNION,
		arrow.STRING_VIEW, arrow.BINARY_VIEW, arrow.LIST_VIEW,
		arrow.LARGE_LIST_VIEW, arrow.RUN_END_ENCODED:
		// Checked by ID before the type switch: several of these also
		// satisfy arrow.FixedWidthDataType.
		return shape{}, unsupported("type %s is not supported", dt)
	}
	switch t := dt.(type) {
	case *arrow.NullType:
		return shape{kind: kindNull}, nil
	case *arrow.StringType, *arrow.BinaryType:
		return shape{kind: kindBinary, offset: 4}, nil
	case *arrow.LargeStringType, *arrow.LargeBinaryType:
		return shape{kind: kindBinary, offset: 8}, nil
	case *arrow.ListType:
		return shape{kind: kindList, offset: 4, elem: t.Elem()}, nil
	case *arrow.MapType: // a list of struct<key, value>
		return shape{kind: kindList, offset: 4, elem: t.Elem()}, nil
	case *arrow.LargeListType:
		return shape{kind: kindList, offset: 8, elem: t.Elem()}, nil
	case *arrow.FixedSizeListType:
		return shape{kind: kindFixedList, size: int64(t.Len()), elem: t.Elem()}, nil
	case *arrow.StructType:
		return shape{kind: kindStruct, fields: t}, nil
	case arrow.FixedWidthDataType: // bool, numbers, decimals, temporals, fixed size binary
		return shape{kind: kindFixed, bits: int64(t.BitWidth())}, nil
	}
	return shape{}, unsupported("type %s is not supported", dt)
}

// ownBuffers is how many buffers a node of this shape has, without children.
func (s shape) ownBuffers() int {
	switch s.kind {
	case kindNull:
		return 0 // IPC V5: a null column has no validity buffer either
	case kindFixedList, kindStruct:
		return 1
	case kindBinary:
		return 3
	}
	return 2
}

// Layout reports how many field nodes and buffers a column of type dt
// occupies in a record batch. Nodes are flattened in pre-order (the field,
// then its children) and buffers follow the Arrow columnar format:
//
//	null                                   0
//	bool, numbers, decimals, temporals,
//	  intervals, fixed size binary         2  validity, data
//	string, binary and their large forms   3  validity, offsets, data
//	list, large list, map                  2 + child  validity, offsets
//	fixed size list                        1 + child  validity
//	struct                                 1 + children  validity
//
// Dictionary, union, view and run-end encoded types return an error
// wrapping ErrUnsupported.
func Layout(dt arrow.DataType) (nodes, buffers int, err error) {
	return layout(dt, 0)
}

func layout(dt arrow.DataType, depth int) (nodes, buffers int, err error) {
	if depth > maxDepth {
		return 0, 0, unsupported("type nests deeper than %d levels", maxDepth)
	}
	s, err := shapeOf(dt)
	if err != nil {
		return 0, 0, err
	}
	nodes, buffers = 1, s.ownBuffers()
	for i := 0; i < s.numChildren(); i++ {
		n, b, err := layout(s.child(i), depth+1)
		if err != nil {
			return 0, 0, err
		}
		nodes, buffers = nodes+n, buffers+b
	}
	return nodes, buffers, nil
}

func (s shape) numChildren() int {
	switch s.kind {
	case kindList, kindFixedList:
		return 1
	case kindStruct:
		return s.fields.NumFields()
	}
	return 0
}

func (s shape) child(i int) arrow.DataType {
	if s.kind == kindStruct {
		return s.fields.Field(i).Type
	}
	return s.elem
}

// span is where one top-level column sits in a message's node and buffer
// lists.
type span struct {
	node, nodes int // first node, node count
	buf, bufs   int // first buffer, buffer count
}

// columnSpans lays out every top-level column of schema.
func columnSpans(schema *arrow.Schema) ([]span, error) {
	if schema == nil {
		return nil, unsupported("no schema")
	}
	spans := make([]span, schema.NumFields())
	var node, buf int
	for i := range spans {
		f := schema.Field(i)
		n, b, err := Layout(f.Type)
		if err != nil {
			return nil, columnError(f.Name, err)
		}
		spans[i] = span{node: node, nodes: n, buf: buf, bufs: b}
		node, buf = node+n, buf+b
	}
	return spans, nil
}

// columnError attaches a column name to an *Error that has none.
func columnError(column string, err error) error {
	if e, ok := err.(*Error); ok && e.Column == "" {
		return &Error{Column: column, Kind: e.Kind, Msg: e.Msg}
	}
	return err
}
