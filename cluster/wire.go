package cluster

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/lakestream/lakestream/cluster/meta"
)

// The replication messages are byte frames, little-endian, each starting
// with its version (docs/format/replication.md has the diagrams; the byte
// layout below is part of the wire format between nodes of one release and
// the next, so fields are only ever appended under a new version).
//
//	FetchRequest   v u8 | table i64 | bucket i32 | epoch i32 | offset i64
//	               | maxBytes i32 | maxWaitMs i32 | partition str | follower str
//	FetchResponse  v u8 | code u8 | epoch i32 | hw i64 | start i64 | end i64
//	               | message str | batches (stored batches back to back)
//	EpochRequest   v u8 | table i64 | bucket i32 | epoch i32 | asked i32
//	               | partition str
//	EpochResponse  v u8 | code u8 | epoch i32 | foundEpoch i32 | endOffset i64
//	               | message str
//
// str is a u16 length and that many bytes of UTF-8.
const wireVersion = 1

// Code is a replication response's outcome.
type Code uint8

const (
	CodeOK Code = iota
	// CodeFencedEpoch: the request's epoch is older than the leader's: the
	// sender acts on a stale view and must refresh it.
	CodeFencedEpoch
	// CodeUnknownEpoch: the request's epoch is newer than this node knows:
	// it has not yet learnt of the election; ask again shortly.
	CodeUnknownEpoch
	// CodeNotLeader: this node does not lead the bucket.
	CodeNotLeader
	// CodeOutOfRange: the offset is below the leader's retained log or
	// above its end.
	CodeOutOfRange
	// CodeBadRequest: a malformed request.
	CodeBadRequest
)

func (c Code) String() string {
	switch c {
	case CodeOK:
		return "ok"
	case CodeFencedEpoch:
		return "fenced epoch"
	case CodeUnknownEpoch:
		return "unknown epoch"
	case CodeNotLeader:
		return "not leader"
	case CodeOutOfRange:
		return "offset out of range"
	case CodeBadRequest:
		return "bad request"
	}
	return fmt.Sprintf("code %d", uint8(c))
}

// BucketRef names a bucket of a table: the metadata store's key.
type BucketRef = meta.BucketKey

// FetchRequest asks a leader for its batches from Offset, the follower's
// end: everything below it the follower holds durably.
type FetchRequest struct {
	BucketRef
	Epoch     int32 // the leader epoch the follower knows
	Offset    int64
	MaxBytes  int32
	MaxWaitMs int32 // wait this long for a batch at Offset when there is none
	Follower  string
}

// FetchResponse carries the leader's stored batches from the requested
// offset, and what the follower learns with them.
type FetchResponse struct {
	Code    Code
	Epoch   int32 // the leader's epoch
	HW      int64 // the leader's high watermark
	Start   int64 // the leader's retained start
	End     int64 // the leader's durable end
	Message string
	Batches []byte // whole stored batches, back to back
}

// EpochRequest asks a leader where epoch Asked ends in its log (Kafka's
// OffsetsForLeaderEpoch).
type EpochRequest struct {
	BucketRef
	Epoch int32 // the leader epoch the follower knows
	Asked int32
}

// EpochResponse answers an EpochRequest: the largest epoch at most Asked in
// the leader's history, and its end offset; (-1, -1) when there is none.
type EpochResponse struct {
	Code       Code
	Epoch      int32
	FoundEpoch int32
	EndOffset  int64
	Message    string
}

// maxWireString bounds a frame's strings (ids, partitions, messages).
const maxWireString = 1 << 12

var errShortFrame = errors.New("replication frame: truncated")

type writer struct{ b []byte }

func (w *writer) u8(v uint8)  { w.b = append(w.b, v) }
func (w *writer) i32(v int32) { w.b = binary.LittleEndian.AppendUint32(w.b, uint32(v)) }
func (w *writer) i64(v int64) { w.b = binary.LittleEndian.AppendUint64(w.b, uint64(v)) }
func (w *writer) str(s string) {
	if len(s) > maxWireString {
		s = s[:maxWireString]
	}
	w.b = binary.LittleEndian.AppendUint16(w.b, uint16(len(s)))
	w.b = append(w.b, s...)
}

type reader struct {
	b   []byte
	err error
}

func (r *reader) take(n int) []byte {
	if r.err != nil || len(r.b) < n {
		r.err = errShortFrame
		return make([]byte, n)
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}
func (r *reader) u8() uint8  { return r.take(1)[0] }
func (r *reader) i32() int32 { return int32(binary.LittleEndian.Uint32(r.take(4))) }
func (r *reader) i64() int64 { return int64(binary.LittleEndian.Uint64(r.take(8))) }
func (r *reader) str() string {
	n := int(binary.LittleEndian.Uint16(r.take(2)))
	if n > maxWireString {
		r.err = fmt.Errorf("replication frame: a string of %d bytes, more than %d", n, maxWireString)
		return ""
	}
	return string(r.take(n))
}

// version reads and checks the frame's version.
func (r *reader) version() {
	if v := r.u8(); r.err == nil && v != wireVersion {
		r.err = fmt.Errorf("replication frame: version %d, this node speaks %d", v, wireVersion)
	}
}

func (q FetchRequest) encode() []byte {
	w := writer{make([]byte, 0, 64)}
	w.u8(wireVersion)
	w.i64(q.TableID)
	w.i32(q.Bucket)
	w.i32(q.Epoch)
	w.i64(q.Offset)
	w.i32(q.MaxBytes)
	w.i32(q.MaxWaitMs)
	w.str(q.Partition)
	w.str(q.Follower)
	return w.b
}

func decodeFetchRequest(b []byte) (FetchRequest, error) {
	r := reader{b: b}
	var q FetchRequest
	r.version()
	q.TableID, q.Bucket, q.Epoch, q.Offset = r.i64(), r.i32(), r.i32(), r.i64()
	q.MaxBytes, q.MaxWaitMs = r.i32(), r.i32()
	q.Partition, q.Follower = r.str(), r.str()
	return q, r.err
}

func (p FetchResponse) encode() []byte {
	w := writer{make([]byte, 0, 40+len(p.Message)+len(p.Batches))}
	w.u8(wireVersion)
	w.u8(uint8(p.Code))
	w.i32(p.Epoch)
	w.i64(p.HW)
	w.i64(p.Start)
	w.i64(p.End)
	w.str(p.Message)
	w.b = append(w.b, p.Batches...)
	return w.b
}

func decodeFetchResponse(b []byte) (FetchResponse, error) {
	r := reader{b: b}
	var p FetchResponse
	r.version()
	p.Code = Code(r.u8())
	p.Epoch, p.HW, p.Start, p.End = r.i32(), r.i64(), r.i64(), r.i64()
	p.Message = r.str()
	p.Batches = r.b
	return p, r.err
}

func (q EpochRequest) encode() []byte {
	w := writer{make([]byte, 0, 32)}
	w.u8(wireVersion)
	w.i64(q.TableID)
	w.i32(q.Bucket)
	w.i32(q.Epoch)
	w.i32(q.Asked)
	w.str(q.Partition)
	return w.b
}

func decodeEpochRequest(b []byte) (EpochRequest, error) {
	r := reader{b: b}
	var q EpochRequest
	r.version()
	q.TableID, q.Bucket, q.Epoch, q.Asked = r.i64(), r.i32(), r.i32(), r.i32()
	q.Partition = r.str()
	return q, r.err
}

func (p EpochResponse) encode() []byte {
	w := writer{make([]byte, 0, 32)}
	w.u8(wireVersion)
	w.u8(uint8(p.Code))
	w.i32(p.Epoch)
	w.i32(p.FoundEpoch)
	w.i64(p.EndOffset)
	w.str(p.Message)
	return w.b
}

func decodeEpochResponse(b []byte) (EpochResponse, error) {
	r := reader{b: b}
	var p EpochResponse
	r.version()
	p.Code = Code(r.u8())
	p.Epoch, p.FoundEpoch, p.EndOffset = r.i32(), r.i32(), r.i64()
	p.Message = r.str()
	return p, r.err
}
