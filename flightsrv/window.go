package flightsrv

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc/encoding"
	protoenc "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/stats"
	"google.golang.org/protobuf/proto"
)

// What gRPC (grpc-go 1.85) does with the messages of a server stream, read
// from its transport and measured (docs/flight.md, "Memory"). arrow-go's
// Flight server adds nothing: DoGet's stream is the generated gRPC stream,
// and its record writer sends one message per IPC payload.
//
//   - Send marshals the message into a buffer from gRPC's pool (rounded up
//     to the pool's size tiers: a 224 KB query batch took a 1 MiB buffer)
//     and queues it for the connection's writer. It blocks only when the
//     stream has used up its write quota, a fixed 64 KiB of queued bytes
//     (transport's defaultWriteQuota), and then until the writer has
//     written enough. The quota is checked before a message is queued, not
//     against its size, so one message of any size always goes in: gRPC
//     queues at most 64 KiB plus the message being sent per stream. It
//     does not buffer without bound.
//   - The writer writes a stream's bytes only within the HTTP/2 flow
//     control windows the client grants (64 KiB at first; a Go client's
//     grow to 16 MiB), and frees each message once it is written. A client
//     that stops reading stops granting: the bytes stay queued, and a Send
//     that finds the quota used up blocks until the client reads, cancels,
//     or the connection ends. Nothing on the server can interrupt it: a
//     handler blocked in Send pins everything it holds (its log reader's
//     read-ahead, a running DuckDB query, a subscription's followers) for
//     as long as the client keeps the stream open. That, not gRPC's queue,
//     was most of a stalled stream's memory.
//   - When the handler returns, the status is queued behind the stream's
//     unwritten data: a stream that is cut off keeps its queued bytes until
//     the client reads them or the connection closes; when the connection
//     closes, gRPC drops them without freeing them.
//
// So a stream must never call Send while gRPC holds a full quota of its
// bytes: it waits itself, where its stall timeout and its client going
// away interrupt it (pipe.go). To know when gRPC has written a message,
// the service marshals its results itself (codec, below) into buffers of
// their own size whose release, which gRPC calls once the writer is done
// with them, gives the message back to its stream's window; a stats
// handler gives back what a closed connection held (connTracker).

// grpcWriteQuota is grpc-go's per-stream write quota (defaultWriteQuota in
// google.golang.org/grpc/internal/transport): Send blocks once a stream has
// this many bytes queued and not yet written.
const grpcWriteQuota = 64 << 10

// messageOverhead bounds what a FlightData message costs beyond its three
// byte fields: the protobuf tags and lengths, and gRPC's 5-byte message
// header. Counting it keeps the window's count at or above gRPC's own.
const messageOverhead = 64

// messageBytes is what a message is charged: its size on the wire.
func messageBytes(fd *flight.FlightData) int64 {
	return int64(len(fd.DataHeader)+len(fd.DataBody)+len(fd.AppMetadata)) + messageOverhead
}

// window counts one DoGet stream's messages from when they are produced
// until gRPC has written them: the queued ones and those gRPC holds. The
// whole window is charged to the budget when the stream starts (pipe.go),
// so a running stream waits for its client, never for other streams. A
// message larger than the window goes alone, and its bytes beyond the
// window are charged to the budget on their own.
type window struct {
	size  int64
	b     *budget
	total *atomic.Int64 // bytes produced and not yet written, of every stream
	conn  *connState    // nil outside a connection tagged by connTracker

	mu struct {
		sync.Mutex
		produced int64 // bytes queued in the pipe and held by gRPC
		inGRPC   int64 // bytes handed to gRPC and not yet written
		covered  int64 // of produced, the bytes within the window's charge
		// progress is when gRPC last finished writing one of the stream's
		// messages, or, if later, when it was handed one with none held.
		progress time.Time
		// changed is closed, and replaced, each time bytes are given back.
		changed chan struct{}
		held    map[*tracked]struct{} // handed to gRPC, not yet written
		// ended: the handler has returned and given back the part of the
		// window not in use; the rest goes back message by message.
		ended bool
	}
}

// share is one message's part of a window and of the budget.
type share struct {
	n        int64 // the message's bytes
	inWindow int64 // of them, within the window's charge
	extra    int64 // charged to the budget beyond the window
}

func newWindow(ctx context.Context, size int64, b *budget, total *atomic.Int64) *window {
	w := &window{size: size, b: b, total: total}
	w.mu.progress = time.Now()
	w.mu.changed = make(chan struct{})
	w.mu.held = make(map[*tracked]struct{})
	if cs, ok := ctx.Value(connKey{}).(*connState); ok && cs.add(w) {
		w.conn = cs
	}
	return w
}

// reserve waits until a message of n bytes fits the window (a message
// larger than the window waits until the stream has nothing in flight, and
// is charged what it has beyond it) and counts it. Like waitSendable, it
// gives up with a stallError once gRPC has written nothing of the stream
// for stall; st counts the wait.
func (w *window) reserve(ctx context.Context, n int64, stall time.Duration, st *streamState) (share, error) {
	fits := func() bool { return w.mu.produced == 0 || w.mu.produced+n <= w.size }
	if err := w.wait(ctx, fits, stall, st); err != nil {
		return share{}, err
	}
	sh := share{n: n, inWindow: min(n, w.size)}
	w.mu.produced += n
	w.mu.covered += sh.inWindow
	w.mu.Unlock()
	w.total.Add(n)
	if n > w.size {
		extra, err := w.b.acquire(ctx, n-w.size, stall, st)
		if err != nil {
			w.unreserve(sh)
			return share{}, err
		}
		sh.extra = extra
	}
	return sh, nil
}

// waitSendable waits until gRPC holds less than its write quota of the
// stream's bytes, so that the next Send does not block, giving up with a
// stallError once gRPC has written nothing of the stream for stall: the
// client is not reading.
func (w *window) waitSendable(ctx context.Context, stall time.Duration, st *streamState) error {
	if err := w.wait(ctx, func() bool { return w.mu.inGRPC < grpcWriteQuota }, stall, st); err != nil {
		return err
	}
	w.mu.Unlock()
	return nil
}

// wait returns with w.mu held once cond (called with w.mu held) holds, or
// without it and with an error: ctx's, or a stallError once gRPC has
// written nothing of the stream for stall.
func (w *window) wait(ctx context.Context, cond func() bool, stall time.Duration, st *streamState) error {
	waiting := false
	defer func() {
		if waiting {
			st.waitEnd()
		}
	}()
	for {
		w.mu.Lock()
		if cond() {
			return nil
		}
		changed, left, held := w.mu.changed, time.Until(w.mu.progress.Add(stall)), w.mu.produced
		w.mu.Unlock()
		if left <= 0 {
			return stallError{timeout: stall, waiting: held}
		}
		if !waiting {
			waiting = true
			st.waitBegin()
		}
		timer := time.NewTimer(left)
		select {
		case <-changed:
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			return ctx.Err()
		}
		timer.Stop()
	}
}

// unreserve gives back a message that was counted but will not be sent.
func (w *window) unreserve(sh share) {
	w.mu.Lock()
	release := w.giveBackLocked(sh)
	w.mu.Unlock()
	w.total.Add(-sh.n)
	w.b.release(release)
}

// giveBackLocked uncounts a message and returns what to give back to the
// budget: its extra charge and, once the handler has returned, its part of
// the window.
func (w *window) giveBackLocked(sh share) int64 {
	w.mu.produced -= sh.n
	w.mu.covered -= sh.inWindow
	w.notifyLocked()
	if w.mu.ended {
		return sh.inWindow + sh.extra
	}
	return sh.extra
}

// handOver wraps a reserved message for Send: gRPC gives it back once
// written.
func (w *window) handOver(fd *flight.FlightData, sh share) *tracked {
	t := &tracked{fd: fd, share: sh, w: w}
	w.mu.Lock()
	if w.mu.inGRPC == 0 {
		// The client's clock starts when something waits for it.
		w.mu.progress = time.Now()
	}
	w.mu.inGRPC += sh.n
	w.mu.held[t] = struct{}{}
	w.mu.Unlock()
	return t
}

// written gives back a message gRPC is done with.
func (w *window) written(t *tracked) {
	w.mu.Lock()
	w.mu.inGRPC -= t.n
	w.mu.progress = time.Now()
	delete(w.mu.held, t)
	release := w.giveBackLocked(t.share)
	done := w.mu.ended && len(w.mu.held) == 0
	w.mu.Unlock()
	w.total.Add(-t.n)
	w.b.release(release)
	if done && w.conn != nil {
		w.conn.remove(w)
	}
}

func (w *window) notifyLocked() {
	close(w.mu.changed)
	w.mu.changed = make(chan struct{})
}

// end is the handler returning, after its queue is discarded: the part of
// the window not in use goes back to the budget. Messages gRPC still holds
// stay charged until it writes them or their connection closes.
func (w *window) end() {
	w.mu.Lock()
	w.mu.ended = true
	release := w.size - w.mu.covered
	done := len(w.mu.held) == 0
	w.mu.Unlock()
	w.b.release(release)
	if done && w.conn != nil {
		w.conn.remove(w)
	}
}

// abandon gives back every message gRPC still holds: their connection is
// gone, and gRPC does not free what it had queued on it.
func (w *window) abandon() {
	w.mu.Lock()
	held := make([]*tracked, 0, len(w.mu.held))
	for t := range w.mu.held {
		held = append(held, t)
	}
	w.mu.Unlock()
	for _, t := range held {
		t.release()
	}
}

// tracked is a result message on its way through gRPC. It is the
// mem.BufferPool of the buffer the codec marshals it into: gRPC puts the
// buffer back once the message is written, which releases the message.
type tracked struct {
	fd *flight.FlightData // until marshalled
	share
	w        *window
	released atomic.Bool
}

func (t *tracked) release() {
	if t.released.CompareAndSwap(false, true) {
		t.w.written(t)
	}
}

// Get is never called for a buffer of this pool; it serves a plain buffer.
func (t *tracked) Get(n int) *[]byte {
	b := make([]byte, n)
	return &b
}

// Put is gRPC giving back the message's buffer: it is written.
func (t *tracked) Put(*[]byte) { t.release() }

// codec is gRPC's protobuf codec, except that it marshals a tracked
// message into a buffer that reports when gRPC frees it.
type codec struct{ proto encoding.CodecV2 }

func newCodec() codec { return codec{proto: encoding.GetCodecV2(protoenc.Name)} }

func (c codec) Name() string { return protoenc.Name }

func (c codec) Unmarshal(data mem.BufferSlice, v any) error { return c.proto.Unmarshal(data, v) }

func (c codec) Marshal(v any) (mem.BufferSlice, error) {
	t, ok := v.(*tracked)
	if !ok {
		return c.proto.Marshal(v)
	}
	size := proto.Size(t.fd)
	// gRPC never frees a buffer at or below its pooling threshold (1 KiB,
	// mem.IsBelowBufferPoolingThreshold); growing the capacity past it makes
	// gRPC free, and so report, every one.
	capacity := size
	for mem.IsBelowBufferPoolingThreshold(capacity) {
		capacity = 2*capacity + 1
	}
	buf := make([]byte, 0, capacity)
	buf, err := proto.MarshalOptions{UseCachedSize: true}.MarshalAppend(buf, t.fd)
	if err != nil {
		return nil, fmt.Errorf("marshal flight data: %w", err)
	}
	// The message's buffers (a scan's are slices of its log reader's) are
	// not needed once copied: do not keep them alive while gRPC holds it.
	t.fd = nil
	return mem.BufferSlice{mem.NewBuffer(&buf, t)}, nil
}

// connTracker is a gRPC stats handler that gives each connection a
// connState, so that the messages gRPC still held for a connection that
// closed are given back: gRPC drops them without freeing them.
type connTracker struct{}

type connKey struct{}

// connState is one connection's streams that have messages in gRPC.
type connState struct {
	mu      sync.Mutex
	windows map[*window]struct{}
	closed  bool
}

// add registers w; false once the connection is closed.
func (c *connState) add(w *window) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.windows[w] = struct{}{}
	return true
}

func (c *connState) remove(w *window) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.windows, w)
}

func (c *connState) close() {
	c.mu.Lock()
	c.closed = true
	windows := c.windows
	c.windows = nil
	c.mu.Unlock()
	for w := range windows {
		w.abandon()
	}
}

func (connTracker) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context {
	return context.WithValue(ctx, connKey{}, &connState{windows: map[*window]struct{}{}})
}

func (connTracker) HandleConn(ctx context.Context, s stats.ConnStats) {
	if _, ok := s.(*stats.ConnEnd); ok {
		if cs, ok := ctx.Value(connKey{}).(*connState); ok {
			cs.close()
		}
	}
}

func (connTracker) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context { return ctx }

func (connTracker) HandleRPC(context.Context, stats.RPCStats) {}
