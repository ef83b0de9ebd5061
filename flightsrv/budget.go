package flightsrv

import (
	"container/list"
	"context"
	"sync"
	"time"
)

// budget is the node-wide memory budget of the DoGet streams (scans,
// queries, subscriptions): a semaphore of bytes. A stream charges it for
// its readers' read-ahead before it reads anything, and for every message
// from when it is produced until gRPC has written it to the connection
// (pipe.go). Waiters are served in arrival order, so a large charge is not
// starved by a stream of small ones.
type budget struct {
	limit int64

	mu struct {
		sync.Mutex
		used    int64
		peak    int64
		waiters list.List // of *budgetWaiter, oldest first
	}
}

type budgetWaiter struct {
	n     int64
	ready chan struct{} // closed once the charge is granted
}

func newBudget(limit int64) *budget { return &budget{limit: limit} }

// acquire charges n bytes, waiting while the budget is spent, and returns
// the charge, which the caller gives back to release. A charge larger than
// the whole budget is cut to the budget: it waits until nothing else is
// charged, so the budget is exceeded only by one message larger than it.
// It gives up with ctx's error, or with a budgetError once it has waited
// for timeout. A wait counts st (which may be nil) as waiting.
func (b *budget) acquire(ctx context.Context, n int64, timeout time.Duration, st *streamState) (int64, error) {
	n = min(n, b.limit)
	b.mu.Lock()
	if b.mu.waiters.Len() == 0 && b.mu.used+n <= b.limit {
		b.chargeLocked(n)
		b.mu.Unlock()
		return n, nil
	}
	w := &budgetWaiter{n: n, ready: make(chan struct{})}
	elem := b.mu.waiters.PushBack(w)
	b.mu.Unlock()
	st.waitBegin()
	defer st.waitEnd()

	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var err error
	select {
	case <-w.ready:
		return n, nil
	case <-ctx.Done():
		err = ctx.Err()
	case <-timer.C:
		err = budgetError{limit: b.limit, waited: timeout}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	select {
	case <-w.ready:
		// Granted while giving up: hand it back.
		b.mu.used -= n
	default:
		b.mu.waiters.Remove(elem)
	}
	// The waiter at the head may have been blocking smaller ones behind it.
	b.grantLocked()
	return 0, err
}

// release gives back a charge from acquire.
func (b *budget) release(n int64) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.mu.used -= n
	if b.mu.used < 0 {
		panic("flightsrv: stream memory budget released more than it charged")
	}
	b.grantLocked()
}

func (b *budget) chargeLocked(n int64) {
	b.mu.used += n
	b.mu.peak = max(b.mu.peak, b.mu.used)
}

// grantLocked grants the waiting charges that fit, in arrival order.
func (b *budget) grantLocked() {
	for e := b.mu.waiters.Front(); e != nil; e = b.mu.waiters.Front() {
		w := e.Value.(*budgetWaiter)
		if b.mu.used+w.n > b.limit {
			return
		}
		b.chargeLocked(w.n)
		b.mu.waiters.Remove(e)
		close(w.ready)
	}
}

// stats reports the bytes charged now, the most ever charged at once, and
// how many charges are waiting.
func (b *budget) stats() (used, peak int64, waiting int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.mu.used, b.mu.peak, b.mu.waiters.Len()
}
