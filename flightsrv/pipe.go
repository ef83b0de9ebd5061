package flightsrv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Every DoGet result of Lakestream's own tickets runs as a pipe. For a
// query or a subscription a producer goroutine reads (the engine's records,
// the followers' batches) and emits FlightData messages into a queue, and
// the handler's goroutine sends them; a scan produces and sends on the
// handler's goroutine (inline, below). In bytes:
//
//	read-ahead ┐
//	           producer ──emit──► queue ──Send──► gRPC ──written──► connection
//	           └──────────── window (Options.StreamWindow) ────────────┘
//
// A stream starts once its readers' read-ahead and its window fit the
// node's budget (Options.StreamMemory), and keeps both until it ends: it
// waits for the budget only to start, and to send a message larger than
// its window, never because other streams are slow. The producer waits
// while the window is full: the client reads slower than the stream
// produces. The handler sends only while gRPC holds less than its write
// quota of the stream's bytes, so it never blocks in Send, where nothing
// could interrupt it (window.go). A stream whose client reads nothing for
// Options.StallTimeout while results wait is cut off with
// ResourceExhausted (stallError), and so is one that waits that long to
// start (budgetError). Cutting a stream off stops its producer and gives
// back its read-ahead and the unused part of its window; what gRPC already
// holds for it (its write quota plus one message at most) stays charged
// until the client reads it or the connection closes.

// What a stream's readers read ahead of what it sends, charged to the
// budget while the stream runs. It is the bulk of a stalled stream's
// memory (docs/flight.md, "Memory"); the readers belong to package tables
// and the engine, which do not report it, so these are their read sizes.
const (
	// A scan reads its log ranges with tables.Table.ReadBatches, 4 MiB of
	// stored batches at a time into a buffer that grows by doubling.
	scanReadAhead = 8 << 20
	// A subscription follows each bucket with tables.Table.Follow, 1 MiB
	// at a time, and each follower holds the decoded batch it hands over:
	// per bucket followed.
	followReadAhead = 3 << 20
)

// queryReadAhead is what a query's table scans read ahead: the engine
// reads up to one part at a time per thread, a scan's read-ahead each, and
// its threads are GOMAXPROCS unless configured (planner/duck.Options).
// DuckDB's own memory is bounded by the engine's memory limit, not by the
// budget.
func queryReadAhead() int64 { return scanReadAhead * int64(runtime.GOMAXPROCS(0)) }

// pipeQueue is how many messages may wait between producer and handler;
// the window bounds their bytes.
const pipeQueue = 64

// queued is a message the producer emitted, counted in the window.
type queued struct {
	fd *flight.FlightData
	share
}

// pipe serves one DoGet: once readAhead and the stream's window fit the
// budget, it runs produce in its own goroutine and sends what it emits to
// stream. stop, when not nil, ends the stream with Unavailable when it
// closes (subscriptions, at shutdown).
//
// With inline, produce runs on the handler's goroutine and each message is
// sent as it is emitted: for scans, whose messages are slices of the log
// reader's buffer, valid only until the reader reads on. Queueing them would
// cost a copy of every stored batch; inline, a scan's window holds gRPC's
// write quota plus the message in hand.
func (s *Server) pipe(ctx context.Context, stream flight.FlightService_DoGetServer, readAhead int64, stop <-chan struct{}, inline bool,
	produce func(ctx context.Context, out flight.DataStreamWriter) error) error {
	st := s.track()
	defer st.done()
	size := s.opts.StreamWindow
	charge, err := s.budget.acquire(ctx, readAhead+size, s.opts.StallTimeout, st)
	if err != nil {
		return s.counted(err)
	}
	defer s.budget.release(charge - size) // the window's part goes back with the window
	w := newWindow(ctx, size, s.budget, &s.streams.produced)
	defer w.end()
	if inline {
		return s.counted(produce(ctx, &direct{s: s, ctx: ctx, stream: stream, w: w, st: st}))
	}
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	out := &emitter{ctx: pctx, w: w, st: st, stall: s.opts.StallTimeout, queue: make(chan queued, pipeQueue)}
	produced := make(chan error, 1)
	go func() { produced <- produce(pctx, out) }()
	finished, err := s.send(ctx, stream, w, st, out.queue, produced, stop)
	if !finished {
		cancel()
		<-produced // the producer stops on the cancel; its error no longer matters
	}
	out.discard()
	return s.counted(err)
}

// direct is the producer's end of an inline pipe: Send counts the message
// and sends it at once.
type direct struct {
	s      *Server
	ctx    context.Context
	stream flight.FlightService_DoGetServer
	w      *window
	st     *streamState
}

func (d *direct) Send(fd *flight.FlightData) error {
	sh, err := d.w.reserve(d.ctx, messageBytes(fd), d.s.opts.StallTimeout, d.st)
	if err != nil {
		return err
	}
	return d.s.sendOne(d.ctx, d.stream, d.w, d.st, queued{fd: fd, share: sh})
}

// send sends the queued messages until the producer is done and its queue
// empty, and returns the producer's error with finished true, or its own
// (finished false while the producer may still run).
func (s *Server) send(ctx context.Context, stream flight.FlightService_DoGetServer, w *window, st *streamState,
	queue chan queued, produced <-chan error, stop <-chan struct{}) (finished bool, err error) {
	for {
		select {
		case q := <-queue:
			if err := s.sendOne(ctx, stream, w, st, q); err != nil {
				return false, err
			}
		case perr := <-produced:
			// Nothing more is emitted: send what is queued.
			for {
				select {
				case q := <-queue:
					if err := s.sendOne(ctx, stream, w, st, q); err != nil {
						return true, err
					}
				default:
					return true, perr
				}
			}
		case <-ctx.Done():
			return false, ctx.Err()
		case <-stop:
			return false, status.Error(codes.Unavailable, "server shutting down: resume from the last offsets received")
		}
	}
}

// sendOne waits until gRPC takes a message without blocking and sends q.
func (s *Server) sendOne(ctx context.Context, stream flight.FlightService_DoGetServer, w *window, st *streamState, q queued) error {
	if err := w.waitSendable(ctx, s.opts.StallTimeout, st); err != nil {
		w.unreserve(q.share)
		return err
	}
	t := w.handOver(q.fd, q.share)
	if err := stream.SendMsg(t); err != nil {
		t.release() // gRPC did not queue it, or the stream is gone
		return err
	}
	return nil
}

// counted counts the streams cut off or refused, and returns err.
func (s *Server) counted(err error) error {
	var se stallError
	var be budgetError
	switch {
	case errors.As(err, &se):
		s.streams.stalled.Add(1)
		s.opts.Logger.Warn("stream cut off: client not reading", "after", se.timeout)
	case errors.As(err, &be):
		s.streams.refused.Add(1)
		s.opts.Logger.Warn("stream refused: memory budget spent", "budget", be.limit, "waited", be.waited)
	}
	return err
}

// emitter is the producer's end of a pipe: each message it takes waits
// for room in the window, then queues.
type emitter struct {
	ctx   context.Context
	w     *window
	st    *streamState
	stall time.Duration
	queue chan queued
}

// Send queues fd (flight.DataStreamWriter). The producer must not modify
// fd or its buffers afterwards.
func (e *emitter) Send(fd *flight.FlightData) error {
	sh, err := e.w.reserve(e.ctx, messageBytes(fd), e.stall, e.st)
	if err != nil {
		return err
	}
	select {
	case e.queue <- queued{fd: fd, share: sh}:
		return nil
	case <-e.ctx.Done():
		e.w.unreserve(sh)
		return e.ctx.Err()
	}
}

// discard gives back what is still queued once the producer is done.
func (e *emitter) discard() {
	for {
		select {
		case q := <-e.queue:
			e.w.unreserve(q.share)
		default:
			return
		}
	}
}

// payloadSender is an IPC payload writer that makes each payload a
// FlightData of its own: arrow-go's flight.Writer reuses one message and
// one body buffer for every payload, which a queue cannot hold.
type payloadSender struct{ out flight.DataStreamWriter }

func newRecordWriter(out flight.DataStreamWriter, opts ...ipc.Option) *ipc.Writer {
	return ipc.NewWriterWithPayloadWriter(payloadSender{out}, opts...)
}

func (p payloadSender) Start() error { return nil }
func (p payloadSender) Close() error { return nil }

func (p payloadSender) WritePayload(pl ipc.Payload) error {
	meta := pl.Meta()
	header := bytes.Clone(meta.Bytes())
	meta.Release()
	var size countingWriter
	if err := pl.SerializeBody(&size); err != nil {
		return err
	}
	body := bytes.NewBuffer(make([]byte, 0, size))
	if err := pl.SerializeBody(body); err != nil {
		return err
	}
	return p.out.Send(&flight.FlightData{DataHeader: header, DataBody: body.Bytes()})
}

type countingWriter int

func (c *countingWriter) Write(p []byte) (int, error) {
	*c += countingWriter(len(p))
	return len(p), nil
}

var _ io.Writer = (*countingWriter)(nil)

// streamState is one stream's part in StreamStats.
type streamState struct {
	srv   *Server
	waits atomic.Int32
}

// track counts a stream being served until done.
func (s *Server) track() *streamState {
	s.streams.active.Add(1)
	return &streamState{srv: s}
}

func (st *streamState) done() { st.srv.streams.active.Add(-1) }

// waitBegin and waitEnd bracket a wait on the client or on the budget; a
// stream is counted waiting while any of its waits lasts. Nil-safe.
func (st *streamState) waitBegin() {
	if st != nil && st.waits.Add(1) == 1 {
		st.srv.streams.waiting.Add(1)
	}
}

func (st *streamState) waitEnd() {
	if st != nil && st.waits.Add(-1) == 0 {
		st.srv.streams.waiting.Add(-1)
	}
}

// stallError ends a stream whose client read nothing for the stall timeout.
type stallError struct {
	timeout time.Duration
	waiting int64
}

func (e stallError) Error() string {
	return fmt.Sprintf("stream cut off: the client read nothing for %s (the stall timeout) while %s of results waited to be sent",
		e.timeout, fmtBytes(e.waiting))
}

// budgetError ends a stream that waited the stall timeout to be admitted
// into the node's stream memory budget, or to send a message larger than
// its window.
type budgetError struct {
	limit  int64
	waited time.Duration
}

func (e budgetError) Error() string {
	return fmt.Sprintf("stream memory budget of %s is spent by other streams: waited %s (the stall timeout) for room; retry later",
		fmtBytes(e.limit), e.waited)
}

func fmtBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
