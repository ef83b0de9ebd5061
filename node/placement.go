package node

import (
	"context"
	"crypto/rand"
	"fmt"
	"slices"
	"time"

	"github.com/lakestream/lakestream/cluster"
	"github.com/lakestream/lakestream/cluster/meta"
	"github.com/lakestream/lakestream/flightsrv"
	"github.com/lakestream/lakestream/tables"
)

// ticketKeySecret names the Flight ticket key in the metadata store: the
// first node to start stores a random one, and every node signs and
// checks tickets with it, so that a ticket planned on one node is read on
// another (docs/security.md, "Signed tickets").
const ticketKeySecret = "flight-ticket-key"

// sharedTicketKey is the cluster's ticket key, from the metadata store.
func (r *replication) sharedTicketKey(ctx context.Context) ([]byte, error) {
	fresh := make([]byte, 32)
	rand.Read(fresh)
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	key, err := r.store.Secret(ctx, ticketKeySecret, fresh)
	if err != nil {
		return nil, fmt.Errorf("the cluster's ticket key: %w", err)
	}
	return key, nil
}

// placement tells the Flight server where a cluster's buckets are read
// (flightsrv.Placement): from the replicas' roles this node runs, and for
// a bucket it holds no replica of, from the metadata store.
type placement struct {
	n *Node
	// followerReads: a bucket this node holds in sync is read here even
	// when another node leads it (--follower-reads).
	followerReads bool
}

var _ flightsrv.Placement = placement{}

// assignment is what this node knows of a bucket: its replica's role, or
// the store's state.
func (p placement) assignment(ctx context.Context, tableID int64, b int) (cluster.Assignment, bool, error) {
	r := p.n.repl
	if a, ok := r.reps.Role(ref(tableID, b)); ok {
		return a, true, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	stored, err := r.store.Bucket(ctx, ref(tableID, b))
	if err != nil {
		// Unavailable, as a bucket without a leader: the client retries.
		return cluster.Assignment{}, false, fmt.Errorf("%w: where bucket %d of table %d is: %w", tables.ErrReplicaUnavailable, b, tableID, err)
	}
	return cluster.AssignmentOf(stored, 0, r.addr), false, nil
}

func (p placement) ReadFrom(ctx context.Context, tableID int64, buckets int) ([]flightsrv.Location, error) {
	out := make([]flightsrv.Location, buckets)
	var stored map[int]cluster.Assignment // read once, for the buckets without a replica here
	here := p.Self()
	for b := range out {
		a, held := p.n.repl.reps.Role(ref(tableID, b))
		if !held {
			if stored == nil {
				var err error
				if stored, err = p.storedAssignments(ctx, tableID); err != nil {
					return nil, err
				}
			}
			var ok bool
			if a, ok = stored[b]; !ok {
				return nil, fmt.Errorf("where bucket %d of table %d is: %w", b, tableID, meta.ErrNotFound)
			}
		}
		if a.Leader == here.Node || (p.followerReads && held && slices.Contains(a.ISR, here.Node)) {
			out[b] = here
			continue
		}
		out[b] = p.leaderOf(a)
	}
	return out, nil
}

// storedAssignments are a table's buckets as the metadata store holds
// them.
func (p placement) storedAssignments(ctx context.Context, tableID int64) (map[int]cluster.Assignment, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	bs, err := p.n.repl.store.Buckets(ctx, tableID)
	if err != nil {
		return nil, fmt.Errorf("where the buckets of table %d are: %w", tableID, err)
	}
	out := make(map[int]cluster.Assignment, len(bs))
	for _, b := range bs {
		if b.Key.Partition == "" {
			out[int(b.Key.Bucket)] = cluster.AssignmentOf(b, 0, p.n.repl.addr)
		}
	}
	return out, nil
}

func (p placement) ReadHere(ctx context.Context, tableID int64, b int) (flightsrv.Location, bool, error) {
	a, held, err := p.assignment(ctx, tableID, b)
	if err != nil {
		return flightsrv.Location{}, false, err
	}
	if held && slices.Contains(a.ISR, p.n.repl.self) {
		return p.Self(), true, nil
	}
	return p.leaderOf(a), false, nil
}

func (p placement) Self() flightsrv.Location {
	addr, err := p.n.cfg.Cluster.advertise(p.n.Addr())
	if err != nil {
		addr = p.n.Addr() // checked at start-up: not reached
	}
	return flightsrv.Location{Node: p.n.repl.self, URI: p.uri(addr), Self: true}
}

// leaderOf is the location of a's leader; none without one, or when
// gossip does not know its address.
func (p placement) leaderOf(a cluster.Assignment) flightsrv.Location {
	if a.Leader == "" || a.LeaderAddr == "" {
		return flightsrv.Location{Node: a.Leader}
	}
	return flightsrv.Location{Node: a.Leader, URI: p.uri(a.LeaderAddr)}
}

// uri is the Flight location of a node's advertised address: every node
// of a cluster serves TLS or none does.
func (p placement) uri(addr string) string {
	if p.n.cfg.Security.TLSCert != "" {
		return "grpc+tls://" + addr
	}
	return "grpc+tcp://" + addr
}
