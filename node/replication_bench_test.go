package node

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lakestream/lakestream/cluster"
)

// BenchmarkReplicatedIngest ingests the same batches into a single node
// and into the leader of a three-node cluster in this process (replicas 3,
// min.insync.replicas 2), in turns, and reports each one's rows per second
// and their ratio (docs/benchmarks.md). The cluster's three nodes share
// the machine's cores, which a cluster of machines does not.
func BenchmarkReplicatedIngest(b *testing.B) {
	const create = "CREATE TABLE t (id BIGINT, v VARCHAR) WITH ('bucket.num' = '1', 'bucket.replicas' = '3', 'min.insync.replicas' = '2')"
	single, leader, _ := singleAndCluster(b, create)
	ingestTurns(b, [2]string{"single-rows/s", "replicated-rows/s"}, "replicated/single",
		[2]*flightsql.Client{client(b, single.Addr()), client(b, leader.Addr())})
}

// ingestTurns ingests the same calls×rows into table t through each client
// in turns, b.N times, and reports each one's rows per second (named by
// names) and the ratio of the first's time to the second's (ratio).
func ingestTurns(b *testing.B, names [2]string, ratio string, cls [2]*flightsql.Client) {
	const rows, calls = 10_000, 20
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "v", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	bld := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	for i := range rows {
		bld.Field(0).(*array.Int64Builder).Append(int64(i))
		bld.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("value %d", i))
	}
	rec := bld.NewRecordBatch()
	bld.Release()
	defer rec.Release()
	ingest := func(cl *flightsql.Client) time.Duration {
		began := time.Now()
		for range calls {
			rdr, _ := array.NewRecordReader(schema, []arrow.RecordBatch{rec})
			_, err := cl.ExecuteIngest(context.Background(), rdr, &flightsql.ExecuteIngestOpts{Table: "t", TableDefinitionOptions: &flightsql.TableDefinitionOptions{
				IfNotExist: flightsql.TableDefinitionOptionsTableNotExistOptionFail, IfExists: flightsql.TableDefinitionOptionsTableExistsOptionAppend}})
			rdr.Release()
			if err != nil {
				b.Fatal(err)
			}
		}
		return time.Since(began)
	}
	var took [2]time.Duration
	b.ResetTimer()
	for range b.N {
		took[0] += ingest(cls[0])
		took[1] += ingest(cls[1])
	}
	b.StopTimer()
	total := float64(b.N * calls * rows)
	b.ReportMetric(total/took[0].Seconds(), names[0])
	b.ReportMetric(total/took[1].Seconds(), names[1])
	b.ReportMetric(took[0].Seconds()/took[1].Seconds(), ratio)
}

// singleAndCluster starts a single node and a three-node cluster in this
// process, creates a one-bucket table with create on both, and returns
// the single node, the bucket's leader and a follower.
func singleAndCluster(b *testing.B, create string) (single, leader, follower *Node) {
	single, stop, done := startNodeWith(b, quietConfig(b.TempDir()))
	b.Cleanup(func() { stop(); <-done })
	mustExec(b, client(b, single.Addr()), create)
	c := newTestCluster(b, "n1", "n2", "n3")
	c.exec(create)
	st, err := c.nodes["n1"].n.repl.store.Bucket(context.Background(), cluster.BucketRef{TableID: 1})
	if err != nil {
		b.Fatal(err)
	}
	leader = c.nodes[st.Leader].n
	waitUntil(b, func() bool { return leader.repl.Leads(1, 0) })
	for _, id := range st.Replicas {
		if id != st.Leader {
			follower = c.nodes[id].n
			break
		}
	}
	return single, leader, follower
}
