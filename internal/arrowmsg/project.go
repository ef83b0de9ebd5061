package arrowmsg

import (
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	flatbuffers "github.com/google/flatbuffers/go"
)

// Project keeps the top-level columns cols of an encoded batch, in the given
// order (indexes into schema; repeats allowed). It returns a new Message
// flatbuffer, with the same version, row count, codec and custom metadata
// and the kept nodes and buffers, and a new body made of the kept buffers
// copied as they are (still compressed), each starting 8-byte aligned.
//
// It never decompresses: serving a column subset costs a copy of the kept
// bytes. The input is checked structurally (as Validate does, without
// limits) so that a bad message is an error, never a panic; the caller
// still validates untrusted input with its limits before storing it.
func Project(schema *arrow.Schema, cols []int, meta, body []byte) (newMeta, newBody []byte, err error) {
	p, err := planProjection(schema, cols, meta, body)
	if err != nil {
		return nil, nil, fmt.Errorf("project record batch: %w", err)
	}
	newMeta = make([]byte, len(p.meta))
	copy(newMeta, p.meta)
	newBody = make([]byte, p.hdr.BodyLength)
	p.copyBody(newBody)
	return newMeta, newBody, nil
}

// ProjectAppend is Project, appending the projected message in encapsulated
// form to dst (for example a pooled buffer) and returning the extended
// slice. The body is copied straight into dst. On error dst is returned
// unchanged.
func ProjectAppend(dst []byte, schema *arrow.Schema, cols []int, meta, body []byte) ([]byte, error) {
	p, err := planProjection(schema, cols, meta, body)
	if err != nil {
		return dst, fmt.Errorf("project record batch: %w", err)
	}
	out, err := appendFrame(dst, p.meta)
	if err != nil {
		return dst, fmt.Errorf("project record batch: %w", err)
	}
	start, n := len(out), int(p.hdr.BodyLength)
	out = slices.Grow(out, n)[:start+n] // stale bytes: copyBody overwrites all
	p.copyBody(out[start:])
	return out, nil
}

// projection is a planned Project: the new header and, for each of its
// buffers, where the bytes come from.
type projection struct {
	hdr  RecordBatchHeader
	src  []Buffer // source of hdr.Buffers[i] in body
	body []byte
	meta []byte // hdr as a flatbuffer
}

func planProjection(schema *arrow.Schema, cols []int, meta, body []byte) (*projection, error) {
	hdr, err := ParseRecordBatch(meta)
	if err != nil {
		return nil, err
	}
	spans, err := columnSpans(schema)
	if err != nil {
		return nil, err
	}
	if err := validateHeader(schema, spans, 0, hdr, body, noLimits); err != nil {
		return nil, err
	}
	p := &projection{body: body}
	p.hdr = RecordBatchHeader{Version: hdr.Version, Length: hdr.Length, Codec: hdr.Codec, Metadata: hdr.Metadata}
	var offset int64
	for _, col := range cols {
		if col < 0 || col >= len(spans) {
			return nil, fmt.Errorf("column index %d is out of range for %d columns", col, len(spans))
		}
		sp := spans[col]
		p.hdr.Nodes = append(p.hdr.Nodes, hdr.Nodes[sp.node:sp.node+sp.nodes]...)
		for _, b := range hdr.Buffers[sp.buf : sp.buf+sp.bufs] {
			p.src = append(p.src, b)
			p.hdr.Buffers = append(p.hdr.Buffers, Buffer{Offset: offset, Length: b.Length})
			offset += align8(b.Length)
		}
	}
	p.hdr.BodyLength = offset
	b := flatbuffers.NewBuilder(256 + structSize*(len(p.hdr.Nodes)+len(p.hdr.Buffers)))
	p.meta = buildMessage(b, &p.hdr)
	return p, nil
}

// copyBody writes the new body into out, which is hdr.BodyLength bytes and
// may hold stale bytes: padding is zeroed explicitly.
func (p *projection) copyBody(out []byte) {
	for i, s := range p.src {
		d := p.hdr.Buffers[i]
		copy(out[d.Offset:], p.body[s.Offset:s.Offset+s.Length])
		clear(out[d.Offset+d.Length : d.Offset+align8(d.Length)])
	}
}
