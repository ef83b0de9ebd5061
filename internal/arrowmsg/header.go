package arrowmsg

import (
	"fmt"
)

// Message table field ids (Message.fbs).
const (
	msgVersion        = 0
	msgHeaderType     = 1
	msgHeader         = 2
	msgBodyLength     = 3
	msgCustomMetadata = 4
	msgNumFields      = 5
)

// RecordBatch table field ids (Message.fbs).
const (
	rbLength        = 0
	rbNodes         = 1
	rbBuffers       = 2
	rbCompression   = 3
	rbVariadicCount = 4
	rbNumFields     = 5
)

// BodyCompression and KeyValue table field ids.
const (
	bcCodec  = 0
	bcMethod = 1
	kvKey    = 0
	kvValue  = 1
)

const (
	headerRecordBatch = 3  // MessageHeader union tag of RecordBatch
	structSize        = 16 // FieldNode and Buffer are two longs
	metadataV4        = 3  // MetadataVersion.V4
	metadataV5        = 4  // MetadataVersion.V5, what arrow-go writes
)

// FieldNode is one node of the pre-order flattened column tree.
type FieldNode struct{ Length, NullCount int64 }

// Buffer locates one buffer inside the message body. With body compression
// Length covers the 8-byte uncompressed-length prefix and the frame.
type Buffer struct{ Offset, Length int64 }

// KeyValue is one entry of the message's custom_metadata.
type KeyValue struct{ Key, Value string }

// RecordBatchHeader is the parsed metadata of a RecordBatch message.
type RecordBatchHeader struct {
	Version    int16 // MetadataVersion: 3 (V4) or 4 (V5)
	Length     int64 // rows
	Nodes      []FieldNode
	Buffers    []Buffer
	Codec      Codec
	BodyLength int64
	// VariadicBufferCounts is only used by view types, which this package
	// does not support; Validate rejects a message that carries it.
	VariadicBufferCounts []int64
	// Metadata is the message's custom_metadata; Project keeps it.
	Metadata []KeyValue
}

// ParseRecordBatch reads a Message flatbuffer holding a RecordBatch.
//
// It checks the flatbuffer's structure (every offset lies inside meta), the
// message kind, version and compression, and that the row count and body
// length are not negative. Whether the nodes and buffers fit a schema and a
// body is Validate's job. It never panics: bad input returns an error
// wrapping ErrMalformed or ErrUnsupported.
func ParseRecordBatch(meta []byte) (hdr *RecordBatchHeader, err error) {
	defer func() {
		// Belt and braces: parseRecordBatch checks every offset before
		// reading, and the fuzz test calls it without this recover so a
		// missing check still shows up as a crash there.
		if r := recover(); r != nil {
			hdr, err = nil, fmt.Errorf("parse record batch: %w", malformed("flatbuffer read out of bounds: %v", r))
		}
	}()
	hdr, err = parseRecordBatch(meta)
	if err != nil {
		return nil, fmt.Errorf("parse record batch: %w", err)
	}
	return hdr, nil
}

// parseRecordBatch is ParseRecordBatch without the recover.
func parseRecordBatch(meta []byte) (*RecordBatchHeader, error) {
	msg, err := rootTable(meta)
	if err != nil {
		return nil, err
	}
	hdr := &RecordBatchHeader{}
	rb, err := parseMessage(msg, hdr)
	if err != nil {
		return nil, err
	}
	if err := parseBatch(rb, hdr); err != nil {
		return nil, err
	}
	return hdr, nil
}

// parseMessage fills the Message-level fields of hdr and returns the
// RecordBatch table.
func parseMessage(msg fbTable, hdr *RecordBatchHeader) (fbTable, error) {
	var err error
	if hdr.Version, err = msg.int16Field(msgVersion, 0); err != nil {
		return fbTable{}, err
	}
	if hdr.Version != metadataV4 && hdr.Version != metadataV5 {
		return fbTable{}, unsupported("metadata version %d is not V4 or V5", hdr.Version)
	}
	kind, err := msg.uint8Field(msgHeaderType, 0) // a union tag: ubyte
	if err != nil {
		return fbTable{}, err
	}
	if kind != headerRecordBatch {
		return fbTable{}, malformed("message header has type %d, not a record batch (%d)", kind, headerRecordBatch)
	}
	if hdr.BodyLength, err = msg.int64Field(msgBodyLength, 0); err != nil {
		return fbTable{}, err
	}
	if hdr.BodyLength < 0 {
		return fbTable{}, malformed("message claims a negative body length %d", hdr.BodyLength)
	}
	if hdr.Metadata, err = parseKeyValues(msg, msgCustomMetadata); err != nil {
		return fbTable{}, err
	}
	rb, ok, err := msg.tableField(msgHeader)
	if err != nil {
		return fbTable{}, err
	}
	if !ok {
		return fbTable{}, malformed("message has no record batch header")
	}
	return rb, nil
}

// parseBatch fills the RecordBatch-level fields of hdr.
func parseBatch(rb fbTable, hdr *RecordBatchHeader) error {
	var err error
	if hdr.Length, err = rb.int64Field(rbLength, 0); err != nil {
		return err
	}
	if hdr.Length < 0 {
		return malformed("record batch claims a negative row count %d", hdr.Length)
	}
	if hdr.Nodes, err = parseNodes(rb); err != nil {
		return err
	}
	if hdr.Buffers, err = parseBuffers(rb); err != nil {
		return err
	}
	if hdr.Codec, err = parseCompression(rb); err != nil {
		return err
	}
	hdr.VariadicBufferCounts, err = parseInt64s(rb, rbVariadicCount)
	return err
}

func parseNodes(rb fbTable) ([]FieldNode, error) {
	start, n, err := rb.vectorField(rbNodes, structSize)
	if err != nil || n == 0 {
		return nil, err
	}
	nodes := make([]FieldNode, n)
	for i := range nodes {
		pos := start + int64(i)*structSize
		nodes[i] = FieldNode{Length: rb.int64At(pos), NullCount: rb.int64At(pos + 8)}
	}
	return nodes, nil
}

func parseBuffers(rb fbTable) ([]Buffer, error) {
	start, n, err := rb.vectorField(rbBuffers, structSize)
	if err != nil || n == 0 {
		return nil, err
	}
	bufs := make([]Buffer, n)
	for i := range bufs {
		pos := start + int64(i)*structSize
		bufs[i] = Buffer{Offset: rb.int64At(pos), Length: rb.int64At(pos + 8)}
	}
	return bufs, nil
}

func parseInt64s(t fbTable, id int) ([]int64, error) {
	start, n, err := t.vectorField(id, 8)
	if err != nil || n == 0 {
		return nil, err
	}
	vs := make([]int64, n)
	for i := range vs {
		vs[i] = t.int64At(start + int64(i)*8)
	}
	return vs, nil
}

// parseCompression maps the optional BodyCompression table to a Codec.
func parseCompression(rb fbTable) (Codec, error) {
	bc, ok, err := rb.tableField(rbCompression)
	if err != nil || !ok {
		return CodecNone, err
	}
	method, err := bc.int8Field(bcMethod, fbMethodBuffer)
	if err != nil {
		return CodecNone, err
	}
	if method != fbMethodBuffer {
		return CodecNone, unsupported("body compression method %d is not BUFFER", method)
	}
	codec, err := bc.int8Field(bcCodec, fbCodecLZ4Frame)
	if err != nil {
		return CodecNone, err
	}
	return codecFromFB(codec)
}

// parseKeyValues reads a vector of KeyValue tables.
func parseKeyValues(t fbTable, id int) ([]KeyValue, error) {
	start, n, err := t.vectorField(id, 4)
	if err != nil || n == 0 {
		return nil, err
	}
	kvs := make([]KeyValue, n)
	for i := range kvs {
		pos, err := t.indirect(start + int64(i)*4)
		if err != nil {
			return nil, err
		}
		kv, err := tableAt(t.t.Bytes, pos)
		if err != nil {
			return nil, err
		}
		if kvs[i].Key, err = kv.stringField(kvKey); err != nil {
			return nil, err
		}
		if kvs[i].Value, err = kv.stringField(kvValue); err != nil {
			return nil, err
		}
	}
	return kvs, nil
}
