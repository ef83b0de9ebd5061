package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// ErrNotLeader is returned to a write or fetch on a node that does not
// lead the bucket, or no longer does: the caller finds the new leader and
// retries (an idempotent writer writes nothing twice).
var ErrNotLeader = errors.New("not the bucket's leader")

// ErrNotEnoughReplicas refuses a write while fewer than min.insync.replicas
// replicas are in sync: acknowledging it could lose it with one failure.
var ErrNotEnoughReplicas = errors.New("not enough in-sync replicas")

// ISRChange proposes a new in-sync set for a bucket the node leads at
// epoch, computed from the stored bucket of version base: it is written to
// the metadata store by compare-and-set on base, and fails when the store
// moved on. It returns the stored version.
type ISRChange func(ctx context.Context, epoch int32, base int64, isr []string) (int64, error)

// leader is the leader's side of one bucket: the followers' ends, the high
// watermark, the acknowledgements waiting for it, and the in-sync set.
//
// Invariants: hw <= the end of every member of isr and of pending, and hw
// never moves back while the node leads at this epoch. A follower counts
// for the high watermark from the moment the leader proposes it (pending),
// before the store has it in the in-sync set: otherwise the watermark could
// pass its end between the store's acceptance and the leader's, and the
// store would then have an in-sync member without acknowledged rows.
type leader struct {
	self     string
	log      Log
	lagMax   time.Duration
	now      func() time.Time
	replicas []string

	mu struct {
		sync.Mutex
		epoch     int32
		minISR    int
		isr       []string             // sorted, self included: the store's, as of version
		version   int64                // the store version of isr
		pending   string               // a follower proposed to join, counted in hw already
		proposing bool                 // one proposal at a time
		hw        int64                // this leadership's high watermark; frozen by depose
		ends      map[string]int64     // each follower's end as of its last fetch
		lastSent  map[string]int64     // the leader's end in its last answer to each
		hwSent    map[string]int64     // the high watermark in its last answer to each
		caughtUp  map[string]time.Time // when each follower last reached lastSent
		deposed   bool
		moved     chan struct{} // closed when hw moves, the set changes or leadership ends
	}
}

func newLeader(self string, log Log, a Assignment, lagMax time.Duration, now func() time.Time) *leader {
	l := &leader{self: self, log: log, lagMax: lagMax, now: now, replicas: slices.Clone(a.Replicas)}
	l.mu.epoch = a.Epoch
	l.mu.minISR = max(a.MinISR, 1)
	l.mu.isr = sortedSet(a.ISR)
	l.mu.version = a.Version
	l.mu.hw = log.HighWatermark()
	l.mu.ends = map[string]int64{}
	l.mu.lastSent = map[string]int64{}
	l.mu.hwSent = map[string]int64{}
	l.mu.caughtUp = map[string]time.Time{}
	start := now()
	for _, id := range a.ISR {
		l.mu.caughtUp[id] = start // in sync when elected: the lag clock starts now
	}
	l.mu.moved = make(chan struct{})
	return l
}

// isReplica says whether id holds a replica of the bucket: only those may
// fetch as followers.
func (l *leader) isReplica(id string) bool { return id != l.self && slices.Contains(l.replicas, id) }

// fetched records that follower holds everything below end (it fetches
// from there) and moves the high watermark. A follower is caught up when
// it reached the leader's end as of the previous answer to it (Kafka's
// rule: under steady writes the end moves during every round trip). It
// returns the in-sync set the leader should propose, with its base
// version, or nil when it stays or a proposal is under way.
func (l *leader) fetched(follower string, end int64) (propose []string, base int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.mu.ends[follower] = end
	if sent, ok := l.mu.lastSent[follower]; ok && end >= sent {
		l.mu.caughtUp[follower] = l.now()
	}
	l.advanceLocked()
	if l.mu.deposed || l.mu.proposing || slices.Contains(l.mu.isr, follower) || end < l.mu.hw {
		return nil, 0
	}
	if l.mu.pending != "" && l.mu.pending != follower {
		return nil, 0 // the store may hold the other one's join: settle it first
	}
	// At or above the high watermark it holds every acknowledged row:
	// it joins, counted from now on.
	l.mu.pending, l.mu.proposing = follower, true
	if _, ok := l.mu.caughtUp[follower]; !ok {
		l.mu.caughtUp[follower] = l.now() // the lag clock of a pending member starts now
	}
	return sortedSet(append(slices.Clone(l.mu.isr), follower)), l.mu.version
}

// sent records the leader's end and high watermark in an answer to
// follower.
func (l *leader) sent(follower string, end, hw int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.mu.lastSent[follower] = end
	l.mu.hwSent[follower] = hw
}

// holdFetch says whether a fetch of follower at the leader's end may wait
// for news, and returns the channel closed when the high watermark next
// moves. It may not when the follower has not been told the current high
// watermark: most often its own fetch has just moved it (its end was the
// last the watermark waited for), and holding the answer until the next
// write would hold back its readers, who see rows only below the
// watermark it knows, by up to the interval between writes.
func (l *leader) holdFetch(follower string) (hold bool, moved <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mu.hw <= l.mu.hwSent[follower], l.mu.moved
}

// advanceLocked moves the high watermark to the least end over the
// in-sync set and the pending member, the leader's own durable end
// included.
func (l *leader) advanceLocked() {
	if l.mu.deposed {
		return
	}
	hw := l.log.Durable()
	for _, id := range l.mu.isr {
		if id == l.self {
			continue
		}
		end, ok := l.mu.ends[id]
		if !ok {
			return // a member that has not fetched yet holds the watermark
		}
		hw = min(hw, end)
	}
	if p := l.mu.pending; p != "" {
		hw = min(hw, l.mu.ends[p])
	}
	if hw > l.mu.hw {
		l.mu.hw = hw
		l.log.SetHighWatermark(hw)
		l.signalLocked()
	}
}

func (l *leader) signalLocked() {
	close(l.mu.moved)
	l.mu.moved = make(chan struct{})
}

// durableMoved is called when the leader's own durable end moves: with no
// other in-sync replica that alone moves the watermark.
func (l *leader) durableMoved() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.advanceLocked()
}

// lagging returns the in-sync set without the followers that have not
// caught up for lagMax, with its base version, or nil when none is
// lagging or a proposal is under way. A pending member that lags is
// dropped too: the set proposed without it settles whether the store took
// its join.
func (l *leader) lagging() ([]string, int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.deposed || l.mu.proposing {
		return nil, 0
	}
	now := l.now()
	var keep []string
	dropped := l.mu.pending != "" && now.Sub(l.mu.caughtUp[l.mu.pending]) > l.lagMax
	for _, id := range l.mu.isr {
		if id != l.self && now.Sub(l.mu.caughtUp[id]) > l.lagMax {
			dropped = true
			continue
		}
		keep = append(keep, id)
	}
	if !dropped {
		return nil, 0
	}
	l.mu.proposing = true
	return keep, l.mu.version
}

// proposed ends a proposal: stored at version (ok), or not known to be.
//
// A failed proposal keeps its pending member counted in the high
// watermark: the store may have taken the join all the same (a commit
// whose answer was lost, or a refusal because the set moved on), and the
// controller may then elect that member, which must hold every
// acknowledged row. The pending member goes only when a set the store
// holds says so (setISR) or a set proposed without it is stored.
func (l *leader) proposed(isr []string, version int64, ok bool) {
	l.mu.Lock()
	l.mu.proposing = false
	epoch := l.mu.epoch
	if !ok {
		l.mu.Unlock()
		return
	}
	l.mu.Unlock()
	l.setISR(epoch, version, isr)
}

// setISR applies an in-sync set the metadata store holds at version (the
// leader's proposal, or the controller's); an older version than the one
// applied is ignored.
func (l *leader) setISR(epoch int32, version int64, isr []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if epoch != l.mu.epoch || version <= l.mu.version {
		return
	}
	// The store's set, newer than any proposal's base, settles the pending
	// member: in it, or not in the store's set at all.
	l.mu.isr, l.mu.version = sortedSet(isr), version
	l.mu.pending = ""
	for _, id := range l.mu.isr {
		if _, ok := l.mu.caughtUp[id]; !ok {
			l.mu.caughtUp[id] = l.now()
		}
	}
	l.advanceLocked()
	l.signalLocked() // waiters re-check the in-sync count
}

// isr is the current in-sync set.
func (l *leader) isr() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.mu.isr)
}

// highWatermark is this leadership's high watermark.
func (l *leader) highWatermark() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mu.hw
}

// checkWrite refuses a write before it is appended when too few replicas
// are in sync, or the node no longer leads.
func (l *leader) checkWrite() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.deposed {
		return ErrNotLeader
	}
	if len(l.mu.isr) < l.mu.minISR {
		return fmt.Errorf("%w: %d in sync (%v), min.insync.replicas is %d", ErrNotEnoughReplicas, len(l.mu.isr), l.mu.isr, l.mu.minISR)
	}
	return nil
}

// waitAcked waits until this leadership's high watermark reaches end, the
// end of a write appended at its epoch: then min.insync.replicas hold it.
// The watermark is the leadership's own, frozen when it ends, not the
// log's, which the node's next role moves.
func (l *leader) waitAcked(ctx context.Context, end int64) error {
	for {
		l.mu.Lock()
		hw, deposed, moved, n, minISR := l.mu.hw, l.mu.deposed, l.mu.moved, len(l.mu.isr), l.mu.minISR
		l.mu.Unlock()
		if hw >= end {
			if n < minISR {
				// Replicated by the set that was in sync, which has
				// since shrunk below the minimum: the write may be
				// visible, but its safety is not what was asked.
				return fmt.Errorf("%w after the write: retry it (an idempotent writer writes nothing twice)", ErrNotEnoughReplicas)
			}
			return nil
		}
		if deposed {
			return fmt.Errorf("%w: leadership moved before the write was replicated", ErrNotLeader)
		}
		select {
		case <-moved:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// depose ends the node's leadership: the high watermark stops, and
// waiting writes fail with ErrNotLeader.
func (l *leader) depose() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.mu.deposed {
		l.mu.deposed = true
		l.signalLocked()
	}
}

// isDeposed says whether the leadership has ended.
func (l *leader) isDeposed() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mu.deposed
}

func sortedSet(ids []string) []string {
	out := slices.Clone(ids)
	slices.Sort(out)
	return slices.Compact(out)
}
