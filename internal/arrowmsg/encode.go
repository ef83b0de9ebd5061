package arrowmsg

import (
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// AppendRecordBatch appends rec to dst as one encapsulated Arrow IPC
// RecordBatch message (see doc.go) whose body buffers are compressed with
// codec, and returns the extended slice. mem holds arrow-go's scratch
// buffers (nil means memory.DefaultAllocator); all of them are released
// before it returns.
//
// Columns must be of types Layout supports: no dictionaries, so a batch
// never depends on a dictionary message. On error dst is returned
// unchanged.
//
// Encoding is left to arrow-go's ipc.GetRecordBatchPayload rather than
// written here: it is the decoder's own writer, so what it emits is what the
// readers expect, and this package only frames it.
func AppendRecordBatch(dst []byte, rec arrow.RecordBatch, codec Codec, mem memory.Allocator) ([]byte, error) {
	if err := checkSchema(rec.Schema()); err != nil {
		return dst, fmt.Errorf("append record batch: %w", err)
	}
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	opts, err := codec.ipcOptions(mem)
	if err != nil {
		return dst, fmt.Errorf("append record batch: %w", err)
	}
	payload, err := ipc.GetRecordBatchPayload(rec, opts...)
	if err != nil {
		return dst, fmt.Errorf("append record batch: encode: %w", err)
	}
	defer payload.Release()
	out, err := appendPayload(dst, &payload)
	if err != nil {
		return dst, fmt.Errorf("append record batch: %w", err)
	}
	return out, nil
}

// checkSchema rejects columns whose layout this package cannot check or
// project.
func checkSchema(schema *arrow.Schema) error {
	_, err := columnSpans(schema)
	return err
}

// appendPayload frames the payload's metadata and writes its body after it.
// It re-reads the metadata it is framing, so a message this package would
// not accept is never produced.
func appendPayload(dst []byte, p *ipc.Payload) ([]byte, error) {
	meta := p.Meta()
	defer meta.Release()
	hdr, err := ParseRecordBatch(meta.Bytes())
	if err != nil {
		return dst, err
	}
	out, err := appendFrame(dst, meta.Bytes())
	if err != nil {
		return dst, err
	}
	start := len(out)
	w := appendWriter{b: slices.Grow(out, int(hdr.BodyLength))}
	if err := p.SerializeBody(&w); err != nil {
		return dst, fmt.Errorf("write body: %w", err)
	}
	if got := int64(len(w.b) - start); got != hdr.BodyLength {
		return dst, fmt.Errorf("write body: wrote %d bytes, metadata claims %d", got, hdr.BodyLength)
	}
	return w.b, nil
}
