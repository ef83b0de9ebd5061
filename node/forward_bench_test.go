package node

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
)

// BenchmarkForwardedIngest ingests the same batches into a three-node
// cluster in this process (one bucket, replicas 3, min.insync.replicas 2)
// through the bucket's leader and through a follower, which forwards each
// call's stored batches to the leader, in turns, and reports each one's
// rows per second and their ratio (docs/cluster.md).
func BenchmarkForwardedIngest(b *testing.B) {
	const create = "CREATE TABLE t (id BIGINT, v VARCHAR) WITH ('bucket.num' = '1', 'bucket.replicas' = '3', 'min.insync.replicas' = '2')"
	_, leader, follower := singleAndCluster(b, create)
	ingestTurns(b, [2]string{"leader-rows/s", "forwarded-rows/s"}, "forwarded/leader",
		[2]*flightsql.Client{client(b, leader.Addr()), client(b, follower.Addr())})
}
