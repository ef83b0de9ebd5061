package meta

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"
)

// The model-based concurrency test: workers on several store handles race
// random bucket updates and lease operations; history records what each
// saw and checks, at every step and at the end, what a linearizable store
// of compare-and-set registers and leases must give:
//
//   - at most one update wins per (bucket, version), and its result is
//     the next version;
//   - every observation of a (bucket, version) is the same bucket, the
//     winners form a chain 1, 2, … up to the stored version, and along it
//     the epoch never decreases and rises with every leader change;
//   - real-time order: an operation that began after another ended sees a
//     version at least as new;
//   - a lease's holding intervals (from a grant's return to its Expires,
//     or to the start of its release) of different holders never overlap,
//     and the later holder's token is greater.

type history struct {
	t  *testing.T
	mu struct {
		sync.Mutex
		states map[BucketKey]map[int64]Bucket    // what each version was seen as
		wins   map[BucketKey]map[int64]int       // from-version → winning worker
		begun  map[BucketKey]map[int64]time.Time // version → when the write that made it began
		obs    map[BucketKey][]observation
		grants map[string][]*grant
	}
}

// observation is one operation on a bucket and the version it saw.
type observation struct {
	start, end time.Time // real time, whatever the store's clock
	version    int64
}

// grant is a holding interval of a lease.
type grant struct {
	holder   string
	token    int64
	from, to time.Time // the env's clock
}

func newHistory(t *testing.T) *history {
	h := &history{t: t}
	h.mu.states = map[BucketKey]map[int64]Bucket{}
	h.mu.wins = map[BucketKey]map[int64]int{}
	h.mu.begun = map[BucketKey]map[int64]time.Time{}
	h.mu.obs = map[BucketKey][]observation{}
	h.mu.grants = map[string][]*grant{}
	return h
}

// observe records that b was seen, by an operation that ran from start to
// end.
func (h *history) observe(b Bucket, start, end time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.observeLocked(b)
	h.mu.obs[b.Key] = append(h.mu.obs[b.Key], observation{start: start, end: end, version: b.Version})
}

func (h *history) observeLocked(b Bucket) {
	vs := h.mu.states[b.Key]
	if vs == nil {
		vs = map[int64]Bucket{}
		h.mu.states[b.Key] = vs
	}
	if prev, ok := vs[b.Version]; ok && !reflect.DeepEqual(prev, b) {
		h.t.Errorf("%s version %d seen as %+v and as %+v", b.Key, b.Version, prev, b)
	}
	vs[b.Version] = b
}

// won records worker's successful update from cur to got, which began at
// start.
func (h *history) won(worker int, cur, proposed, got Bucket, start time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	wins := h.mu.wins[got.Key]
	if wins == nil {
		wins = map[int64]int{}
		h.mu.wins[got.Key] = wins
		h.mu.begun[got.Key] = map[int64]time.Time{}
	}
	h.mu.begun[got.Key][got.Version] = start
	if w, ok := wins[proposed.Version]; ok {
		h.t.Errorf("%s: two updates from version %d won (workers %d and %d)", got.Key, proposed.Version, w, worker)
	}
	wins[proposed.Version] = worker
	proposed.Version++
	if !reflect.DeepEqual(got, proposed) {
		h.t.Errorf("%s: update returned %+v, want %+v", got.Key, got, proposed)
	}
	checkStep(h.t, cur, got)
}

// checkStep checks the epoch rule between consecutive versions.
func checkStep(t *testing.T, prev, next Bucket) {
	if next.Version != prev.Version+1 {
		t.Errorf("%s: version %d follows %d", next.Key, next.Version, prev.Version)
	}
	if next.Epoch < prev.Epoch || (next.Leader != prev.Leader && next.Epoch == prev.Epoch) {
		t.Errorf("%s: version %d (leader %q epoch %d) breaks the epoch rule after version %d (leader %q epoch %d)",
			next.Key, next.Version, next.Leader, next.Epoch, prev.Version, prev.Leader, prev.Epoch)
	}
}

// grant records that holder holds name from `from` to `to`, checking it
// against every other holding of the lease.
func (h *history) grant(name string, g *grant) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, o := range h.mu.grants[name] {
		if o.holder == g.holder {
			if o.from.Before(g.from) && o.token > g.token {
				h.t.Errorf("lease %s: %s's token fell from %d to %d", name, g.holder, o.token, g.token)
			}
			continue
		}
		// An interval that ended before it began (the call outlasted the
		// ttl) held nothing.
		if !o.from.Before(o.to) || !g.from.Before(g.to) {
			continue
		}
		if g.from.Before(o.to) && o.from.Before(g.to) {
			h.t.Errorf("lease %s held by %s [%s, %s) and by %s [%s, %s) at once",
				name, o.holder, o.from, o.to, g.holder, g.from, g.to)
			continue
		}
		first, second := o, g
		if g.from.Before(o.from) {
			first, second = g, o
		}
		if first.token >= second.token {
			h.t.Errorf("lease %s: %s (token %d) then %s (token %d): tokens must rise across holders",
				name, first.holder, first.token, second.holder, second.token)
		}
	}
	h.mu.grants[name] = append(h.mu.grants[name], g)
}

// release ends holder's holdings of name at `at` (before the release is
// sent: from then on the holder no longer acts).
func (h *history) release(name, holder string, at time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, g := range h.mu.grants[name] {
		if g.holder == holder && at.Before(g.to) {
			g.to = at
		}
	}
}

// check runs the end-of-run checks against the final stored buckets.
func (h *history) check(final []Bucket) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, f := range final {
		h.observeLocked(f)
		wins, states := h.mu.wins[f.Key], h.mu.states[f.Key]
		if int64(len(wins)) != f.Version-1 {
			h.t.Errorf("%s: stored version %d after %d winning updates", f.Key, f.Version, len(wins))
		}
		for v := int64(1); v < f.Version; v++ {
			if _, ok := wins[v]; !ok {
				h.t.Errorf("%s: no update won from version %d, yet version %d is stored", f.Key, v, f.Version)
			}
			prev, ok1 := states[v]
			next, ok2 := states[v+1]
			if ok1 && ok2 {
				checkStep(h.t, prev, next)
			}
		}
		checkRealTime(h.t, f.Key, h.mu.obs[f.Key], h.mu.begun[f.Key])
	}
}

// checkRealTime checks that no operation saw an older version than one
// that ended before it began, nor a version whose write began after the
// operation ended.
func checkRealTime(t *testing.T, k BucketKey, obs []observation, begun map[int64]time.Time) {
	// latest[v]: the latest start of the writes that made versions 2..v;
	// an observation of v must end after all of them began.
	var top int64
	for _, o := range obs {
		top = max(top, o.version)
	}
	latest := make([]time.Time, top+1)
	for v := int64(2); v <= top; v++ {
		latest[v] = latest[v-1]
		if b := begun[v]; b.After(latest[v]) {
			latest[v] = b
		}
	}
	for _, o := range obs {
		if o.end.Before(latest[o.version]) {
			t.Errorf("%s: an operation saw version %d before the write that made it began", k, o.version)
			return
		}
	}

	byEnd := slices.Clone(obs)
	slices.SortFunc(byEnd, func(a, b observation) int { return a.end.Compare(b.end) })
	byStart := slices.Clone(obs)
	slices.SortFunc(byStart, func(a, b observation) int { return a.start.Compare(b.start) })
	var i int
	var maxEnded int64
	for _, o := range byStart {
		for ; i < len(byEnd) && byEnd[i].end.Before(o.start); i++ {
			maxEnded = max(maxEnded, byEnd[i].version)
		}
		if o.version < maxEnded {
			t.Errorf("%s: an operation that began after version %d was seen saw version %d", k, maxEnded, o.version)
			return
		}
	}
}

// modelConfig sizes the run.
const (
	modelHandles = 3 // store handles: nodes, each with its own connections
	modelWorkers = 8
	modelOps     = 150 // per worker
	modelBuckets = 3
)

var modelLeases = []string{"controller", "tiering/1"}

func testConcurrentModel(t *testing.T, e *env) {
	ctx := context.Background()
	stores := make([]Store, modelHandles)
	for i := range stores {
		stores[i] = e.open(t, Options{MaxConns: 3})
	}
	h := newHistory(t)
	var initial []Bucket
	for i := range modelBuckets {
		initial = append(initial, bucket(1, "", int32(i), "n1", 0))
	}
	mustCreate(t, stores[0], initial...)
	ttl := 200 * time.Millisecond // real time: leases expire during the run
	if e.clock != nil {
		ttl = time.Second // the workers move the clock
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	var wg sync.WaitGroup
	for w := range modelWorkers {
		wg.Go(func() {
			m := &modelWorker{id: w, s: stores[w%modelHandles], h: h, e: e, ttl: ttl,
				rng: rand.New(rand.NewPCG(seed, uint64(w))), held: map[string]Lease{}, cur: map[BucketKey]Bucket{}}
			if err := m.run(ctx); err != nil {
				t.Errorf("worker %d: %v", w, err)
			}
		})
	}
	wg.Wait()
	final, err := stores[0].AllBuckets(ctx)
	if err != nil {
		t.Fatal(err)
	}
	h.check(final)
	var wins int64
	for _, f := range final {
		wins += f.Version - 1
	}
	if n, err := stores[1].Changes(ctx); err != nil || n < 1+wins {
		t.Errorf("changes = %d, %v after a create and %d updates", n, err, wins)
	}
	h.mu.Lock()
	holders := 0
	for _, gs := range h.mu.grants {
		for i, g := range gs {
			if i == 0 || gs[i-1].holder != g.holder {
				holders++
			}
		}
	}
	h.mu.Unlock()
	t.Logf("%d updates won; %d lease grants to a new holder (in record order)", wins, holders)
}

// modelWorker is one worker of the model test.
type modelWorker struct {
	id      int
	s       Store
	h       *history
	e       *env
	ttl     time.Duration
	rng     *rand.Rand
	held    map[string]Lease
	cur     map[BucketKey]Bucket // the last version this worker saw
	changes int64
}

func (m *modelWorker) holder() string { return fmt.Sprintf("w%d", m.id) }

func (m *modelWorker) run(ctx context.Context) error {
	for range modelOps {
		var err error
		switch r := m.rng.IntN(10); {
		case r < 5:
			err = m.update(ctx)
		case r < 6:
			_, err = m.read(ctx, BucketKey{TableID: 1, Bucket: int32(m.rng.IntN(modelBuckets))})
		case r < 8:
			err = m.acquire(ctx)
		case r < 9:
			err = m.release(ctx)
		default:
			err = m.pollChanges(ctx)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (m *modelWorker) read(ctx context.Context, k BucketKey) (Bucket, error) {
	start := time.Now()
	b, err := m.s.Bucket(ctx, k)
	if err != nil {
		return Bucket{}, err
	}
	m.h.observe(b, start, time.Now())
	m.cur[k] = b
	return b, nil
}

// update proposes a random change from the last version the worker saw:
// a leader change with a higher epoch, an ISR change, or one the store
// must refuse (a leader change at the same epoch, a stale version).
func (m *modelWorker) update(ctx context.Context) error {
	k := BucketKey{TableID: 1, Bucket: int32(m.rng.IntN(modelBuckets))}
	cur, ok := m.cur[k]
	if !ok || m.rng.IntN(3) == 0 {
		var err error
		if cur, err = m.read(ctx, k); err != nil {
			return err
		}
	}
	p, mustFail := m.propose(cur)
	start := time.Now()
	got, err := m.s.UpdateBucket(ctx, p)
	end := time.Now()
	var ce *ConflictError
	switch {
	case err == nil:
		if mustFail {
			m.h.t.Errorf("worker %d: %s: update %+v over %+v won; the store must refuse it", m.id, k, p, cur)
		}
		m.h.observe(got, start, end)
		m.h.won(m.id, cur, p, got, start)
		m.cur[k] = got
	case errors.As(err, &ce):
		m.h.observe(ce.Current, start, end)
		c := ce.Current
		if c.Version == p.Version && (p.Epoch > c.Epoch || (p.Epoch == c.Epoch && p.Leader == c.Leader)) {
			m.h.t.Errorf("worker %d: %s: update %+v refused over %+v, which it may follow", m.id, k, p, ce.Current)
		}
		m.cur[k] = ce.Current
	default:
		return fmt.Errorf("update %s: %w", k, err)
	}
	return nil
}

// propose returns a change of cur and whether the store must refuse it.
func (m *modelWorker) propose(cur Bucket) (Bucket, bool) {
	p := cur
	leader := cur.Leader
	switch r := m.rng.IntN(10); {
	case r < 4: // leader change, raising the epoch
		for leader == cur.Leader {
			leader = []string{"", "n1", "n2", "n3"}[m.rng.IntN(4)]
		}
		p.Epoch = cur.Epoch + 1 + int32(m.rng.IntN(2))
	case r < 5: // leader change at the same epoch: refused
		for leader == cur.Leader {
			leader = []string{"", "n1", "n2", "n3"}[m.rng.IntN(4)]
		}
		p.Leader, p.ISR = leader, m.isr(leader)
		return p, true
	case r < 6 && cur.Version > 1: // a stale version: refused
		p.Version--
		p.ISR = m.isr(leader)
		return p, true
	}
	p.Leader, p.ISR = leader, m.isr(leader)
	return p, false
}

// isr is a random in-sync set holding leader.
func (m *modelWorker) isr(leader string) []string {
	var isr []string
	for _, n := range []string{"n1", "n2", "n3"} {
		if n == leader || m.rng.IntN(2) == 0 {
			isr = append(isr, n)
		}
	}
	return isr
}

func (m *modelWorker) acquire(ctx context.Context) error {
	name := modelLeases[m.rng.IntN(len(modelLeases))]
	if m.e.clock != nil {
		m.e.clock.Advance(time.Duration(m.rng.Int64N(int64(m.ttl / 3))))
	}
	l, err := m.s.AcquireLease(ctx, name, m.holder(), m.ttl)
	if errors.Is(err, ErrLeaseHeld) {
		return nil
	}
	if err != nil {
		return err
	}
	m.h.grant(name, &grant{holder: l.Holder, token: l.Token, from: m.e.now(), to: l.Expires})
	m.held[name] = l
	return nil
}

func (m *modelWorker) release(ctx context.Context) error {
	names := make([]string, 0, len(m.held))
	for n := range m.held {
		names = append(names, n)
	}
	if len(names) == 0 {
		return nil
	}
	slices.Sort(names)
	name := names[m.rng.IntN(len(names))]
	l := m.held[name]
	delete(m.held, name)
	m.h.release(name, l.Holder, m.e.now())
	if err := m.s.ReleaseLease(ctx, l); err != nil && !errors.Is(err, ErrNotFound) {
		return err
	}
	return nil
}

func (m *modelWorker) pollChanges(ctx context.Context) error {
	n, err := m.s.Changes(ctx)
	if err != nil {
		return err
	}
	if n < m.changes {
		m.h.t.Errorf("worker %d: changes fell from %d to %d", m.id, m.changes, n)
	}
	m.changes = n
	return nil
}
