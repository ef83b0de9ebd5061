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
)

// BenchmarkForwardedIngest ingests the same batches into a three-node
// cluster in this process (one bucket, replicas 3, min.insync.replicas 2)
// through the bucket's leader and through a follower, which forwards each
// call's stored batches to the leader, in turns, and reports each one's
// rows per second and their ratio (docs/cluster.md).
func BenchmarkForwardedIngest(b *testing.B) {
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
	const create = "CREATE TABLE t (id BIGINT, v VARCHAR) WITH ('bucket.num' = '1', 'bucket.replicas' = '3', 'min.insync.replicas' = '2')"
	_, leader, follower := singleAndCluster(b, create)
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
	leaderCl, followerCl := client(b, leader.Addr()), client(b, follower.Addr())
	var direct, forwarded time.Duration
	b.ResetTimer()
	for range b.N {
		direct += ingest(leaderCl)
		forwarded += ingest(followerCl)
	}
	b.StopTimer()
	total := float64(b.N * calls * rows)
	b.ReportMetric(total/direct.Seconds(), "leader-rows/s")
	b.ReportMetric(total/forwarded.Seconds(), "forwarded-rows/s")
	b.ReportMetric(direct.Seconds()/forwarded.Seconds(), "forwarded/leader")
}
