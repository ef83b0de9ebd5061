package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Forwarding of writes (docs/cluster.md, "Writes sent to any node"): the
// node that receives a write splits it by bucket and sends each bucket's
// part that it does not lead to the bucket's leader with the Forward
// method of the replication service, on the connections replication
// uses. The leader stores the part as if a client had sent it, or refuses
// it; it never forwards it further.
//
//	ForwardRequest   v u8 | table i64 | bucket i32 | schemaID i32 | kind u8
//	                 | writerID i64 | writerSeq i32 | body (the rest)
//	ForwardResponse  v u8 | code u8 | rows i64 | duplicate u8 | message str
//
// The body of KindBatches is stored batches back to back, encoded by the
// sender under schemaID with the writer in their headers: the leader
// appends those bytes as they are. The body of the primary-key kinds is
// opaque here (the tables package encodes it: Arrow IPC, which the leader
// merges through its key index).

// ForwardKind is what a forwarded part holds.
type ForwardKind uint8

const (
	// KindBatches: stored batches of an append-only table.
	KindBatches ForwardKind = iota + 1
	// KindUpsert: rows to upsert into a primary-key table.
	KindUpsert
	// KindStatement: an UPDATE or DELETE of a primary-key table, as SQL
	// text, to apply to the rows of the bucket.
	KindStatement
)

// ForwardCode is a forward's outcome apart from errors that the leader's
// gRPC status carries.
type ForwardCode uint8

const (
	ForwardOK ForwardCode = iota
	// ForwardRefused: the node took nothing of the part (it does not lead
	// the bucket, or too few replicas are in sync): send it again to the
	// leader, also when the call is not idempotent.
	ForwardRefused
)

// MaxForwardBody bounds a forwarded part's body: one atomic write of a
// bucket, under the gRPC servers' default message limit (256 MiB) with
// room for the framing. The sender splits a larger part that is not one
// idempotent call into several; the receiver refuses a larger body before
// reading it as a write.
const MaxForwardBody = 255 << 20

// ForwardRequest is one bucket's part of a write.
type ForwardRequest struct {
	BucketRef
	SchemaID  int32
	Kind      ForwardKind
	WriterID  int64 // 0: not an idempotent call
	WriterSeq int32
	Body      []byte
}

// ForwardResponse is the leader's answer.
type ForwardResponse struct {
	Code      ForwardCode
	Rows      int64 // rows of the part stored (or, of a duplicate, repeated)
	Duplicate bool  // the part repeated the writer's last call: nothing was stored
	Message   string
}

// ForwardHandler stores a forwarded part on the bucket's leader. An error
// is the write's own (a schema error, a writer out of order, a failed
// write): it reaches the client with its gRPC code.
type ForwardHandler func(context.Context, ForwardRequest) (ForwardResponse, error)

// forwardHandler is set once, before the service is served.
type forwardHandler struct {
	h atomic.Pointer[ForwardHandler]
}

// HandleForward makes h store the parts other nodes forward to this one.
func (r *Replicas) HandleForward(h ForwardHandler) { r.fwd.h.Store(&h) }

func (r *Replicas) forward(ctx context.Context, b []byte) ([]byte, error) {
	q, err := decodeForwardRequest(b, MaxForwardBody)
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	h := r.fwd.h.Load()
	if h == nil {
		return nil, status.Error(codes.Unavailable, "this node does not take forwarded writes yet")
	}
	p, err := (*h)(ctx, q)
	if err != nil {
		return nil, err
	}
	return p.encode(), nil
}

func (q ForwardRequest) encode() []byte {
	w := writer{make([]byte, 0, 40+len(q.Body))}
	w.u8(wireVersion)
	w.i64(q.TableID)
	w.i32(q.Bucket)
	w.i32(q.SchemaID)
	w.u8(uint8(q.Kind))
	w.i64(q.WriterID)
	w.i32(q.WriterSeq)
	w.b = append(w.b, q.Body...)
	return w.b
}

func decodeForwardRequest(b []byte, maxBody int) (ForwardRequest, error) {
	r := reader{b: b}
	var q ForwardRequest
	r.version()
	q.TableID, q.Bucket, q.SchemaID = r.i64(), r.i32(), r.i32()
	q.Kind = ForwardKind(r.u8())
	q.WriterID, q.WriterSeq = r.i64(), r.i32()
	q.Body = r.b
	switch {
	case r.err != nil:
		return q, r.err
	case q.Kind < KindBatches || q.Kind > KindStatement:
		return q, fmt.Errorf("forward: unknown kind %d", q.Kind)
	case len(q.Body) > maxBody:
		return q, fmt.Errorf("forward: a body of %d bytes, more than %d", len(q.Body), maxBody)
	case q.Bucket < 0 || (q.WriterID == 0 && q.WriterSeq != 0) || q.WriterSeq < 0:
		return q, errors.New("forward: bad bucket or writer")
	}
	return q, nil
}

func (p ForwardResponse) encode() []byte {
	w := writer{make([]byte, 0, 16+len(p.Message))}
	w.u8(wireVersion)
	w.u8(uint8(p.Code))
	w.i64(p.Rows)
	dup := uint8(0)
	if p.Duplicate {
		dup = 1
	}
	w.u8(dup)
	w.str(p.Message)
	return w.b
}

func decodeForwardResponse(b []byte) (ForwardResponse, error) {
	r := reader{b: b}
	var p ForwardResponse
	r.version()
	p.Code = ForwardCode(r.u8())
	p.Rows = r.i64()
	p.Duplicate = r.u8() == 1
	p.Message = r.str()
	return p, r.err
}

// Forward sends a part to the node at addr.
func (t *GRPCTransport) Forward(ctx context.Context, addr string, q ForwardRequest) (ForwardResponse, error) {
	if len(q.Body) > MaxForwardBody {
		return ForwardResponse{}, fmt.Errorf("forward to %s: a body of %d bytes, more than %d", addr, len(q.Body), MaxForwardBody)
	}
	b, err := t.call(ctx, addr, methodForward, q.encode())
	if err != nil {
		return ForwardResponse{}, err
	}
	return decodeForwardResponse(b)
}
