package node

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
)

// BenchmarkClusterScan: a scan of one table read through all its endpoints
// in parallel, each from its location, on a three-node cluster (six
// buckets, one replica each, spread over the nodes; planned on n1) and on
// a single node holding the same rows in six buckets, alternately in the
// same run. It reports each one's rows/s and cluster/single, the ratio of
// their throughputs (docs/benchmarks.md, "Scans across a cluster").
func BenchmarkClusterScan(b *testing.B) {
	const rows = 1_500_000
	c, _ := spreadCluster(b, rows)
	single, stop, done := startNodeWith(b, quietConfig(b.TempDir()))
	b.Cleanup(func() { stop(); <-done })
	mustExec(b, client(b, single.Addr()), "CREATE TABLE t (id BIGINT, v VARCHAR) WITH ('bucket.num' = '6')")
	for i := range 3 {
		mustExec(b, client(b, single.Addr()), fmt.Sprintf("INSERT INTO t SELECT range + %d, 'n%d' FROM range(%d)", i*rows/3, i+1, rows/3))
	}
	var one, three time.Duration
	var endpoints [2]int
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		endpoints[0] = parallelScan(b, single.Addr(), rows)
		one += time.Since(start)
		start = time.Now()
		endpoints[1] = parallelScan(b, c.nodes["n1"].n.Addr(), rows)
		three += time.Since(start)
	}
	b.ReportMetric(float64(rows*b.N)/one.Seconds(), "single_rows/s")
	b.ReportMetric(float64(rows*b.N)/three.Seconds(), "cluster_rows/s")
	b.ReportMetric(one.Seconds()/three.Seconds(), "cluster/single")
	b.Logf("endpoints: single %d, cluster %d", endpoints[0], endpoints[1])
}

// parallelScan plans SELECT * FROM t on addr, reads every endpoint from
// its location (the planning node without one) at once, and checks the
// row count; it returns the endpoints read.
func parallelScan(b *testing.B, addr string, want int) int {
	info, err := client(b, addr).Execute(context.Background(), "SELECT * FROM t")
	if err != nil {
		b.Fatal(err)
	}
	var wg sync.WaitGroup
	counts := make([]int64, len(info.Endpoint))
	errs := make([]error, len(info.Endpoint))
	for i, ep := range info.Endpoint {
		wg.Add(1)
		go func(ep *flight.FlightEndpoint) {
			defer wg.Done()
			at := addr
			if len(ep.Location) > 0 {
				at = strings.TrimPrefix(ep.Location[0].Uri, "grpc+tcp://")
			}
			counts[i], errs[i] = readAll(client(b, at), ep.Ticket)
		}(ep)
	}
	wg.Wait()
	var n int64
	for i := range counts {
		if errs[i] != nil {
			b.Fatal(errs[i])
		}
		n += counts[i]
	}
	if n != int64(want) {
		b.Fatalf("scan on %s read %d rows, want %d", addr, n, want)
	}
	return len(info.Endpoint)
}
