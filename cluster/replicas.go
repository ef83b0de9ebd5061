package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// Assignment is a bucket's state as the metadata store holds it, which a
// node applies to the replica it holds.
type Assignment struct {
	Ref        BucketRef
	Replicas   []string
	Leader     string // node id; "" when the bucket has no leader
	LeaderAddr string // where the leader serves replication
	Epoch      int32
	ISR        []string
	MinISR     int   // min.insync.replicas
	Version    int64 // the store's version of the bucket: orders in-sync set changes
}

// Replicas holds the replicas of the buckets on one node and runs each
// one's role: a leader serves fetches and moves the high watermark, a
// follower copies the leader's log. Roles change only by Apply, with the
// assignments the node reads from the metadata store.
type Replicas struct {
	cfg       Config
	tr        Transport
	isrChange func(BucketRef) ISRChange
	fwd       forwardHandler // forward.go

	mu struct {
		sync.Mutex
		buckets map[BucketRef]*replica
		closed  bool
	}
}

// replica is one bucket's log on this node and its current role. Its own
// lock orders role changes, so that one bucket's election does not hold up
// the others' fetches and writes; Replicas.mu guards only the map.
type replica struct {
	ref BucketRef
	log Log

	mu      sync.Mutex
	role    Assignment // the assignment applied last
	applied bool       // whether any was
	removed bool       // Remove or Close took it out: no role starts again
	lead    *leader    // set while the node leads
	stop    func()     // ends the role's goroutines and waits for them
}

// NewReplicas returns an empty set of replicas; isrChange writes an in-sync
// set that a leader proposes to the metadata store.
func NewReplicas(cfg Config, tr Transport, isrChange func(BucketRef) ISRChange) (*Replicas, error) {
	cfg.EnsureDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	r := &Replicas{cfg: cfg, tr: tr, isrChange: isrChange}
	r.mu.buckets = map[BucketRef]*replica{}
	return r, nil
}

// Add registers the log of a bucket this node holds a replica of. It has
// no role until Apply gives it one: it serves nothing and fetches nothing.
func (r *Replicas) Add(ref BucketRef, log Log) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.mu.closed {
		return errors.New("replicas closed")
	}
	if _, ok := r.mu.buckets[ref]; ok {
		return fmt.Errorf("%s: replica already added", ref)
	}
	r.mu.buckets[ref] = &replica{ref: ref, log: log, stop: func() {}}
	return nil
}

// Remove stops the bucket's role and forgets its replica.
func (r *Replicas) Remove(ref BucketRef) {
	r.mu.Lock()
	rep := r.mu.buckets[ref]
	delete(r.mu.buckets, ref)
	r.mu.Unlock()
	if rep != nil {
		rep.mu.Lock()
		rep.removed = true
		rep.stopRoleLocked()
		rep.mu.Unlock()
	}
}

// Close stops every role.
func (r *Replicas) Close() {
	r.mu.Lock()
	r.mu.closed = true
	reps := make([]*replica, 0, len(r.mu.buckets))
	for _, rep := range r.mu.buckets {
		reps = append(reps, rep)
	}
	r.mu.buckets = map[BucketRef]*replica{}
	r.mu.Unlock()
	for _, rep := range reps {
		rep.mu.Lock()
		rep.removed = true
		rep.stopRoleLocked()
		rep.mu.Unlock()
	}
}

func (rep *replica) stopRoleLocked() {
	if rep.lead != nil {
		rep.lead.depose()
	}
	rep.stop()
	rep.stop = func() {}
	rep.lead = nil
}

// Apply makes this node's replica of a.Ref take the role a says: leader
// (a.Leader is this node), follower of a.Leader, or none while the bucket
// has no leader. An assignment of an epoch below the one applied is
// stale and ignored; one at the same epoch only updates the in-sync set.
func (r *Replicas) Apply(a Assignment) error {
	r.mu.Lock()
	rep := r.mu.buckets[a.Ref]
	r.mu.Unlock()
	if rep == nil {
		return fmt.Errorf("%s: no replica on this node", a.Ref)
	}
	rep.mu.Lock()
	defer rep.mu.Unlock()
	if rep.removed {
		return fmt.Errorf("%s: replica removed", a.Ref)
	}
	cur := rep.role
	switch {
	case !rep.applied:
	case a.Epoch < cur.Epoch:
		return nil
	case a.Epoch == cur.Epoch && a.Leader == cur.Leader && a.LeaderAddr == cur.LeaderAddr:
		if a.Version > cur.Version {
			rep.role.ISR, rep.role.Version = slices.Clone(a.ISR), a.Version
		}
		if rep.lead != nil {
			rep.lead.setISR(a.Epoch, a.Version, a.ISR)
		}
		return nil
	}
	rep.stopRoleLocked()
	rep.role, rep.applied = a, true
	switch a.Leader {
	case r.cfg.NodeID:
		if err := r.leadLocked(rep, a); err != nil {
			rep.applied = false // the next assignment tries again
			return err
		}
		return nil
	case "":
		return nil
	default:
		r.followLocked(rep, a)
		return nil
	}
}

// leadLocked starts the leader's role: the epoch begins in the log, and a
// goroutine moves the high watermark with the leader's durable end and
// proposes in-sync set changes.
func (r *Replicas) leadLocked(rep *replica, a Assignment) error {
	if err := rep.log.BecomeLeader(a.Epoch); err != nil {
		return fmt.Errorf("%s: lead at epoch %d: %w", a.Ref, a.Epoch, err)
	}
	l := newLeader(r.cfg.NodeID, rep.log, a, r.cfg.ReplicaLagMax, r.cfg.Now)
	rep.lead = l
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	change := r.isrChange(a.Ref)
	go func() {
		defer close(done)
		r.runLeader(ctx, rep.log, l, a.Epoch, change)
	}()
	rep.stop = func() { cancel(); <-done }
	l.durableMoved()
	return nil
}

// runLeader follows the leader's durable end and checks for lagging
// followers, until ctx ends.
func (r *Replicas) runLeader(ctx context.Context, log Log, l *leader, epoch int32, change ISRChange) {
	tick := time.NewTicker(max(r.cfg.ReplicaLagMax/4, 10*time.Millisecond))
	defer tick.Stop()
	for {
		notify := log.NotifyDurable()
		l.durableMoved()
		select {
		case <-ctx.Done():
			return
		case <-notify:
		case <-tick.C:
			if isr, base := l.lagging(); isr != nil {
				r.propose(ctx, l, epoch, base, isr, change)
			}
		}
	}
}

// propose writes an in-sync set, computed from the stored bucket of version
// base, to the metadata store and applies it once stored; a refusal means
// the view is stale, and the next assignment the node reads brings the
// truth.
func (r *Replicas) propose(ctx context.Context, l *leader, epoch int32, base int64, isr []string, change ISRChange) {
	if change == nil {
		l.proposed(isr, 0, false)
		return
	}
	version, err := change(ctx, epoch, base, isr)
	if err != nil {
		r.cfg.Logger.Info("in-sync set change refused", "isr", isr, "epoch", epoch, "error", err)
	}
	l.proposed(isr, version, err == nil)
}

// followLocked starts the follower's loop; with the leader's address not
// known yet it waits for an assignment that has it.
func (r *Replicas) followLocked(rep *replica, a Assignment) {
	if a.LeaderAddr == "" {
		return
	}
	f := &follower{self: r.cfg.NodeID, ref: a.Ref, log: rep.log, epoch: a.Epoch, leaderAddr: a.LeaderAddr, tr: r.tr, cfg: r.cfg, logger: r.cfg.Logger}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.run(ctx)
	}()
	rep.stop = func() { cancel(); <-done }
}

// leaderOf is the bucket's leader state when this node leads it.
// An unknown bucket, or one without an assignment yet, has the role of
// epoch -1, so that every request to it is of an unknown epoch.
func (r *Replicas) leaderOf(ref BucketRef) (*replica, *leader, Assignment) {
	r.mu.Lock()
	rep := r.mu.buckets[ref]
	r.mu.Unlock()
	if rep == nil {
		return nil, nil, Assignment{Epoch: -1}
	}
	rep.mu.Lock()
	defer rep.mu.Unlock()
	if !rep.applied {
		return rep, nil, Assignment{Epoch: -1}
	}
	return rep, rep.lead, rep.role
}

// BeforeWrite refuses a write to a bucket this node does not lead, or
// whose in-sync set is below min.insync.replicas.
func (r *Replicas) BeforeWrite(ref BucketRef) error {
	_, l, _ := r.leaderOf(ref)
	if l == nil {
		return fmt.Errorf("%s: %w", ref, ErrNotLeader)
	}
	return l.checkWrite()
}

// WaitAcked waits until a write that ends at end in the bucket is held by
// the in-sync replicas: then it may be acknowledged.
func (r *Replicas) WaitAcked(ctx context.Context, ref BucketRef, end int64) error {
	_, l, _ := r.leaderOf(ref)
	if l == nil {
		return fmt.Errorf("%s: %w", ref, ErrNotLeader)
	}
	return l.waitAcked(ctx, end)
}

// Role is the assignment applied last to this node's replica of ref; ok
// is false when the node holds no replica of it or none was applied.
func (r *Replicas) Role(ref BucketRef) (a Assignment, ok bool) {
	r.mu.Lock()
	rep := r.mu.buckets[ref]
	r.mu.Unlock()
	if rep == nil {
		return Assignment{}, false
	}
	rep.mu.Lock()
	defer rep.mu.Unlock()
	return rep.role, rep.applied
}

// ISR is the in-sync set of a bucket this node leads, nil otherwise.
func (r *Replicas) ISR(ref BucketRef) []string {
	if _, l, _ := r.leaderOf(ref); l != nil {
		return l.isr()
	}
	return nil
}

// fetch answers a follower's fetch: fenced by epoch, it records the
// follower's end, waits up to MaxWaitMs for batches when there are none,
// and returns the batches from the requested offset.
func (r *Replicas) fetch(ctx context.Context, q FetchRequest) FetchResponse {
	rep, l, role := r.leaderOf(q.BucketRef)
	if code, msg := fence(l, role, q.Epoch); code != CodeOK {
		return FetchResponse{Code: code, Epoch: role.Epoch, Message: msg}
	}
	if !l.isReplica(q.Follower) {
		return FetchResponse{Code: CodeBadRequest, Epoch: role.Epoch, Message: fmt.Sprintf("%q holds no replica of %s", q.Follower, q.BucketRef)}
	}
	log := rep.log
	// Taken before the durable end is read: a commit between the read
	// and the wait below closes it, rather than going unnoticed until the
	// next one.
	durableMoved := log.NotifyDurable()
	start, durable := log.Start(), log.Durable()
	if q.Offset < start || q.Offset > durable {
		return FetchResponse{Code: CodeOutOfRange, Epoch: role.Epoch, Start: start, End: durable,
			Message: fmt.Sprintf("offset %d is outside the leader's log [%d, %d)", q.Offset, start, durable)}
	}
	if isr, base := l.fetched(q.Follower, q.Offset); isr != nil {
		r.propose(ctx, l, role.Epoch, base, isr, r.isrChange(q.BucketRef))
	}
	if hold, hwMoved := l.holdFetch(q.Follower); hold && q.Offset == durable && q.MaxWaitMs > 0 {
		// A follower at the end, told the current high watermark, waits
		// for new batches, or for the high watermark to move (another
		// follower's fetch moved it): its readers see rows only below the
		// watermark it learns here, so holding the answer until the next
		// write would hold them back.
		wait := time.NewTimer(min(time.Duration(q.MaxWaitMs)*time.Millisecond, r.cfg.FetchMaxWait))
		select {
		case <-durableMoved:
		case <-hwMoved:
		case <-wait.C:
		case <-ctx.Done():
		}
		wait.Stop()
	}
	maxBytes := int(min(max(q.MaxBytes, 1), maxFetchBytes))
	var batches []byte
	if q.Offset < log.Durable() {
		var err error
		if batches, err = log.Read(q.Offset, maxBytes); err != nil {
			return FetchResponse{Code: CodeOutOfRange, Epoch: role.Epoch, Message: fmt.Sprintf("read from %d: %v", q.Offset, err)}
		}
	}
	resp := FetchResponse{Code: CodeOK, Epoch: role.Epoch, HW: l.highWatermark(), Start: log.Start(), End: log.Durable(), Batches: batches}
	if l.isDeposed() {
		// Deposed while it waited: the log may now hold a new leader's
		// batches at these offsets, which are not this epoch's to send.
		return FetchResponse{Code: CodeNotLeader, Epoch: role.Epoch, Message: "leadership ended during the fetch"}
	}
	l.sent(q.Follower, resp.End, resp.HW)
	return resp
}

// endForEpoch answers where an epoch ends in the leader's log.
func (r *Replicas) endForEpoch(q EpochRequest) EpochResponse {
	rep, l, role := r.leaderOf(q.BucketRef)
	if code, msg := fence(l, role, q.Epoch); code != CodeOK {
		return EpochResponse{Code: code, Epoch: role.Epoch, Message: msg}
	}
	found, end := rep.log.EndForEpoch(q.Asked)
	if l.isDeposed() {
		return EpochResponse{Code: CodeNotLeader, Epoch: role.Epoch, Message: "leadership ended during the request"}
	}
	return EpochResponse{Code: CodeOK, Epoch: role.Epoch, FoundEpoch: found, EndOffset: end}
}

// fence checks a request's epoch against the one this node applied last.
// A newer one is unknown here (the node has not applied the election
// yet: ask again), whatever its role.
func fence(l *leader, role Assignment, epoch int32) (Code, string) {
	switch {
	case epoch > role.Epoch:
		return CodeUnknownEpoch, fmt.Sprintf("epoch %d is newer than the %d this node knows", epoch, role.Epoch)
	case l == nil:
		return CodeNotLeader, fmt.Sprintf("this node does not lead the bucket (leader %q at epoch %d)", role.Leader, role.Epoch)
	case epoch < role.Epoch:
		return CodeFencedEpoch, fmt.Sprintf("epoch %d is older than the leader's %d", epoch, role.Epoch)
	}
	return CodeOK, ""
}
