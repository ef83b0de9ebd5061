package cluster

import (
	"context"
	"errors"
	"testing"
	"time"
)

func testLeader(log *memLog, isr ...string) *leader {
	return newLeader("a", log, Assignment{Ref: ref0, Replicas: []string{"a", "b", "c"}, Leader: "a", Epoch: 1, ISR: isr, MinISR: 1, Version: 1},
		time.Minute, time.Now)
}

// A deposed leader's waiting write is never acknowledged, even when the
// log's high watermark moves on under the node's next role (a follower
// fetching a new leader's batches at the same offsets).
func TestDeposedLeaderNeverAcknowledges(t *testing.T) {
	log := newMemLog()
	log.BecomeLeader(1)
	l := testLeader(log, "a", "b")
	end := log.appendLeader(10, "w")
	l.depose()
	log.mu.Lock()
	log.end = 30 // the next role's appends
	log.mu.Unlock()
	log.SetHighWatermark(30)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := l.waitAcked(ctx, end); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("a deposed leader's write: %v, want ErrNotLeader", err)
	}
}

// A follower proposed to join the in-sync set holds the high watermark from
// the proposal on, before the store accepts it.
func TestPendingJoinerHoldsTheHighWatermark(t *testing.T) {
	log := newMemLog()
	log.BecomeLeader(1)
	l := testLeader(log, "a")
	log.appendLeader(10, "w")
	l.durableMoved()
	if hw := l.highWatermark(); hw != 10 {
		t.Fatalf("alone in sync: hw %d, want 10", hw)
	}
	isr, base := l.fetched("b", 10) // b caught up: proposed
	if isr == nil || base != 1 {
		t.Fatalf("no proposal for a caught-up follower: %v %d", isr, base)
	}
	log.appendLeader(5, "w") // written while the proposal is in the store
	l.durableMoved()
	if hw := l.highWatermark(); hw != 10 {
		t.Fatalf("hw %d moved past the pending member's end 10", hw)
	}
	l.proposed(isr, 2, true)
	if got := l.isr(); len(got) != 2 {
		t.Fatalf("in-sync set %v after the store accepted", got)
	}
	// An older version of the set (a slow watcher) changes nothing.
	l.setISR(1, 1, []string{"a"})
	if got := l.isr(); len(got) != 2 {
		t.Fatalf("an older version replaced the set: %v", got)
	}
}
