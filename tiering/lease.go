package tiering

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/apache/iceberg-go/table"
)

// A lake shared by the nodes of a cluster (docs/cluster.md#tiering-in-a-cluster)
// has one committer per table: the node that holds the table's committer
// lease in the metadata store. The other nodes follow: they read the
// table's lake state back from the catalog when it changes, so that their
// reads capture it and their log retention takes its offsets as the floor.
//
// What keeps the lake exact across holders is the lake's own compare-and-
// set, not the lease: a round's commit asserts that the table's current
// snapshot is the one whose offsets the round read (Iceberg's
// assert-ref-snapshot-id, checked by the catalog in the commit), so a
// round commits only on top of the state it tiered from, whoever runs it.
// The lease makes one node do the work; its fencing token, written into
// the table with every commit (committerKey), stops a holder that lost the
// lease for good: once another holder committed, the stale one's commit
// fails the snapshot assertion, its reload reads the newer token, and it
// commits nothing more. Before that, a holder commits only before its
// lease's expiry on its own clock, less leaseMargin.

// Leases decides which node commits each table of a shared lake.
type Leases interface {
	// Acquire takes or renews this node's committer lease of the table.
	// ok is false when another node holds it, or when this node may not
	// (it drains, or another node is preferred).
	Acquire(ctx context.Context, tableID int64) (l Lease, ok bool, err error)
	// Release gives a lease up; one already lost is no error.
	Release(ctx context.Context, l Lease) error
}

// Lease is a committer lease as held by this node.
type Lease struct {
	TableID int64
	// Token is the lease's fencing token: it grows with every new holder.
	Token int64
	// Expires is when the holder must stop committing, on this node's
	// clock (never later than the store's expiry).
	Expires time.Time
}

// LeaseEvery is how often a node acquires or renews its committer leases;
// a lease is granted for a few times that (the node's Leases decides).
const LeaseEvery = time.Second

// leaseMargin is the time before its lease's expiry after which a holder
// starts no commit: a commit under way then may still land, which the
// lake's snapshot assertion makes harmless.
const leaseMargin = time.Second

// committerKey is the table property naming the fencing token of the
// committer lease under which the table's last commit was made.
const committerKey = "lakestream.committer-token"

// ErrNotCommitter is the error of a round or maintenance pass on a node
// that does not hold the table's committer lease (or lost it, or was
// fenced by a newer holder's commit).
var ErrNotCommitter = errors.New("this node is not the table's lake committer")

// leaseState is what a Service knows of its committer leases.
type leaseState struct {
	mu   sync.Mutex
	held map[int64]Lease // by table id
}

// lease returns the table's committer lease while it is valid to commit
// under, for a Service with Leases; ok is also true without Leases (one
// node, or a lake of its own), with a zero Lease.
func (s *Service) lease(tableID int64) (Lease, bool) {
	if s.cfg.Leases == nil {
		return Lease{}, true
	}
	s.leases.mu.Lock()
	l, ok := s.leases.held[tableID]
	s.leases.mu.Unlock()
	return l, ok && time.Now().Before(l.Expires.Add(-leaseMargin))
}

// checkFence says whether lt may commit on top of its state now: it holds
// the lease, and the state's last commit was not made under a newer token.
// It returns the token to write with the commit ("" without Leases).
func (s *Service) checkFence(lt *lakeTable) (string, error) {
	if s.cfg.Leases == nil {
		return "", nil
	}
	id := lt.t.Def().ID
	l, ok := s.lease(id)
	if !ok {
		return "", fmt.Errorf("%w: table %s: no valid lease", ErrNotCommitter, lt.t.Name())
	}
	if prev := committerToken(lt.state.Load()); prev > l.Token {
		s.dropLease(id, l.Token)
		return "", fmt.Errorf("%w: table %s: the lake was committed under lease token %d, this node holds %d", ErrNotCommitter, lt.t.Name(), prev, l.Token)
	}
	return strconv.FormatInt(l.Token, 10), nil
}

// committerToken is the fencing token of the state's last commit, 0 when
// none was made under a lease.
func committerToken(st *lakeState) int64 {
	v, err := strconv.ParseInt(st.tbl.Properties()[committerKey], 10, 64)
	if err != nil {
		return 0
	}
	return v
}

// dropLease forgets a lease this node was fenced out of, if it is still
// the one held; the next renewal asks the store again.
func (s *Service) dropLease(id, token int64) {
	s.leases.mu.Lock()
	if l, ok := s.leases.held[id]; ok && l.Token == token {
		delete(s.leases.held, id)
	}
	s.leases.mu.Unlock()
}

// holdLeases acquires or renews the committer lease of every table every
// LeaseEvery until ctx ends, then releases those held. It is the only
// writer of s.leases.held but for dropLease.
func (s *Service) holdLeases(ctx context.Context) {
	tick := time.NewTicker(LeaseEvery)
	defer tick.Stop()
	for {
		s.renewLeases(ctx)
		select {
		case <-ctx.Done():
			s.releaseLeases()
			return
		case <-tick.C:
		}
	}
}

func (s *Service) renewLeases(ctx context.Context) {
	s.mu.Lock()
	ids := make([]int64, 0, len(s.tables))
	for id := range s.tables {
		ids = append(ids, id)
	}
	s.mu.Unlock()
	s.releaseDropped(ids)
	for _, id := range ids {
		actx, cancel := context.WithTimeout(ctx, LeaseEvery)
		l, ok, err := s.cfg.Leases.Acquire(actx, id)
		cancel()
		if ctx.Err() != nil {
			return
		}
		s.leases.mu.Lock()
		prev, had := s.leases.held[id]
		switch {
		case err != nil:
			// Keep the lease until its expiry: lease() stops commits then.
		case ok:
			s.leases.held[id] = l
		default:
			delete(s.leases.held, id)
		}
		s.leases.mu.Unlock()
		if err != nil && ctx.Err() == nil {
			s.cfg.Logger.Warn("lake committer lease", "table_id", id, "error", err)
		}
		if ok && (!had || prev.Token != l.Token) {
			s.cfg.Logger.Info("lake committer lease acquired", "table_id", id, "token", l.Token)
		}
	}
}

// releaseDropped gives up the leases of tables no longer open (dropped).
func (s *Service) releaseDropped(open []int64) {
	s.leases.mu.Lock()
	var gone []Lease
	for id, l := range s.leases.held {
		if !slices.Contains(open, id) {
			gone = append(gone, l)
			delete(s.leases.held, id)
		}
	}
	s.leases.mu.Unlock()
	for _, l := range gone {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		if err := s.cfg.Leases.Release(ctx, l); err != nil {
			s.cfg.Logger.Warn("release the lake committer lease of a dropped table", "table_id", l.TableID, "error", err)
		}
		cancel()
	}
}

func (s *Service) releaseLeases() {
	s.leases.mu.Lock()
	held := s.leases.held
	s.leases.held = map[int64]Lease{}
	s.leases.mu.Unlock()
	for _, l := range held {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		if err := s.cfg.Leases.Release(ctx, l); err != nil {
			s.cfg.Logger.Warn("release the lake committer lease", "table_id", l.TableID, "error", err)
		}
		cancel()
	}
}

// follow reads a table's lake state back from the catalog when another
// node committed to it since it was last read: reads then capture the new
// snapshot, and log retention takes its offsets as the floor. A state
// that cannot be read (another engine's snapshot on top) is not taken.
func (s *Service) follow(ctx context.Context, lt *lakeTable) error {
	tbl, err := s.cat.LoadTable(ctx, lt.ident)
	if err != nil {
		return fmt.Errorf("follow lake table %s: %w", lt.t.Name(), err)
	}
	lt.mu.Lock()
	defer lt.mu.Unlock()
	cur := lt.state.Load()
	if tbl.MetadataLocation() == cur.tbl.MetadataLocation() {
		return nil
	}
	if !stateHolds(lt, tbl) {
		return nil // taken at a later look, once the replica caught up
	}
	st, err := s.newState(ctx, tbl, lt.t)
	if err != nil {
		return fmt.Errorf("follow lake table %s: %w", lt.t.Name(), err)
	}
	lt.state.Store(st)
	return nil
}

// stateHolds says whether a follower may take the lake state tbl: always
// for a log table (a union read takes the lake's rows and the log's above
// them, none when this replica is behind the lake), but for a primary-key
// table only once this replica's published state reaches the lake's
// offsets in every bucket: its reads keep the lake's rows that the state
// says are live, and a state behind the lake knows nothing of the newer
// ones.
func stateHolds(lt *lakeTable, tbl *table.Table) bool {
	def := lt.t.Def()
	if !def.HasPrimaryKey() {
		return true
	}
	offs, err := parseOffsets(tbl.Properties()[offsetsKey], def.Options.BucketNum)
	if err != nil {
		return true // newState reports it
	}
	pst, ok := lt.t.PKState()
	if !ok || !pst.Valid() {
		return false
	}
	for b, end := range pst.Ends() {
		if b < len(offs) && end < offs[b] {
			return false
		}
	}
	return true
}
