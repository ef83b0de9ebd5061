package cluster

import (
	"fmt"
	"slices"

	"github.com/lakestream/lakestream/cluster/meta"
	"github.com/lakestream/lakestream/membership"
)

// Place is the initial state of a new bucket: its replicas placed over the
// live nodes (membership.Place: rendezvous hashing, rack-aware), the first
// leading at epoch 0, every replica in sync (an empty log is in sync with
// an empty log).
func Place(ref BucketRef, replicas int, nodes []membership.Node) meta.Bucket {
	ids := membership.Place(placementKey(ref), replicas, nodes)
	st := meta.Bucket{Key: ref, Replicas: ids, ISR: sortedSet(ids)}
	if len(ids) > 0 {
		st.Leader = ids[0]
	}
	return st
}

// placementKey names a bucket for placement: stable across restarts and
// renames (the table's id, not its name).
func placementKey(ref BucketRef) string {
	return fmt.Sprintf("%d/%s/%d", ref.TableID, ref.Partition, ref.Bucket)
}

// Decide is the controller's decision for one bucket given the members
// alive now: the new state to write (by compare-and-set on st.Version), or
// ok false when nothing changes.
//
//   - A leader that is not alive is replaced by the first replica, in
//     placement order, that is alive and in sync, at the next epoch; the
//     in-sync set loses the members that are not alive.
//   - When no in-sync replica is alive the bucket has no leader (at the
//     next epoch, so the former leader is fenced) until one returns: a
//     replica that is not in sync may lack acknowledged writes, so it is
//     never elected (no unclean election).
//   - A live leader's in-sync set is the leader's to change (a follower
//     that falls behind for Config.ReplicaLagMax leaves it): the
//     controller's view of who is alive is gossip's, which may be wrong
//     for a moment (a node busy or paused), and taking a live, caught-up
//     follower out would let the high watermark pass what it holds for
//     nothing. The fault tests saw such a view shrink a set to its leader
//     alone, leaving no replica to elect when the leader then failed.
func Decide(st meta.Bucket, alive func(id string) bool) (meta.Bucket, bool) {
	if st.Leader != "" && alive(st.Leader) {
		return st, false
	}
	liveISR := slices.DeleteFunc(slices.Clone(st.ISR), func(id string) bool { return !alive(id) })
	next := st
	next.Replicas = slices.Clone(st.Replicas)
	leader := ""
	for _, id := range st.Replicas {
		if slices.Contains(liveISR, id) {
			leader = id
			break
		}
	}
	if leader == "" {
		if st.Leader == "" {
			return st, false // offline, and still no in-sync replica alive
		}
		// Keep the in-sync set: one of them must come back.
		next.Leader = ""
		next.Epoch = st.Epoch + 1
		next.ISR = slices.Clone(st.ISR)
		return next, true
	}
	next.Leader = leader
	next.Epoch = st.Epoch + 1
	next.ISR = liveISR
	return next, true
}
