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

// A join whose proposal failed may be in the store all the same (its
// commit's answer lost): the member goes on holding the high watermark
// until a set the store holds settles it, since the controller may elect
// it. Found by the process fault rounds: a leader cut off from the store
// while proposing a joiner acknowledged rows the joiner lacked, and the
// store, which had taken the join, elected it.
func TestFailedJoinKeepsHoldingTheHighWatermark(t *testing.T) {
	log := newMemLog()
	log.BecomeLeader(1)
	l := testLeader(log, "a", "b")
	log.appendLeader(10, "w")
	l.fetched("b", 10)
	isr, _ := l.fetched("c", 10) // c caught up: proposed
	if isr == nil {
		t.Fatal("no proposal for a caught-up follower")
	}
	l.proposed(isr, 0, false) // the commit's answer was lost
	log.appendLeader(5, "w")
	l.durableMoved()
	l.fetched("b", 15)
	if hw := l.highWatermark(); hw != 10 {
		t.Fatalf("hw %d moved past the end 10 of a member the store may hold", hw)
	}
	if again, _ := l.fetched("b", 15); again != nil {
		t.Fatalf("another join proposed (%v) while c's is unsettled", again)
	}
	if again, _ := l.fetched("c", 10); again == nil {
		t.Fatal("c's join is not proposed again")
	}
	// The store's newer set, without c (the commit had not landed): c no
	// longer holds the watermark.
	l.proposed(nil, 0, false)
	l.setISR(1, 2, []string{"a", "b"})
	if hw := l.highWatermark(); hw != 15 {
		t.Fatalf("hw %d after the store's set settled c's join, want 15", hw)
	}
}

// A pending member that stops fetching is dropped by the lag check: the set
// proposed without it, once stored, settles its join.
func TestLaggingPendingMemberIsSettled(t *testing.T) {
	now := time.Now()
	log := newMemLog()
	log.BecomeLeader(1)
	l := newLeader("a", log, Assignment{Ref: ref0, Replicas: []string{"a", "b", "c"}, Leader: "a", Epoch: 1, ISR: []string{"a"}, MinISR: 1, Version: 1},
		time.Second, func() time.Time { return now })
	log.appendLeader(10, "w")
	isr, _ := l.fetched("b", 10)
	l.proposed(isr, 0, false)
	if got, _ := l.lagging(); got != nil {
		t.Fatalf("a pending member in time proposed away: %v", got)
	}
	now = now.Add(2 * time.Second)
	keep, base := l.lagging()
	if keep == nil || len(keep) != 1 || base != 1 {
		t.Fatalf("lagging pending member: proposal %v at %d, want [a] at 1", keep, base)
	}
	l.proposed(keep, 2, true)
	log.appendLeader(5, "w")
	l.durableMoved()
	if hw := l.highWatermark(); hw != 15 {
		t.Fatalf("hw %d once the set without b is stored, want 15", hw)
	}
}
