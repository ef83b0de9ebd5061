package cluster

import (
	"context"
	"encoding/hex"
	"log/slog"
	"net"
	"reflect"
	"testing"
	"time"

	"google.golang.org/grpc"
)

// The bytes of a fetch request are part of the wire between nodes.
func TestFetchRequestBytesPinned(t *testing.T) {
	q := FetchRequest{BucketRef: BucketRef{TableID: 7, Partition: "p", Bucket: 2}, Epoch: 3, Offset: 1000, MaxBytes: 1 << 20, MaxWaitMs: 500, Follower: "n2"}
	const want = "01" + "0700000000000000" + "02000000" + "03000000" + "e803000000000000" + "00001000" + "f4010000" + "010070" + "02006e32"
	if got := hex.EncodeToString(q.encode()); got != want {
		t.Fatalf("fetch request bytes\n got %s\nwant %s", got, want)
	}
}

func TestFramesRoundTrip(t *testing.T) {
	q := FetchRequest{BucketRef: BucketRef{TableID: 7, Partition: "day=2026-12-07", Bucket: 2}, Epoch: 3, Offset: 1000, MaxBytes: 1 << 20, MaxWaitMs: 500, Follower: "n2"}
	if got, err := decodeFetchRequest(q.encode()); err != nil || !reflect.DeepEqual(got, q) {
		t.Errorf("fetch request: %+v, %v", got, err)
	}
	p := FetchResponse{Code: CodeOutOfRange, Epoch: 3, HW: 10, Start: 2, End: 12, Message: "m", Batches: []byte{1, 2, 3}}
	if got, err := decodeFetchResponse(p.encode()); err != nil || !reflect.DeepEqual(got, p) {
		t.Errorf("fetch response: %+v, %v", got, err)
	}
	e := EpochRequest{BucketRef: BucketRef{TableID: 1, Bucket: 4}, Epoch: 9, Asked: 8}
	if got, err := decodeEpochRequest(e.encode()); err != nil || !reflect.DeepEqual(got, e) {
		t.Errorf("epoch request: %+v, %v", got, err)
	}
	er := EpochResponse{Code: CodeOK, Epoch: 9, FoundEpoch: 7, EndOffset: 55, Message: ""}
	if got, err := decodeEpochResponse(er.encode()); err != nil || !reflect.DeepEqual(got, er) {
		t.Errorf("epoch response: %+v, %v", got, err)
	}
	// Every truncation of a request is an error, never a panic.
	b := q.encode()
	for n := range len(b) {
		if _, err := decodeFetchRequest(b[:n]); err == nil {
			t.Errorf("a request cut to %d bytes decoded", n)
		}
	}
	b[0] = 9
	if _, err := decodeFetchRequest(b); err == nil {
		t.Error("an unknown version decoded")
	}
}

func FuzzDecodeFrames(f *testing.F) {
	f.Add(FetchRequest{BucketRef: BucketRef{TableID: 1}, Follower: "a"}.encode())
	f.Add(EpochRequest{BucketRef: BucketRef{TableID: 1, Partition: "x"}}.encode())
	f.Fuzz(func(t *testing.T, b []byte) {
		decodeFetchRequest(b)
		decodeFetchResponse(b)
		decodeEpochRequest(b)
		decodeEpochResponse(b)
	})
}

// A leader and a follower replicate over the gRPC service on loopback.
func TestReplicationOverGRPC(t *testing.T) {
	logs := map[string]*memLog{"a": newMemLog(), "b": newMemLog()}
	tr := NewGRPCTransport()
	defer tr.Close()
	addrs := map[string]string{}
	nodes := map[string]*Replicas{}
	for _, id := range []string{"a", "b"} {
		r, err := NewReplicas(Config{NodeID: id, FetchMaxWait: 50 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)}, tr,
			func(BucketRef) ISRChange { return nil })
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		r.Add(ref0, logs[id])
		s := grpc.NewServer()
		Register(s, r, nil)
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		go s.Serve(l)
		defer s.Stop()
		addrs[id], nodes[id] = l.Addr().String(), r
	}
	a := Assignment{Ref: ref0, Replicas: []string{"a", "b"}, Leader: "a", LeaderAddr: addrs["a"], Epoch: 1, ISR: []string{"a", "b"}, MinISR: 2, Version: 1}
	for _, id := range []string{"a", "b"} {
		if err := nodes[id].Apply(a); err != nil {
			t.Fatal(err)
		}
	}
	var end int64
	for i := range 5 {
		end = logs["a"].appendLeader(100, "x")
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		if err := nodes["a"].WaitAcked(ctx, ref0, end); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
		cancel()
	}
	if string(logs["b"].bytesBelow(end)) != string(logs["a"].bytesBelow(end)) {
		t.Fatal("the follower's bytes differ")
	}
	// A malformed frame is InvalidArgument.
	if _, err := tr.call(context.Background(), addrs["a"], methodFetch, []byte{1, 2}); err == nil {
		t.Fatal("a malformed fetch was answered")
	}
}
