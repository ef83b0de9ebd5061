package node

import (
	"context"
	"fmt"
	"time"

	"github.com/lakestream/lakestream/cluster"
)

// StatusCluster is the cluster as this node sees it, on the status page
// and in /status.json (absent on a single node): the members as gossip
// sees them, with the metadata store's marks, every bucket as the store
// holds it, and the events this node counted (cluster_metrics.go).
type StatusCluster struct {
	NodeID          string                `json:"node_id"`
	Controller      string                `json:"controller"` // the holder of the controller lease, "" when none
	Members         []StatusClusterMember `json:"members"`
	Buckets         []StatusClusterBucket `json:"buckets"`
	UnderReplicated int                   `json:"under_replicated"`
	Offline         int                   `json:"offline"`
	Elections       int64                 `json:"elections"`
	HandOffs        int64                 `json:"handoffs"`
	ISRShrinks      int64                 `json:"isr_shrinks"`
	ISRExpands      int64                 `json:"isr_expands"`
	MetaError       string                `json:"meta_error,omitempty"`
}

// StatusClusterMember is one member: State is gossip's (alive, suspect,
// dead, left); Draining says it hands its leaderships off (it is
// stopping), Decommissioned that its replicas move away.
type StatusClusterMember struct {
	ID             string `json:"id"`
	State          string `json:"state"`
	Flight         string `json:"flight"`
	HTTP           string `json:"http"`
	Rack           string `json:"rack"`
	Draining       bool   `json:"draining"`
	Decommissioned bool   `json:"decommissioned"`
}

// StatusClusterBucket is one bucket as the metadata store holds it, with
// this node's role in it.
type StatusClusterBucket struct {
	Table           string   `json:"table"`
	Bucket          int32    `json:"bucket"`
	Leader          string   `json:"leader"`
	Epoch           int32    `json:"epoch"`
	Replicas        []string `json:"replicas"`
	ISR             []string `json:"isr"`
	UnderReplicated bool     `json:"under_replicated"`
	LocalRole       string   `json:"local_role"`
}

// clusterStatus gathers the StatusCluster; nil on a single node.
func (n *Node) clusterStatus(ctx context.Context) *StatusCluster {
	r := n.repl
	if r == nil {
		return nil
	}
	st := &StatusCluster{NodeID: r.self, Members: []StatusClusterMember{}, Buckets: []StatusClusterBucket{},
		Elections: r.stats.elections.Load(), HandOffs: r.stats.handOffs.Load(),
		ISRShrinks: r.stats.isrShrinks.Load(), ISRExpands: r.stats.isrExpands.Load()}
	if m := r.members(); m != nil {
		for _, mb := range m.Members() {
			st.Members = append(st.Members, StatusClusterMember{ID: mb.ID, State: string(mb.State), Flight: mb.Flight, HTTP: mb.HTTP, Rack: mb.Rack,
				Draining: r.marked(DrainLease(mb.ID), mb.ID), Decommissioned: r.decommissioned(mb.ID)})
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if l, err := r.store.Lease(ctx, cluster.ControllerLease); err == nil {
		st.Controller = l.Holder
	}
	all, err := r.store.AllBuckets(ctx)
	if err != nil {
		st.MetaError = err.Error()
		return st
	}
	labels := n.tableLabels(ctx)
	for _, b := range all {
		row := StatusClusterBucket{Table: labels.of(b.Key.TableID, fmt.Sprintf("#%d", b.Key.TableID)), Bucket: b.Key.Bucket, Leader: b.Leader, Epoch: b.Epoch,
			Replicas: b.Replicas, ISR: b.ISR, UnderReplicated: len(b.ISR) < len(b.Replicas), LocalRole: "none"}
		if a, ok := r.reps.Role(b.Key); ok && a.Leader != "" {
			row.LocalRole = "follower"
			if a.Leader == r.self {
				row.LocalRole = "leader"
			}
		}
		if row.UnderReplicated {
			st.UnderReplicated++
		}
		if b.Leader == "" {
			st.Offline++
		}
		st.Buckets = append(st.Buckets, row)
	}
	return st
}
