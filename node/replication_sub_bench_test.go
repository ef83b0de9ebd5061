package node

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// BenchmarkClusterSubscriptionLatency writes 10,000 rows a second (100 rows
// every 10 ms, each row carrying the time its call was sent) into a single
// node and into the leader of a three-node cluster in this process
// (replicas 3, min.insync.replicas 2), while a changes() subscription on
// the single node, on the cluster's leader and on a follower receives
// them; it reports each one's p50 and p99 latency, send to receipt. On a
// cluster rows are delivered once replicated (the high watermark).
func BenchmarkClusterSubscriptionLatency(b *testing.B) {
	const create = "CREATE TABLE t (id BIGINT, sent BIGINT) WITH ('bucket.num' = '1', 'bucket.replicas' = '3', 'min.insync.replicas' = '2')"
	single, leader, follower := singleAndCluster(b, create)
	const seconds = 3
	run := func(name string, writeTo *Node, readFrom ...*Node) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		total := int64(seconds * 10_000)
		lat := make([][]time.Duration, len(readFrom))
		var wg sync.WaitGroup
		ready := make(chan struct{}, len(readFrom))
		for i, n := range readFrom {
			wg.Add(1)
			go func() {
				defer wg.Done()
				cl := client(b, n.Addr())
				info, err := cl.Execute(ctx, "SELECT sent FROM changes('t', 'latest')")
				if err != nil {
					b.Error(err)
					return
				}
				rdr, err := cl.DoGet(ctx, info.Endpoint[0].Ticket)
				if err != nil {
					b.Error(err)
					return
				}
				defer rdr.Release()
				ready <- struct{}{}
				for int64(len(lat[i])) < total && rdr.Next() {
					now := time.Now().UnixMicro()
					for _, sent := range rdr.RecordBatch().Column(0).(*array.Int64).Int64Values() {
						lat[i] = append(lat[i], time.Duration(now-sent)*time.Microsecond)
					}
				}
			}()
		}
		for range readFrom {
			<-ready
		}
		cl := client(b, writeTo.Addr())
		schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "sent", Type: arrow.PrimitiveTypes.Int64}}, nil)
		tick := time.NewTicker(10 * time.Millisecond)
		for call := range seconds * 100 {
			<-tick.C
			bld := array.NewRecordBuilder(memory.DefaultAllocator, schema)
			sent := time.Now().UnixMicro()
			for i := range 100 {
				bld.Field(0).(*array.Int64Builder).Append(int64(call*100 + i))
				bld.Field(1).(*array.Int64Builder).Append(sent)
			}
			rec := bld.NewRecordBatch()
			bld.Release()
			rdr, _ := array.NewRecordReader(schema, []arrow.RecordBatch{rec})
			_, err := cl.ExecuteIngest(ctx, rdr, &flightsql.ExecuteIngestOpts{Table: "t", TableDefinitionOptions: &flightsql.TableDefinitionOptions{
				IfNotExist: flightsql.TableDefinitionOptionsTableNotExistOptionFail, IfExists: flightsql.TableDefinitionOptionsTableExistsOptionAppend}})
			rdr.Release()
			rec.Release()
			if err != nil {
				b.Fatal(err)
			}
		}
		tick.Stop()
		wg.Wait()
		for i, l := range lat {
			if len(l) == 0 {
				b.Fatalf("%s: subscriber %d received nothing", name, i)
			}
			slices.Sort(l)
			suffix := []string{"", "-follower"}[min(i, 1)]
			b.ReportMetric(float64(l[len(l)/2].Microseconds())/1000, name+suffix+"-p50-ms")
			b.ReportMetric(float64(l[len(l)*99/100].Microseconds())/1000, name+suffix+"-p99-ms")
		}
	}
	b.ResetTimer()
	for range b.N {
		run("single", single, single)
		run("cluster", leader, leader, follower)
	}
}
