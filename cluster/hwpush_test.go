package cluster

import (
	"context"
	"log/slog"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// A follower learns the high watermark that its own fetch moved in the
// answer to that fetch, not once the next write wakes it: readers on a
// follower see an acknowledged write without another write to carry the
// watermark. The leaders hold a fetch at their end for up to a minute, so
// a follower told only with the next write (there is none) would show
// it; ten writes give either follower the turn of the last to report.
func TestFollowerLearnsTheHighWatermarkItMoved(t *testing.T) {
	c := newTestClusterWait(t, time.Minute, time.Minute, "a", "b", "c")
	c.elect("a", []string{"a", "b", "c"}, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range 10 {
		end, err := c.write(ctx, "a", 5)
		if err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for _, id := range []string{"b", "c"} {
			for c.logs[id].HighWatermark() < end {
				if time.Now().After(deadline) {
					t.Fatalf("write %d: follower %s's high watermark is %d, the leader acknowledged %d 10 s ago", i, id, c.logs[id].HighWatermark(), end)
				}
				time.Sleep(time.Millisecond) // polling the follower's state: no event to wait on
			}
		}
	}
}

// A commit that lands between the fetch handler's read of the durable end
// and its wait wakes the wait: the handler takes the notification before
// it reads the end. The leader's log here commits a batch right after the
// first fetch handler reads its durable end (on that handler's goroutine,
// so no other reader of the end can take the turn); told only by the next
// commit, which never comes, the follower would wait out the minute of
// the fetch wait.
func TestHeldFetchSeesACommitAfterItsRead(t *testing.T) {
	tr := &directTransport{nodes: map[string]*Replicas{}, cut: map[string]bool{}}
	logs := map[string]Log{"a": &commitAfterRead{memLog: newMemLog()}, "b": newMemLog()}
	for _, id := range []string{"a", "b"} {
		r, err := NewReplicas(Config{NodeID: id, ReplicaLagMax: time.Minute, FetchMaxWait: time.Minute, RetryBackoff: 5 * time.Millisecond,
			RetryBackoffMax: 20 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)}, tr, func(BucketRef) ISRChange { return nil })
		if err != nil {
			t.Fatal(err)
		}
		tr.mu.Lock()
		tr.nodes[id] = r
		tr.mu.Unlock()
		if err := r.Add(ref0, logs[id]); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(r.Close)
	}
	a := Assignment{Ref: ref0, Replicas: []string{"a", "b"}, Leader: "a", LeaderAddr: "a", Epoch: 1, ISR: []string{"a", "b"}, MinISR: 1, Version: 1}
	for _, id := range []string{"a", "b"} {
		if err := tr.nodes[id].Apply(a); err != nil {
			t.Fatal(err)
		}
	}
	leader := logs["a"].(*commitAfterRead)
	deadline := time.Now().Add(10 * time.Second)
	for end := leader.committed(); end == 0 || logs["b"].Durable() < end; end = leader.committed() {
		if time.Now().After(deadline) {
			t.Fatalf("the follower holds %d, the leader committed up to %d 10 s ago", logs["b"].Durable(), end)
		}
		time.Sleep(time.Millisecond) // polling the follower's log: no event to wait on
	}
}

// commitAfterRead is a leader's log that appends one batch right after the
// first fetch handler reads its durable end: Start then Durable on one
// goroutine, as the handler calls them.
type commitAfterRead struct {
	*memLog
	mu      sync.Mutex
	reader  uint64 // the goroutine that called Start first, 0 before
	fired   bool
	endDone int64
}

func (l *commitAfterRead) Start() int64 {
	l.mu.Lock()
	if l.reader == 0 {
		l.reader = goroutineID()
	}
	l.mu.Unlock()
	return l.memLog.Start()
}

func (l *commitAfterRead) Durable() int64 {
	end := l.memLog.Durable()
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.fired && l.reader != 0 && l.reader == goroutineID() {
		l.fired = true
		l.endDone = l.memLog.appendLeader(3, "committed between the read and the wait")
	}
	return end
}

// committed is the end of the batch appended after the read, 0 before.
func (l *commitAfterRead) committed() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.endDone
}

// goroutineID is the calling goroutine's id, from its stack header
// ("goroutine N [running]:").
func goroutineID() uint64 {
	var buf [64]byte
	s := strings.TrimPrefix(string(buf[:runtime.Stack(buf[:], false)]), "goroutine ")
	id, err := strconv.ParseUint(s[:strings.IndexByte(s, ' ')], 10, 64)
	if err != nil {
		panic(err)
	}
	return id
}
