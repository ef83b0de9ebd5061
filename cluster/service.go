package cluster

import (
	"context"
	"fmt"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// The replication service is served beside Flight SQL on each node's gRPC
// server. Its two unary methods carry the frames of wire.go in protobuf
// BytesValue envelopes, so they need no generated code.
const (
	serviceName       = "lakestream.replication.v1.Replication"
	methodFetch       = "/" + serviceName + "/Fetch"
	methodEndForEpoch = "/" + serviceName + "/EndForEpoch"
	methodForward     = "/" + serviceName + "/Forward" // forward.go
)

// maxMessageBytes is the largest replication message either side accepts:
// a fetch response holds at least one batch, which may be as large as the
// log's largest (columnarlog's MaxBatchBytes default, 256 MiB), and its
// header.
const maxMessageBytes = 256<<20 + 1<<20

// replicationServer is the interface grpc.ServiceDesc asks for.
type replicationServer interface{}

// Register serves r's replication on s, and remote reads of this node's
// replicas from src (scan.go; nil: none). The server's interceptors apply
// to its calls as to any other (authentication, observation).
func Register(s *grpc.Server, r *Replicas, src ScanSource) {
	s.RegisterService(&grpc.ServiceDesc{
		ServiceName: serviceName,
		HandlerType: (*replicationServer)(nil),
		Methods: []grpc.MethodDesc{
			{MethodName: "Fetch", Handler: unary("Fetch", func(ctx context.Context, b []byte) ([]byte, error) {
				q, err := decodeFetchRequest(b)
				if err != nil {
					return nil, status.Error(codes.InvalidArgument, err.Error())
				}
				if peer, ok := PeerNode(ctx); ok && peer != q.Follower {
					return nil, status.Errorf(codes.PermissionDenied, "node %q fetches as replica %q: a node fetches as itself", peer, q.Follower)
				}
				return r.fetch(ctx, q).encode(), nil
			})},
			{MethodName: "EndForEpoch", Handler: unary("EndForEpoch", func(_ context.Context, b []byte) ([]byte, error) {
				q, err := decodeEpochRequest(b)
				if err != nil {
					return nil, status.Error(codes.InvalidArgument, err.Error())
				}
				return r.endForEpoch(q).encode(), nil
			})},
			{MethodName: "Forward", Handler: unary("Forward", r.forward)},
		},
		Streams:  []grpc.StreamDesc{{StreamName: "Scan", Handler: scanHandler(src), ServerStreams: true}},
		Metadata: "lakestream/cluster/service.go",
	}, struct{}{})
}

type peerNodeKey struct{}

// WithPeerNode returns ctx saying that the call comes from the node id,
// as its certificate proved (the node's interceptor sets it when the
// cluster runs mutual TLS). A fetch then names that node as its follower
// or is refused: a node cannot fetch as another's replica and move the
// in-sync set in its name.
func WithPeerNode(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, peerNodeKey{}, id)
}

// PeerNode returns the node id WithPeerNode put into ctx.
func PeerNode(ctx context.Context) (string, bool) {
	id, ok := ctx.Value(peerNodeKey{}).(string)
	return id, ok
}

// unary is the gRPC method handler of one replication call: it decodes the
// request envelope and runs h through the server's interceptor chain.
func unary(method string, h func(context.Context, []byte) ([]byte, error)) grpc.MethodHandler {
	call := func(ctx context.Context, req any) (any, error) {
		out, err := h(ctx, req.(*wrapperspb.BytesValue).Value)
		if err != nil {
			return nil, err
		}
		return wrapperspb.Bytes(out), nil
	}
	info := &grpc.UnaryServerInfo{FullMethod: "/" + serviceName + "/" + method}
	return func(srv any, ctx context.Context, dec func(any) error, interceptor grpc.UnaryServerInterceptor) (any, error) {
		in := new(wrapperspb.BytesValue)
		if err := dec(in); err != nil {
			return nil, err
		}
		if interceptor == nil {
			return call(ctx, in)
		}
		info := *info
		info.Server = srv
		return interceptor(ctx, in, &info, call)
	}
}

// GRPCTransport reaches other nodes' replication services over gRPC, one
// connection per address, kept.
type GRPCTransport struct {
	opts []grpc.DialOption
	mu   sync.Mutex
	cons map[string]*grpc.ClientConn
}

// NewGRPCTransport dials with opts; none means plaintext (a cluster on a
// trusted network, without node-to-node TLS).
func NewGRPCTransport(opts ...grpc.DialOption) *GRPCTransport {
	if len(opts) == 0 {
		opts = []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	}
	opts = append(opts, grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMessageBytes), grpc.MaxCallSendMsgSize(maxMessageBytes)))
	return &GRPCTransport{opts: opts, cons: map[string]*grpc.ClientConn{}}
}

func (t *GRPCTransport) conn(addr string) (*grpc.ClientConn, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if c, ok := t.cons[addr]; ok {
		return c, nil
	}
	c, err := grpc.NewClient(addr, t.opts...)
	if err != nil {
		return nil, fmt.Errorf("replication: connect %s: %w", addr, err)
	}
	t.cons[addr] = c
	return c, nil
}

func (t *GRPCTransport) call(ctx context.Context, addr, method string, req []byte) ([]byte, error) {
	c, err := t.conn(addr)
	if err != nil {
		return nil, err
	}
	out := new(wrapperspb.BytesValue)
	if err := c.Invoke(ctx, method, wrapperspb.Bytes(req), out); err != nil {
		return nil, fmt.Errorf("replication %s at %s: %w", method, addr, err)
	}
	return out.Value, nil
}

func (t *GRPCTransport) Fetch(ctx context.Context, addr string, q FetchRequest) (FetchResponse, error) {
	b, err := t.call(ctx, addr, methodFetch, q.encode())
	if err != nil {
		return FetchResponse{}, err
	}
	return decodeFetchResponse(b)
}

func (t *GRPCTransport) EndForEpoch(ctx context.Context, addr string, q EpochRequest) (EpochResponse, error) {
	b, err := t.call(ctx, addr, methodEndForEpoch, q.encode())
	if err != nil {
		return EpochResponse{}, err
	}
	return decodeEpochResponse(b)
}

// Close closes every connection.
func (t *GRPCTransport) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	for addr, c := range t.cons {
		c.Close()
		delete(t.cons, addr)
	}
	return nil
}
