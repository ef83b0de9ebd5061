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

// View is what the controller knows of the nodes when it decides.
type View struct {
	// Alive says whether a node is alive (gossip sees it, and it holds its
	// node lease).
	Alive func(id string) bool
	// Draining says whether a node hands its leaderships off: it stops
	// soon (a graceful stop) or is being decommissioned. nil: none is.
	Draining func(id string) bool
}

func (v View) draining(id string) bool { return v.Draining != nil && v.Draining(id) }

// Decide is the controller's decision for one bucket given the view of the
// nodes now: the new state to write (by compare-and-set on st.Version), or
// ok false when nothing changes.
//
//   - A leader that is not alive is replaced by the first replica, in
//     placement order, that is alive and in sync, at the next epoch; the
//     in-sync set loses the members that are not alive. A draining replica
//     is taken only when no other one qualifies.
//   - A live leader that drains hands its leadership to the first replica
//     that is alive, in sync and not draining, at the next epoch; the
//     in-sync set stays (the former leader holds every acknowledged row,
//     and follows from there). With no such replica it keeps leading.
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
//     One exception: a follower that drains and is no longer alive
//     stopped on purpose (it marked itself draining, then released its
//     node lease), so it leaves the set at once rather than stalling
//     acknowledgements for ReplicaLagMax.
func Decide(st meta.Bucket, v View) (meta.Bucket, bool) {
	if st.Leader != "" && v.Alive(st.Leader) {
		if v.draining(st.Leader) {
			if next, ok := handOff(st, v); ok {
				return next, true
			}
		}
		return dropStopped(st, v)
	}
	liveISR := slices.DeleteFunc(slices.Clone(st.ISR), func(id string) bool { return !v.Alive(id) })
	next := st
	next.Replicas = slices.Clone(st.Replicas)
	leader := firstEligible(st.Replicas, liveISR, v, "")
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

// firstEligible is the first replica, in placement order, that is in isr,
// alive and not except, preferring one that does not drain; "" when none.
func firstEligible(replicas, isr []string, v View, except string) string {
	fallback := ""
	for _, id := range replicas {
		if id == except || !slices.Contains(isr, id) || !v.Alive(id) {
			continue
		}
		if !v.draining(id) {
			return id
		}
		if fallback == "" {
			fallback = id
		}
	}
	return fallback
}

// HandOffTarget is the replica that Decide hands a draining leader's
// leadership to: the first in placement order that is alive, in sync and
// not draining; "" when there is none, and the leader keeps leading.
func HandOffTarget(st meta.Bucket, v View) string {
	to := firstEligible(st.Replicas, st.ISR, v, st.Leader)
	if v.draining(to) {
		return ""
	}
	return to
}

// handOff moves the leadership of a live, draining leader to an in-sync
// replica that is alive and does not drain.
func handOff(st meta.Bucket, v View) (meta.Bucket, bool) {
	to := HandOffTarget(st, v)
	if to == "" {
		return st, false
	}
	next := st
	next.Replicas = slices.Clone(st.Replicas)
	next.ISR = slices.DeleteFunc(slices.Clone(st.ISR), func(id string) bool { return id != to && id != st.Leader && stopped(id, v) })
	next.Leader = to
	next.Epoch = st.Epoch + 1
	return next, true
}

// stopped says whether a node stopped on purpose: it drains and is gone.
func stopped(id string, v View) bool { return v.draining(id) && !v.Alive(id) }

// dropStopped takes the followers that stopped on purpose out of a live
// leader's in-sync set, at the same epoch.
func dropStopped(st meta.Bucket, v View) (meta.Bucket, bool) {
	isr := slices.DeleteFunc(slices.Clone(st.ISR), func(id string) bool { return id != st.Leader && stopped(id, v) })
	if len(isr) == len(st.ISR) {
		return st, false
	}
	next := st
	next.Replicas = slices.Clone(st.Replicas)
	next.ISR = isr
	return next, true
}
