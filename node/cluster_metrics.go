package node

import (
	"context"
	"slices"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lakestream/lakestream/cluster"
	"github.com/lakestream/lakestream/cluster/meta"
)

var (
	descElections      = prometheus.NewDesc("lakestream_cluster_leader_elections_total", "Leader changes of buckets (to another node or to none) that this node's controller decided since it started; the cluster's total is the sum over nodes.", nil, nil)
	descHandOffs       = prometheus.NewDesc("lakestream_cluster_leader_handoffs_total", "Of those, leaderships handed off by a draining leader (a graceful stop or a decommission).", nil, nil)
	descISRShrinks     = prometheus.NewDesc("lakestream_cluster_isr_shrinks_total", "In-sync sets made smaller (by this node as leader, or by its controller) since it started.", nil, nil)
	descISRExpands     = prometheus.NewDesc("lakestream_cluster_isr_expands_total", "In-sync sets made larger (a follower caught up, as this node led it) since it started.", nil, nil)
	descUnderRepl      = prometheus.NewDesc("lakestream_cluster_under_replicated_buckets", "Buckets with fewer in-sync replicas than replicas, as the metadata store holds them.", nil, nil)
	descOffline        = prometheus.NewDesc("lakestream_cluster_offline_buckets", "Buckets without a leader (no in-sync replica alive), as the metadata store holds them.", nil, nil)
	descBucketsLed     = prometheus.NewDesc("lakestream_cluster_buckets_led", "Buckets this node leads, as the metadata store holds them.", nil, nil)
	descLiveMembers    = prometheus.NewDesc("lakestream_cluster_members_alive", "Members this node sees alive or suspect (gossip), itself included.", nil, nil)
	descClusterMetaErr = prometheus.NewDesc("lakestream_cluster_metadata_up", "1 when the metadata store answered this scrape, 0 when it did not.", nil, nil)
)

// clusterStats counts the cluster's events that this node took part in.
type clusterStats struct {
	elections  atomic.Int64
	handOffs   atomic.Int64
	isrShrinks atomic.Int64
	isrExpands atomic.Int64
}

// decided counts one of the controller's stored decisions.
func (r *replication) decided(before, after meta.Bucket) {
	if before.Leader != after.Leader {
		r.stats.elections.Add(1)
		if before.Leader != "" && slices.Contains(after.ISR, before.Leader) {
			r.stats.handOffs.Add(1) // the former leader stays in sync: it handed off
		}
	}
	r.countISR(len(before.ISR), len(after.ISR))
}

func (r *replication) countISR(before, after int) {
	switch {
	case after < before:
		r.stats.isrShrinks.Add(1)
	case after > before:
		r.stats.isrExpands.Add(1)
	}
}

// isrChange is the leaders' in-sync set change, counted once stored.
func (r *replication) isrChange(store func(cluster.BucketRef) cluster.ISRChange) func(cluster.BucketRef) cluster.ISRChange {
	return func(ref cluster.BucketRef) cluster.ISRChange {
		write := store(ref)
		return func(ctx context.Context, epoch int32, base int64, isr []string) (int64, error) {
			a, _ := r.reps.Role(ref)
			v, err := write(ctx, epoch, base, isr)
			if err == nil {
				r.countISR(len(a.ISR), len(isr))
			}
			return v, err
		}
	}
}

// clusterCollector reports the cluster's metrics; a single node reports
// none.
type clusterCollector struct{ n *Node }

func (c *clusterCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descElections, descHandOffs, descISRShrinks, descISRExpands, descUnderRepl, descOffline, descBucketsLed, descLiveMembers, descClusterMetaErr} {
		ch <- d
	}
}

func (c *clusterCollector) Collect(ch chan<- prometheus.Metric) {
	r := c.n.repl
	if r == nil {
		return
	}
	counter := func(d *prometheus.Desc, v int64) { metric(ch, d, prometheus.CounterValue, float64(v)) }
	counter(descElections, r.stats.elections.Load())
	counter(descHandOffs, r.stats.handOffs.Load())
	counter(descISRShrinks, r.stats.isrShrinks.Load())
	counter(descISRExpands, r.stats.isrExpands.Load())
	if m := r.members(); m != nil {
		gauge(ch, descLiveMembers, float64(len(m.Live())))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	all, err := r.store.AllBuckets(ctx)
	if err != nil {
		gauge(ch, descClusterMetaErr, 0)
		return
	}
	gauge(ch, descClusterMetaErr, 1)
	var under, offline, led int
	for _, b := range all {
		if len(b.ISR) < len(b.Replicas) {
			under++
		}
		if b.Leader == "" {
			offline++
		}
		if b.Leader == r.self {
			led++
		}
	}
	gauge(ch, descUnderRepl, float64(under))
	gauge(ch, descOffline, float64(offline))
	gauge(ch, descBucketsLed, float64(led))
}
