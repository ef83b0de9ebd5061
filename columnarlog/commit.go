package columnarlog

import (
	"sync"

	"github.com/lakestream/lakestream/internal/invariants"
)

// groupCommit lets concurrent appenders share one fsync. The first waiter
// whose data is not yet durable becomes the leader and runs the sync, which
// covers everything written so far; the others wait for it and are released
// together. A waiter whose data was written after the leader captured its
// target waits for the next round, which it may lead itself.
type groupCommit struct {
	mu      sync.Mutex
	cond    sync.Cond
	running bool
	done    int64 // position (offset or sequence) known durable
	// err is sticky: once a round failed, nothing more is acknowledged,
	// until restart.
	err error
}

// wait returns once done >= end, running run as leader when no round is in
// flight. run returns the position it made durable.
func (g *groupCommit) wait(end int64, run func() (int64, error)) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.cond.L == nil {
		g.cond.L = &g.mu
	}
	for g.done < end && g.err == nil {
		if g.running {
			g.cond.Wait()
			continue
		}
		g.running = true
		done, err := g.lead(run)
		g.running = false
		if err != nil {
			g.err = err
		} else if done > g.done {
			g.done = done
		}
		g.cond.Broadcast()
	}
	if g.done >= end {
		return nil
	}
	return g.err
}

// lead runs a round with g.mu released. The lock is taken back by a defer,
// so that a panic in run (a broken invariant) unwinds through wait's
// deferred Unlock as itself, not as an unlock of an unlocked mutex.
func (g *groupCommit) lead(run func() (int64, error)) (int64, error) {
	g.mu.Unlock()
	defer g.mu.Lock()
	return run()
}

// reset sets the durable position after recovery or truncation.
func (g *groupCommit) reset(done int64) {
	g.mu.Lock()
	g.done = done
	g.mu.Unlock()
}

// restart clears a failure after the log was repaired, with done the
// position every write so far has. Nobody may be waiting or leading a round
// (TableLog.repairLocked runs once every writer has returned).
func (g *groupCommit) restart(done int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	// Invariant: a repair runs with no round in flight.
	if invariants.Enabled && g.running {
		invariants.Failf("no commit round during a repair", "restarting at %d with a round running", done)
	}
	g.err = nil
	g.done = max(g.done, done)
}
