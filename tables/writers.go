package tables

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/lakestream/lakestream/columnarlog"
)

// Writer names one call of an idempotent writer (docs/flight.md,
// "Idempotent writes"): ID is the client's, non-zero; Seq counts the
// writer's calls from 0. A call is one atomic write: it is stored once,
// however often it is sent.
type Writer struct {
	ID  int64
	Seq int32
	// sparse: the writer is a call's writer of one bucket in a cluster
	// (subWriter, forward.go), which sees only the calls that have rows in
	// its bucket: its sequence may skip ahead.
	sparse bool
}

// Errors of idempotent writes, which callers test with errors.Is.
var (
	// ErrWriterSequence refuses a call whose sequence number is neither
	// the writer's next nor its last (a retry); the message says which
	// were expected. Nothing of the call is stored.
	ErrWriterSequence = errors.New("out of order writer sequence")
	// ErrIdempotentTooLarge refuses an idempotent call that does not fit
	// one atomic write (Limits.MaxWriteBytes): only a call stored whole or
	// not at all can be retried safely. Nothing of the call is stored.
	ErrIdempotentTooLarge = errors.New("an idempotent call must fit one atomic write")
)

// writers is what a table knows of its idempotent writers: the last call
// of each that the table acknowledged.
//
// The state is the table's, not a bucket's: one call's rows spread over
// the buckets differently each time it is sent (round-robin without a
// bucket key), so a retry is told by the whole call's (writer, seq). The
// log stores the writer and the sequence in every batch of the call and
// gives them back when it opens (columnarlog.TableLog.Writers), so the
// state survives a restart; a call that stored nothing (no rows, or upserts
// that changed no row) is known in memory only.
//
// One call of a writer runs at a time (turn): a retry sent while the call it
// repeats is still running waits for that call's outcome, so it is never
// acknowledged before the rows are durable, and never stores them twice.
type writers struct {
	expiry     time.Duration
	now        func() time.Time
	replicated bool

	mu struct {
		sync.Mutex
		m     map[int64]*writerEntry
		calls int // since the last sweep
	}
}

// sweepEvery is how many calls pass between two sweeps of expired writers.
const sweepEvery = 1024

// writerEntry is one writer. Its fields below turn are read and changed by
// the call that holds turn only.
type writerEntry struct {
	turn  chan struct{} // holds a token while no call of the writer runs
	users int           // calls holding or waiting for turn; guarded by writers.mu

	known bool  // seq is the last call acknowledged
	seq   int32 // valid when known
	// recovered says that seq was read from the log at open: calls that
	// stored nothing since are not in it, so the next call may skip ahead.
	recovered bool
	last      int64 // Unix microseconds of the last call acknowledged
	stale     bool  // read the writer from the log before its next call: new, or its last call failed
}

func newWriters(fromLog map[int64]columnarlog.WriterState, expiry time.Duration, now func() time.Time) *writers {
	w := &writers{expiry: expiry, now: now}
	w.mu.m = make(map[int64]*writerEntry, len(fromLog))
	for id, st := range fromLog {
		e := newWriterEntry()
		e.known, e.seq, e.recovered, e.last = true, st.Seq, true, st.Timestamp
		w.mu.m[id] = e
	}
	return w
}

// sync reads the writer's state from the log, holding the writer's turn:
// on every call of a replicated table, whose log gains the writes of other
// leaders while this node follows (a node that acknowledged call 401 as
// leader, then followed while calls 402–404 went elsewhere, must not take
// 405 for out of order, as the fault rounds saw); on a single node when
// the entry is new or its last call failed (a failed write may be in the
// log). Otherwise the log holds nothing the entry does not know.
//
// A log that refuses writes after a failed write or fsync is repaired
// first: until then it still holds the failed writes' batches, which the
// repair cuts, and a retry that read the writer before the cut would be
// taken for a duplicate of a call that is not stored, and acknowledged
// without its rows (the cluster fault rounds' failing disk found it). A
// log that cannot be repaired yet fails the call.
func (w *writers) sync(e *writerEntry, id int64, log *columnarlog.TableLog) error {
	if !e.stale && !w.replicated {
		return nil
	}
	if err := log.Repair(); err != nil {
		return err
	}
	// The log is the truth for every call that stored rows; a call that
	// stored nothing is known in memory only, and the recovered state lets
	// the next call skip past it, as after a restart.
	if st, ok := log.Writer(id); ok {
		e.known, e.seq, e.recovered, e.last = true, st.Seq, true, st.Timestamp
	}
	e.stale = false
	return nil
}

func newWriterEntry() *writerEntry {
	e := &writerEntry{turn: make(chan struct{}, 1), stale: true}
	e.turn <- struct{}{}
	return e
}

// begin waits for the writer's turn and returns its entry, which the
// caller gives back with end.
func (w *writers) begin(ctx context.Context, id int64) (*writerEntry, error) {
	w.mu.Lock()
	if w.mu.calls++; w.mu.calls >= sweepEvery {
		w.sweepLocked()
	}
	e := w.mu.m[id]
	if e == nil {
		e = newWriterEntry()
		w.mu.m[id] = e
	}
	e.users++
	w.mu.Unlock()
	select {
	case <-e.turn:
		return e, nil
	case <-ctx.Done():
		w.mu.Lock()
		e.users--
		w.mu.Unlock()
		return nil, ctx.Err()
	}
}

// end gives the writer's turn back.
func (w *writers) end(e *writerEntry) {
	e.turn <- struct{}{}
	w.mu.Lock()
	e.users--
	w.mu.Unlock()
}

// sweepLocked forgets the writers idle for longer than the expiry that no
// call is using, so that the state does not grow without bound.
func (w *writers) sweepLocked() {
	w.mu.calls = 0
	cut := w.now().Add(-w.expiry).UnixMicro()
	for id, e := range w.mu.m {
		if e.users == 0 && e.last < cut {
			delete(w.mu.m, id)
		}
	}
}

// check decides a call of the writer, holding its turn: dup when it
// repeats the last call acknowledged (nothing is to be stored), an
// ErrWriterSequence when it is neither that nor the next.
func (w *writers) check(e *writerEntry, wr Writer) (dup bool, err error) {
	if !e.known || e.last < w.now().Add(-w.expiry).UnixMicro() {
		return false, nil // a new writer, or one idle past the expiry
	}
	switch next := int64(e.seq) + 1; {
	case wr.Seq == e.seq:
		return true, nil
	case int64(wr.Seq) == next, (e.recovered || wr.sparse) && wr.Seq > e.seq:
		return false, nil
	case next > math.MaxInt32:
		return false, fmt.Errorf("writer %d: sequence %d: %w: the writer's sequence numbers are used up (the last was %d); continue with a new writer id", wr.ID, wr.Seq, ErrWriterSequence, e.seq)
	}
	return false, fmt.Errorf("writer %d: sequence %d: %w: expected %d (the next call) or %d (a retry of the last one acknowledged)", wr.ID, wr.Seq, ErrWriterSequence, int64(e.seq)+1, e.seq)
}

// acknowledged records the call seq of the writer as its last, holding its
// turn.
func (w *writers) acknowledged(e *writerEntry, seq int32) {
	e.known, e.seq, e.recovered, e.last = true, seq, false, w.now().UnixMicro()
}
