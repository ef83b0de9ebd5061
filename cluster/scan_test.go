package cluster

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// serveScans serves src's remote reads (and no replicas) on a loopback
// address.
func serveScans(t *testing.T, src ScanSource) string {
	t.Helper()
	r, err := NewReplicas(Config{NodeID: "a", Logger: slog.New(slog.DiscardHandler)}, nil, func(BucketRef) ISRChange { return nil })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	s := grpc.NewServer()
	Register(s, r, src)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(l)
	t.Cleanup(s.Stop)
	return l.Addr().String()
}

// Scan carries the request to the source and its frames back in order;
// an oversized request is refused InvalidArgument, a node serving no
// reads answers Unimplemented, one that is down Unavailable, and a failure
// after frames came says so (ErrScanStarted).
func TestScan(t *testing.T) {
	boom := errors.New("boom")
	addr := serveScans(t, func(_ context.Context, req []byte, send func([]byte) error) error {
		for i := range 3 {
			if err := send(append([]byte{byte(i)}, req...)); err != nil {
				return err
			}
		}
		if string(req) == "fail" {
			return status.Error(codes.Unavailable, boom.Error())
		}
		return nil
	})
	tr := NewGRPCTransport()
	defer tr.Close()
	ctx := context.Background()
	var got []string
	if err := tr.Scan(ctx, addr, []byte("q"), func(f []byte) error { got = append(got, string(f)); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0] != "\x00q" || got[2] != "\x02q" {
		t.Fatalf("frames %q", got)
	}
	err := tr.Scan(ctx, addr, []byte("fail"), func([]byte) error { return nil })
	if !errors.Is(err, ErrScanStarted) || status.Code(err) != codes.Unavailable {
		t.Fatalf("a failure after frames: %v, want ErrScanStarted and Unavailable", err)
	}
	if err := tr.Scan(ctx, addr, make([]byte, MaxScanRequestBytes+1), func([]byte) error { return nil }); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("an oversized request: %v, want InvalidArgument", err)
	}
	if err := tr.Scan(ctx, serveScans(t, nil), []byte("q"), func([]byte) error { return nil }); status.Code(err) != codes.Unimplemented {
		t.Fatalf("a node serving no reads: %v, want Unimplemented", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := l.Addr().String()
	l.Close()
	if err := tr.Scan(ctx, down, []byte("q"), func([]byte) error { return nil }); status.Code(err) != codes.Unavailable || errors.Is(err, ErrScanStarted) {
		t.Fatalf("a node that is down: %v, want Unavailable before any frame", err)
	}
}
