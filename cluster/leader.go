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
// epoch; it is written to the metadata store by compare-and-set and fails
// when the leader's view is stale. The leader applies it once it returns
// nil.
type ISRChange func(ctx context.Context, epoch int32, isr []string) error

// leader is the leader's side of one bucket: the followers' ends, the high
// watermark, the acknowledgements waiting for it, and the in-sync set.
//
// Invariant: hw <= every in-sync replica's end, and hw never moves back
// while the node leads at this epoch.
type leader struct {
	self   string
	log    Log
	lagMax time.Duration
	now    func() time.Time

	mu struct {
		sync.Mutex
		epoch    int32
		minISR   int
		isr      []string             // sorted, self included
		ends     map[string]int64     // each follower's end as of its last fetch
		caughtUp map[string]time.Time // when each follower last reached the leader's end
		deposed  bool
		moved    chan struct{} // closed when hw moves or leadership ends
	}
}

func newLeader(self string, log Log, epoch int32, isr []string, minISR int, lagMax time.Duration, now func() time.Time) *leader {
	l := &leader{self: self, log: log, lagMax: lagMax, now: now}
	l.mu.epoch = epoch
	l.mu.minISR = minISR
	l.mu.isr = sortedSet(isr)
	l.mu.ends = map[string]int64{}
	l.mu.caughtUp = map[string]time.Time{}
	start := now()
	for _, id := range isr {
		l.mu.caughtUp[id] = start // in sync when elected: the lag clock starts now
	}
	l.mu.moved = make(chan struct{})
	return l
}

// fetched records that follower holds everything below end (it fetches
// from there) and moves the high watermark. It returns the in-sync set the
// leader should propose, or nil when it stays.
func (l *leader) fetched(follower string, end int64) (propose []string) {
	durable := l.log.Durable()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.mu.ends[follower] = end
	if end >= durable {
		l.mu.caughtUp[follower] = l.now()
	}
	l.advanceLocked(durable)
	if !slices.Contains(l.mu.isr, follower) && end >= l.log.HighWatermark() && end >= durable {
		// Caught up with the leader's end: back in sync (Kafka lets a
		// follower in once it reaches the high watermark; waiting for the
		// end keeps a follower that only ever trails out of the set).
		return sortedSet(append(slices.Clone(l.mu.isr), follower))
	}
	return nil
}

// advanceLocked moves the high watermark to the least end over the
// in-sync set, the leader's own durable end included.
func (l *leader) advanceLocked(durable int64) {
	if l.mu.deposed {
		return
	}
	hw := durable
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
	if hw > l.log.HighWatermark() {
		l.log.SetHighWatermark(hw)
		close(l.mu.moved)
		l.mu.moved = make(chan struct{})
	}
}

// durableMoved is called when the leader's own durable end moves: with no
// other in-sync replica that alone moves the watermark.
func (l *leader) durableMoved() {
	durable := l.log.Durable()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.advanceLocked(durable)
}

// lagging returns the in-sync set without the followers that have not
// caught up for lagMax, or nil when none is lagging.
func (l *leader) lagging() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	var keep []string
	dropped := false
	for _, id := range l.mu.isr {
		if id != l.self && now.Sub(l.mu.caughtUp[id]) > l.lagMax {
			dropped = true
			continue
		}
		keep = append(keep, id)
	}
	if !dropped {
		return nil
	}
	return keep
}

// setISR applies an in-sync set the metadata store accepted (the leader's
// proposal, or the controller's), at the leader's epoch.
func (l *leader) setISR(epoch int32, isr []string) {
	durable := l.log.Durable()
	l.mu.Lock()
	defer l.mu.Unlock()
	if epoch != l.mu.epoch {
		return
	}
	l.mu.isr = sortedSet(isr)
	for _, id := range l.mu.isr {
		if _, ok := l.mu.caughtUp[id]; !ok {
			l.mu.caughtUp[id] = l.now()
		}
	}
	l.advanceLocked(durable)
	close(l.mu.moved) // waiters re-check the in-sync count
	l.mu.moved = make(chan struct{})
}

// isr is the current in-sync set.
func (l *leader) isr() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.mu.isr)
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

// waitAcked waits until the high watermark reaches end, the end of a write
// appended at this epoch: then min.insync.replicas hold it.
func (l *leader) waitAcked(ctx context.Context, end int64) error {
	for {
		l.mu.Lock()
		deposed, moved, n, minISR := l.mu.deposed, l.mu.moved, len(l.mu.isr), l.mu.minISR
		l.mu.Unlock()
		if l.log.HighWatermark() >= end {
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

// depose ends the node's leadership: waiting writes fail with ErrNotLeader.
func (l *leader) depose() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.mu.deposed {
		l.mu.deposed = true
		close(l.mu.moved)
		l.mu.moved = make(chan struct{})
	}
}

func sortedSet(ids []string) []string {
	out := slices.Clone(ids)
	slices.Sort(out)
	return slices.Compact(out)
}
