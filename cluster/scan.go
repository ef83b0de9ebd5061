package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// Remote reads (docs/cluster.md, "Distributed queries"): a node that holds
// no in-sync replica of a bucket reads it from one that does, over the
// replication service's server-streaming method Scan. The request and the
// frames of the answer are opaque bytes here — the table layer encodes
// them (tables/remote.go, docs/format/replication.md) — so that cluster
// stays below tables: it carries the bytes and knows nothing of rows.
const methodScan = "/" + serviceName + "/Scan"

// MaxScanRequestBytes bounds a Scan request: a table, a bucket, the
// columns and the pushed filters fit in far less.
const MaxScanRequestBytes = 1 << 20

// ScanSource serves Scan: it reads what req asks of this node's replica and
// sends it as frames, each at most the size the client accepts
// (maxMessageBytes). An error is returned to the caller as its gRPC status
// (a status error passes as it is).
type ScanSource func(ctx context.Context, req []byte, send func(frame []byte) error) error

// scanStream is the stream description of Scan, for server and client.
var scanStream = grpc.StreamDesc{StreamName: "Scan", ServerStreams: true}

// scanHandler is the gRPC handler of Scan: one request message, then the
// frames. The server's stream interceptors apply to it as to any stream.
func scanHandler(src ScanSource) grpc.StreamHandler {
	return func(_ any, stream grpc.ServerStream) error {
		if src == nil {
			return status.Error(codes.Unimplemented, "this node serves no remote reads")
		}
		in := new(wrapperspb.BytesValue)
		if err := stream.RecvMsg(in); err != nil {
			return err
		}
		if len(in.Value) > MaxScanRequestBytes {
			return status.Errorf(codes.InvalidArgument, "scan request of %d bytes, more than %d", len(in.Value), MaxScanRequestBytes)
		}
		return src(stream.Context(), in.Value, func(frame []byte) error {
			if len(frame) > maxMessageBytes {
				return fmt.Errorf("scan frame of %d bytes, more than %d", len(frame), maxMessageBytes)
			}
			return stream.SendMsg(wrapperspb.Bytes(frame))
		})
	}
}

// ErrScanStarted wraps an error of a Scan that had already delivered
// frames: the read cannot be taken up on another replica without reading
// some rows twice.
var ErrScanStarted = errors.New("the remote read had started")

// Scan asks the node at addr for req and calls frame with each frame of its
// answer, in order; a frame is valid only during the call. An error before
// the first frame (the node is down, refuses the read) is the transport's
// or the node's status, and the caller may ask another replica; after it,
// it also wraps ErrScanStarted.
func (t *GRPCTransport) Scan(ctx context.Context, addr string, req []byte, frame func([]byte) error) error {
	c, err := t.conn(addr)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // ends the stream when frame fails
	s, err := c.NewStream(ctx, &scanStream, methodScan)
	if err != nil {
		return err
	}
	if err := s.SendMsg(wrapperspb.Bytes(req)); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	if err := s.CloseSend(); err != nil {
		return err
	}
	started := false
	for {
		in := new(wrapperspb.BytesValue)
		err := s.RecvMsg(in)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			if started {
				return fmt.Errorf("%w: %w", ErrScanStarted, err)
			}
			return err
		}
		started = true
		if err := frame(in.Value); err != nil {
			return fmt.Errorf("%w: %w", ErrScanStarted, err)
		}
	}
}
