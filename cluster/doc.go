// Package cluster is the data plane of a Lakestream cluster
// (docs/cluster.md): how a bucket's log is replicated from its leader to
// its followers, when a write on the leader is acknowledged, what readers
// may see (the high watermark), and the controller's decisions (who leads
// a bucket after a failure, which replicas are in sync).
//
// # What it owns
//
//   - The replication protocol (wire.go, service.go): a follower fetches
//     its leader's stored batches from its own end offset, as bytes, and
//     asks the leader where an epoch ended to cut a divergent tail. Every
//     request carries the leader epoch the sender knows and is fenced by
//     it. The messages are byte frames in protobuf BytesValue envelopes, so
//     the service needs no generated code; their layouts are in
//     docs/format/replication.md.
//   - Forwarding (forward.go): the Forward method of the same service
//     carries a write's part to its bucket's leader, whose handler (set by
//     the node) stores it; the frames only, no table logic.
//   - The leader's side of a bucket (leader.go): each follower's end as of
//     its last fetch, the high watermark (the least end over the in-sync
//     replicas), acknowledgements that wait for it, and the in-sync set's
//     changes that the leader proposes: a follower that has caught up joins,
//     one that has not caught up for Config.ReplicaLagMax leaves.
//   - The follower's side (follower.go): truncation to the leader's epoch
//     history, then fetching and appending the same bytes at the same
//     offsets, and the high watermark the leader reports.
//   - The controller's decisions (controller.go): pure functions of the
//     buckets' state in the metadata store and the live members — a new
//     leader from the in-sync replicas, with a higher epoch, when the
//     leader is gone; failed members out of the in-sync set.
//
// Decisions are written to the metadata store (cluster/meta) only by
// compare-and-set on a bucket's version, so a node that acts on a stale
// view (a partitioned former leader) has its writes refused; gossip
// (membership) says only who is alive.
//
// cluster imports columnarlog (the log it replicates), cluster/meta and
// membership, and nothing above them: it knows nothing of SQL, tables or
// the lake.
package cluster
