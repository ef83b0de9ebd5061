package meta

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Mem is a Store in memory, for tests of the code above it: the same rules
// as the SQL stores (it passes their conformance suite), no durability.
// Its clock (Options.Now) decides lease expiry. Handle gives further
// handles on the same state, as the nodes of a cluster share one database.
type Mem struct {
	st     *memState
	closed atomic.Bool
}

// memState is the state that a Mem's handles share.
type memState struct {
	now func() time.Time
	mu  struct {
		sync.Mutex
		buckets map[BucketKey]Bucket
		leases  map[string]memLease
		secrets map[string][]byte
		changes int64
	}
}

type memLease struct {
	holder  string
	token   int64
	expires int64 // Unix µs on the store's clock
}

// NewMem returns an empty store (opts.Now is its clock; the other options
// do not apply).
func NewMem(opts Options) *Mem {
	opts.EnsureDefaults()
	st := &memState{now: opts.Now}
	st.mu.buckets = map[BucketKey]Bucket{}
	st.mu.leases = map[string]memLease{}
	return &Mem{st: st}
}

// Handle returns another handle on m's state; closing one leaves the others
// open.
func (m *Mem) Handle() *Mem { return &Mem{st: m.st} }

// lock takes the state's lock unless the handle is closed; the caller
// unlocks.
func (m *Mem) lock() error {
	if m.closed.Load() {
		return ErrClosed
	}
	m.st.mu.Lock()
	return nil
}

func (m *Mem) Close() error {
	if m.closed.Swap(true) {
		return ErrClosed
	}
	return nil
}

// cloneBucket copies b's slices: callers never share the stored ones.
func cloneBucket(b Bucket) Bucket {
	b.Replicas, b.ISR = slices.Clip(slices.Clone(b.Replicas)), slices.Clip(slices.Clone(b.ISR))
	if len(b.Replicas) == 0 {
		b.Replicas = nil
	}
	if len(b.ISR) == 0 {
		b.ISR = nil
	}
	return b
}

func (m *Mem) CreateBuckets(_ context.Context, bs []Bucket) error {
	seen := make(map[BucketKey]bool, len(bs))
	for _, b := range bs {
		if err := validateBucket(b); err != nil {
			return fmt.Errorf("create buckets: %w", err)
		}
		if seen[b.Key] {
			return fmt.Errorf("create buckets: %s: %w: given twice", b.Key, ErrInvalid)
		}
		seen[b.Key] = true
	}
	if err := m.lock(); err != nil {
		return err
	}
	defer m.st.mu.Unlock()
	if len(bs) == 0 {
		return nil
	}
	for _, b := range bs {
		if _, ok := m.st.mu.buckets[b.Key]; ok {
			return fmt.Errorf("create %s: %w", b.Key, ErrExists)
		}
	}
	for _, b := range bs {
		b = cloneBucket(b)
		b.Version = 1
		m.st.mu.buckets[b.Key] = b
	}
	m.st.mu.changes++
	return nil
}

func (m *Mem) Bucket(_ context.Context, k BucketKey) (Bucket, error) {
	if err := m.lock(); err != nil {
		return Bucket{}, err
	}
	defer m.st.mu.Unlock()
	b, ok := m.st.mu.buckets[k]
	if !ok {
		return Bucket{}, fmt.Errorf("%s: %w", k, ErrNotFound)
	}
	return cloneBucket(b), nil
}

func (m *Mem) Buckets(_ context.Context, tableID int64) ([]Bucket, error) {
	return m.list(func(k BucketKey) bool { return k.TableID == tableID })
}

func (m *Mem) AllBuckets(context.Context) ([]Bucket, error) {
	return m.list(func(BucketKey) bool { return true })
}

func (m *Mem) list(keep func(BucketKey) bool) ([]Bucket, error) {
	if err := m.lock(); err != nil {
		return nil, err
	}
	defer m.st.mu.Unlock()
	var bs []Bucket
	for k, b := range m.st.mu.buckets {
		if keep(k) {
			bs = append(bs, cloneBucket(b))
		}
	}
	sortBuckets(bs)
	return bs, nil
}

func (m *Mem) UpdateBucket(_ context.Context, b Bucket) (Bucket, error) {
	if err := validateBucket(b); err != nil {
		return Bucket{}, fmt.Errorf("update bucket: %w", err)
	}
	if err := m.lock(); err != nil {
		return Bucket{}, err
	}
	defer m.st.mu.Unlock()
	cur, ok := m.st.mu.buckets[b.Key]
	if !ok {
		return Bucket{}, fmt.Errorf("%s: %w", b.Key, ErrNotFound)
	}
	if cur.Version != b.Version || b.Epoch < cur.Epoch || (b.Epoch == cur.Epoch && b.Leader != cur.Leader) {
		return Bucket{}, &ConflictError{Current: cloneBucket(cur), Reason: conflictReason(b, cur)}
	}
	b = cloneBucket(b)
	b.Version++
	m.st.mu.buckets[b.Key] = b
	m.st.mu.changes++
	return cloneBucket(b), nil
}

func (m *Mem) DeleteTable(_ context.Context, tableID int64) error {
	if err := m.lock(); err != nil {
		return err
	}
	defer m.st.mu.Unlock()
	n := 0
	for k := range m.st.mu.buckets {
		if k.TableID == tableID {
			delete(m.st.mu.buckets, k)
			n++
		}
	}
	if n > 0 {
		m.st.mu.changes++
	}
	return nil
}

func (m *Mem) Changes(context.Context) (int64, error) {
	if err := m.lock(); err != nil {
		return 0, err
	}
	defer m.st.mu.Unlock()
	return m.st.mu.changes, nil
}

func (m *Mem) AcquireLease(_ context.Context, name, holder string, ttl time.Duration) (Lease, error) {
	if err := validateLease(name, holder, ttl); err != nil {
		return Lease{}, fmt.Errorf("acquire lease: %w", err)
	}
	start := m.st.now()
	if err := m.lock(); err != nil {
		return Lease{}, err
	}
	defer m.st.mu.Unlock()
	now := m.st.now().UnixMicro()
	cur, ok := m.st.mu.leases[name]
	next := memLease{holder: holder, token: cur.token, expires: now + ttl.Microseconds()}
	switch {
	case ok && cur.holder == holder: // a renewal: the token stands
	case ok && cur.holder != "" && cur.expires > now:
		return Lease{}, &LeaseHeldError{Name: name, Holder: cur.holder, Expires: time.UnixMicro(cur.expires)}
	default:
		next.token++
		m.st.mu.changes++
	}
	m.st.mu.leases[name] = next
	return Lease{Name: name, Holder: holder, Token: next.token, Expires: start.Add(ttl)}, nil
}

func (m *Mem) ReleaseLease(_ context.Context, l Lease) error {
	if l.Name == "" || l.Holder == "" {
		return fmt.Errorf("release lease %q: %w: empty name or holder", l.Name, ErrInvalid)
	}
	if err := m.lock(); err != nil {
		return err
	}
	defer m.st.mu.Unlock()
	cur, ok := m.st.mu.leases[l.Name]
	if !ok || cur.holder != l.Holder || cur.token != l.Token {
		return fmt.Errorf("release lease %q: not held by %q with token %d: %w", l.Name, l.Holder, l.Token, ErrNotFound)
	}
	m.st.mu.leases[l.Name] = memLease{token: cur.token}
	m.st.mu.changes++
	return nil
}

func (m *Mem) Lease(_ context.Context, name string) (Lease, error) {
	if err := m.lock(); err != nil {
		return Lease{}, err
	}
	defer m.st.mu.Unlock()
	cur, ok := m.st.mu.leases[name]
	if !ok || cur.holder == "" || cur.expires <= m.st.now().UnixMicro() {
		return Lease{}, fmt.Errorf("lease %q: %w", name, ErrNotFound)
	}
	return Lease{Name: name, Holder: cur.holder, Token: cur.token, Expires: time.UnixMicro(cur.expires)}, nil
}
