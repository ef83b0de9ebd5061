package duck

import (
	"errors"
	"fmt"
	"time"

	bindings "github.com/duckdb/duckdb-go-bindings"
)

// The per-statement memory limit (Options.QueryMemoryLimit).
//
// DuckDB 1.5 bounds memory per database only (memory_limit): one statement
// can take all of it, and then every other statement's allocations fail
// too. Its buffer manager reports what it holds per tag (duckdb_memory()),
// never per statement or connection, and a statement's profile is ready
// only once it has finished. (DuckDB 2.0 adds a per-connection
// operator_memory_limit; this engine embeds 1.5.) So the engine estimates
// each statement's share and stops the one over the limit before the
// database as a whole runs out:
//
//   - A watchdog samples the memory DuckDB holds every MemoryCheckEvery.
//   - Growth since the last sample is shared among the statements running,
//     each weighted by the part of the interval it ran: a statement that
//     started just now is charged little, one that ran throughout fully.
//   - A decrease lowers every charge in proportion to it, including the
//     charges of statements that ended in the last second: DuckDB may
//     free a statement's memory a little after it ends, and that decrease
//     is theirs. Their growth is nobody's: an ended statement's memory
//     that is never freed (DuckDB's caches) is not charged to the others.
//   - The statement with the largest charge, if over the limit, is stopped
//     (interrupted, its stream fails with *QueryMemoryError); at most one
//     a sample.
//
// The estimate is exact for a statement running alone and for one heavy
// statement next to short ones, the case the limit is for (a memory bomb
// next to other clients' point queries and scans). Two long statements
// that run side by side from the same moment share their growth equally,
// so the limit may stop the lighter one; MemoryLimit stays the hard bound
// either way. docs/security.md ("Resource limits") says so for operators.

// QueryMemoryError is the error of a statement stopped for holding more
// than Options.QueryMemoryLimit.
type QueryMemoryError struct {
	Limit int64 // Options.QueryMemoryLimit
	Held  int64 // the statement's estimated share when it was stopped
}

func (e *QueryMemoryError) Error() string {
	return fmt.Sprintf("query memory limit of %d MiB exceeded: the query held about %d MiB of engine memory", e.Limit>>20, e.Held>>20)
}

// memAccount is the watchdog's estimate of each statement's share of the
// engine's memory. Its tick is a pure function of the samples it is
// given, so it is table-tested without DuckDB.
type memAccount[K comparable] struct {
	interval time.Duration
	limit    int64
	last     int64 // the memory at the last sample; -1 before the first
	charges  map[K]float64
	// ghosts are statements that ended, with the samples left before
	// their charge is forgotten: until then a decrease of memory is
	// shared with them, so that memory DuckDB frees a little after a
	// statement ends is not taken for the others' growth.
	ghosts map[K]int
}

// ghostSamples is how many samples an ended statement's charge waits for
// its memory to be freed; what is not freed by then (kept by DuckDB's
// caches) is nobody's.
const ghostSamples = 10

func newMemAccount[K comparable](interval time.Duration, limit int64) *memAccount[K] {
	return &memAccount[K]{interval: interval, limit: limit, last: -1, charges: map[K]float64{}, ghosts: map[K]int{}}
}

// tick takes a sample: used is the engine's memory at now, live the
// statements running then with their start times. It returns the
// statement to stop, if one is over the limit, and its charge.
func (a *memAccount[K]) tick(now time.Time, used int64, live map[K]time.Time) (victim K, charge int64, stop bool) {
	a.age(live)
	if a.last < 0 {
		a.last = used
	}
	switch delta := used - a.last; {
	case delta > 0:
		a.share(now, float64(delta), live)
	case delta < 0:
		a.release(float64(-delta))
	}
	a.last = used
	worst := -1.0
	for k := range live {
		if c := a.charges[k]; c > worst { // 0 for one first seen now
			victim, worst = k, c
		}
	}
	if worst <= float64(a.limit) {
		var zero K
		return zero, 0, false
	}
	return victim, int64(worst), true
}

// age turns the statements that ended into ghosts, and forgets the
// ghosts whose memory was freed or whose time is up.
func (a *memAccount[K]) age(live map[K]time.Time) {
	for k := range a.charges {
		if _, ok := live[k]; ok {
			continue
		}
		n, ok := a.ghosts[k]
		if !ok {
			n = ghostSamples
		}
		if n--; n <= 0 || a.charges[k] < 1<<20 {
			delete(a.ghosts, k)
			delete(a.charges, k)
			continue
		}
		a.ghosts[k] = n
	}
}

// idle forgets the charges and the last sample: no statement runs, and
// the next sample is the baseline of the statements after.
func (a *memAccount[K]) idle() {
	a.last = -1
	clear(a.charges)
	clear(a.ghosts)
}

// share charges growth to the live statements, weighted by the part of
// the interval each ran.
func (a *memAccount[K]) share(now time.Time, growth float64, live map[K]time.Time) {
	weights := make(map[K]float64, len(live))
	var total float64
	for k, started := range live {
		w := min(1, max(0.01, float64(now.Sub(started))/float64(a.interval)))
		weights[k] = w
		total += w
	}
	for k, w := range weights {
		a.charges[k] += growth * w / total
	}
}

// release lowers every charge, the ghosts' too, in proportion to it.
func (a *memAccount[K]) release(freed float64) {
	var total float64
	for _, c := range a.charges {
		total += c
	}
	if total <= 0 {
		return
	}
	f := max(0, 1-freed/total)
	for k, c := range a.charges {
		a.charges[k] = c * f
	}
}

// watchMemory is the memory watchdog: one goroutine, started by New when
// QueryMemoryLimit is set, stopped by Close (done). It samples only while
// statements run, on a connection and a prepared statement of its own: a
// sample costs about 0.25 ms there, against 0.75 ms on a new connection
// each time (docs/benchmarks.md, "Resource limits").
func (e *Engine) watchMemory(done <-chan struct{}) {
	sample, stop, err := e.memorySampler()
	if err != nil {
		e.log.Error("memory watchdog not started: the query memory limit is not enforced", "err", err)
		return
	}
	defer stop()
	t := time.NewTicker(e.opts.MemoryCheckEvery)
	defer t.Stop()
	acct := newMemAccount[*queryState](e.opts.MemoryCheckEvery, e.opts.QueryMemoryLimit)
	for {
		select {
		case <-done:
			return
		case <-t.C:
		}
		live := e.running()
		if len(live) == 0 {
			acct.idle()
			continue
		}
		used, err := sample()
		if err != nil {
			e.log.Warn("memory watchdog: sample failed", "err", err)
			continue
		}
		q, held, over := acct.tick(time.Now(), used, live)
		if over && q.stop != nil && q.ctx.Err() == nil {
			e.log.Warn("query stopped at the query memory limit", "limit", e.opts.QueryMemoryLimit, "held", held)
			q.stop(&QueryMemoryError{Limit: e.opts.QueryMemoryLimit, Held: held})
		}
	}
}

// memorySampler returns a function that reads the memory DuckDB holds
// (as MemoryUsed) on a connection of its own, and stop, which frees it.
func (e *Engine) memorySampler() (sample func() (int64, error), stop func(), err error) {
	var c bindings.Connection
	if bindings.Connect(e.db, &c) == bindings.StateError {
		return nil, nil, errors.New("duck: connect")
	}
	var st bindings.PreparedStatement
	if bindings.Prepare(c, memoryQuery, &st) == bindings.StateError {
		msg := bindings.PrepareError(st)
		bindings.DestroyPrepare(&st)
		bindings.Disconnect(&c)
		return nil, nil, fmt.Errorf("duck: memory in use: %s", msg)
	}
	sample = func() (int64, error) {
		var res bindings.Result
		defer bindings.DestroyResult(&res)
		if bindings.ExecutePrepared(st, &res) == bindings.StateError {
			return 0, fmt.Errorf("duck: memory in use: %s", bindings.ResultError(&res))
		}
		return bindings.ValueInt64(&res, 0, 0), nil
	}
	stop = func() {
		bindings.DestroyPrepare(&st)
		bindings.Disconnect(&c)
	}
	return sample, stop, nil
}

// running is the statements running now, with their start times.
func (e *Engine) running() map[*queryState]time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	live := make(map[*queryState]time.Time, len(e.mu.queries))
	for _, qs := range e.mu.queries {
		live[qs] = qs.started
	}
	return live
}
