package cluster

import (
	"slices"

	"github.com/lakestream/lakestream/cluster/meta"
	"github.com/lakestream/lakestream/membership"
)

// Reassign is the controller's decision that moves a bucket's replicas off
// decommissioned nodes, one step per call, each written by compare-and-set
// like Decide's:
//
//  1. While fewer than want replicas are on nodes that stay, a new replica
//     is added on the best-placed node among nodes (membership.Place over
//     those that hold none yet), outside the in-sync set: it fetches the
//     leader's log from the start and the leader takes it into the set
//     once it has caught up.
//  2. Once want replicas that stay are in sync, the decommissioned
//     replicas are dropped from the replicas and the in-sync set — except
//     a leader, whose leadership Decide hands off first (a decommissioned
//     node drains).
//
// Each step raises the epoch, the leader staying: a leader learns its
// replicas with its epoch (only the replicas it knows may fetch), and the
// followers follow the new epoch from where their logs end. The writes in
// flight on the leader at that moment fail with ErrNotLeader and are
// retried, as in an election. nodes are the live nodes that neither drain
// nor are decommissioned; want is the bucket's replica count
// (bucket.replicas). ok is false when nothing changes — also when no node
// is left to move a replica to, until one joins.
func Reassign(st meta.Bucket, decommissioned func(id string) bool, want int, nodes []membership.Node) (meta.Bucket, bool) {
	if !slices.ContainsFunc(st.Replicas, decommissioned) || st.Leader == "" {
		return st, false
	}
	stay := slices.DeleteFunc(slices.Clone(st.Replicas), decommissioned)
	inSync := 0
	for _, id := range stay {
		if slices.Contains(st.ISR, id) {
			inSync++
		}
	}
	next := st
	next.Epoch = st.Epoch + 1
	switch {
	case inSync >= want:
		drop := func(id string) bool { return id != st.Leader && decommissioned(id) }
		next.Replicas = slices.DeleteFunc(slices.Clone(st.Replicas), drop)
		next.ISR = slices.DeleteFunc(slices.Clone(st.ISR), drop)
		if len(next.Replicas) == len(st.Replicas) {
			return st, false // only the leader is left to go: Decide hands it off
		}
		return next, true
	case len(stay) < want:
		var free []membership.Node
		for _, n := range nodes {
			if !slices.Contains(st.Replicas, n.ID) && !decommissioned(n.ID) {
				free = append(free, n)
			}
		}
		to := membership.Place(placementKey(st.Key), 1, free)
		if len(to) == 0 {
			return st, false
		}
		next.Replicas = append(slices.Clone(st.Replicas), to[0])
		next.ISR = slices.Clone(st.ISR)
		return next, true
	}
	return st, false // the new replicas are catching up
}
