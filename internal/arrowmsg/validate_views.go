package arrowmsg

import (
	"github.com/apache/arrow-go/v18/arrow"
)

// View types in incoming record batches. Clients such as polars send
// strings as string_view: a node has a validity bitmap, a views buffer of
// 16 bytes per value (length, prefix, buffer index, offset) and a number
// of variadic data buffers given, per view node in schema order, by the
// message's variadicBufferCounts. Validate checks those counts and each
// buffer's place in the body; the views themselves (which buffer and
// range each points to) are checked by decoding, as offsets into data are.
// The stored format has no view types: a view column is cast to its plain
// type before it is written (tables' conform).

// maxVariadicBuffers bounds the data buffers of one view node.
const maxVariadicBuffers = 1 << 20

// inputShapeOf is shapeOf, with the view types of incoming batches.
func inputShapeOf(dt arrow.DataType) (shape, error) {
	for {
		ext, ok := dt.(arrow.ExtensionType)
		if !ok {
			break
		}
		dt = ext.StorageType()
	}
	if dt != nil && (dt.ID() == arrow.STRING_VIEW || dt.ID() == arrow.BINARY_VIEW) {
		return shape{kind: kindView}, nil
	}
	if d, ok := dt.(*arrow.DictionaryType); ok { // the indices (validate_dict.go)
		if idx, ok := d.IndexType.(arrow.FixedWidthDataType); ok && arrow.IsInteger(idx.ID()) {
			return shape{kind: kindFixed, bits: int64(idx.BitWidth())}, nil
		}
		return shape{}, unsupported("dictionary index type %s is not an integer", d.IndexType)
	}
	return shapeOf(dt)
}

// inputLayout is Layout for incoming batches: view nodes count their
// validity and views buffers here; views counts the view nodes, whose
// variadic buffers the message gives.
func inputLayout(dt arrow.DataType, depth int) (nodes, buffers, views int, err error) {
	if depth > maxDepth {
		return 0, 0, 0, unsupported("type nests deeper than %d levels", maxDepth)
	}
	s, err := inputShapeOf(dt)
	if err != nil {
		return 0, 0, 0, err
	}
	nodes, buffers = 1, s.ownBuffers()
	if s.kind == kindView {
		return 1, 2, 1, nil
	}
	for i := 0; i < s.numChildren(); i++ {
		n, b, v, err := inputLayout(s.child(i), depth+1)
		if err != nil {
			return 0, 0, 0, err
		}
		nodes, buffers, views = nodes+n, buffers+b, views+v
	}
	return nodes, buffers, views, nil
}

// inputSpans lays out every top-level column of an incoming schema, and
// counts its view nodes.
func inputSpans(schema *arrow.Schema) ([]span, int, error) {
	if schema == nil {
		return nil, 0, unsupported("no schema")
	}
	spans := make([]span, schema.NumFields())
	var node, buf, views int
	for i := range spans {
		f := schema.Field(i)
		n, b, v, err := inputLayout(f.Type, 0)
		if err != nil {
			return nil, 0, columnError(f.Name, err)
		}
		spans[i] = span{node: node, nodes: n, buf: buf, bufs: b}
		node, buf, views = node+n, buf+b, views+v
	}
	return spans, views, nil
}

// checkVariadic checks the variadic buffer counts against the schema's
// view nodes and returns the buffers they add.
func checkVariadic(hdr *RecordBatchHeader, views int) (int, error) {
	if len(hdr.VariadicBufferCounts) != views {
		return 0, malformed("message has %d variadic buffer counts, the schema has %d view columns", len(hdr.VariadicBufferCounts), views)
	}
	total := 0
	for _, n := range hdr.VariadicBufferCounts {
		if n < 0 || n > maxVariadicBuffers {
			return 0, malformed("a view column claims %d data buffers", n)
		}
		total += int(n)
	}
	return total, nil
}

// view checks a view node's views buffer and its data buffers.
func (c *checker) view(n FieldNode) error {
	if err := c.buffer(satMul(n.Length, 16), n.Length); err != nil {
		return err
	}
	count := c.hdr.VariadicBufferCounts[c.nextV]
	c.nextV++
	for range count {
		if err := c.buffer(0, n.Length); err != nil { // bounded by the views, checked by decoding
			return err
		}
	}
	return nil
}
