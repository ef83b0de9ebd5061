// Package arrowmsg reads, checks and rewrites Arrow IPC RecordBatch
// messages without decoding their data.
//
// Lakestream stores and serves record batches as encoded IPC messages. Before
// a batch from a client is accepted, Validate proves that every field node and
// buffer it declares fits the table schema and the message body, and that the
// uncompressed sizes it claims stay under the server's limits, so that a
// later decode cannot run out of bounds or be tricked into a huge allocation.
// Project serves a column subset by copying the kept (still compressed)
// buffers into a new body; it never decompresses.
//
// arrow-go keeps its flatbuffer bindings internal, so this package reads and
// builds the Message and RecordBatch tables itself, from Message.fbs and
// Schema.fbs of the Arrow format, with github.com/google/flatbuffers/go.
// Only encoding (AppendRecordBatch) and the tests lean on arrow-go's ipc
// package.
//
// # Encapsulated message
//
// The byte layout below is part of the wire format (Arrow columnar format,
// "Encapsulated message format"); the golden tests pin it.
//
//	offset  size  field
//	0       4     continuation marker 0xFFFFFFFF
//	4       4     metadata length M, int32 little-endian, a multiple of 8
//	8       M     Message flatbuffer, zero padding up to M bytes
//	8+M     B     body: the buffers, each starting at an 8-byte aligned
//	              offset, B = Message.bodyLength
//
// The Message flatbuffer holds a RecordBatch header:
//
//	Message     { version: short, header_type: ubyte (3 = RecordBatch),
//	              header: RecordBatch, bodyLength: long, custom_metadata }
//	RecordBatch { length: long, nodes: [FieldNode], buffers: [Buffer],
//	              compression: BodyCompression, variadicBufferCounts: [long] }
//	FieldNode   struct { length: long, null_count: long }   16 bytes
//	Buffer      struct { offset: long, length: long }       16 bytes, offset
//	                                                         is relative to the body
//
// Field nodes list the columns in pre-order (a node, then its children);
// buffers follow the same order, a fixed number per type (see Layout).
//
// With body compression, every non-empty buffer is framed as
//
//	0       8     uncompressed length, int64 little-endian; -1 means the
//	              bytes that follow are stored uncompressed
//	8       n-8   LZ4 frame or Zstandard frame
//
// An empty buffer stays empty, without the prefix. AppendRecordBatch
// writes Zstandard frames without a checksum and LZ4 frames of 64 KiB
// independent blocks without a content checksum, as Arrow C++ does, and
// stores a buffer as is (-1) when its frame would be no smaller.
//
// # What this package must not import
//
// arrowmsg is a format package at the bottom of the import graph: it imports
// the standard library, arrow-go, flatbuffers and the two compressors
// arrow-go itself uses (klauspost/compress/zstd, pierrec/lz4), and no other
// Lakestream package.
package arrowmsg
