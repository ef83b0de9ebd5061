package node

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
)

// BenchmarkDistributedGroupBy runs one GROUP BY over the same rows on a
// single node and on node n1 of a three-node cluster (in this process)
// over which the table's six buckets are spread with bucket.replicas 1,
// so that n1 reads about two thirds of the rows from n2 and n3 (docs/cluster.md,
// "Distributed queries"). It reports each one's median time, their ratio,
// and the process's CPU time per row for each (the cluster's is the sum
// over its three nodes, which share the process). Rows:
// LAKESTREAM_BENCH_ROWS (default 10,000,000). With LAKESTREAM_BENCH_CACHE=off
// every node runs without its column cache, so that each query decodes
// every batch (and n1 is sent every remote batch whole).
func BenchmarkDistributedGroupBy(b *testing.B) {
	cache := os.Getenv("LAKESTREAM_BENCH_CACHE")
	edit := func(cfg *Config) { cfg.Cache = cache }
	rows := int64(10_000_000)
	if s := os.Getenv("LAKESTREAM_BENCH_ROWS"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			b.Fatal(err)
		}
		rows = n
	}
	const create = "CREATE TABLE t (k BIGINT, g BIGINT, v DOUBLE) WITH ('bucket.num' = '6', 'bucket.replicas' = '1')"
	const query = "SELECT g, count(*), sum(v) FROM t GROUP BY g"
	const chunk = 1_000_000
	insert := func(cl *flightsql.Client, lo, hi int64) {
		for ; lo < hi; lo += chunk {
			mustExec(b, cl, fmt.Sprintf("INSERT INTO t SELECT range, range %% 1000, range * 0.5 FROM range(%d, %d)", lo, min(hi, lo+chunk)))
		}
	}
	scfg := quietConfig(b.TempDir())
	edit(&scfg)
	single, stop, done := startNodeWith(b, scfg)
	b.Cleanup(func() { stop(); <-done })
	singleCl := client(b, single.Addr())
	mustExec(b, singleCl, create)
	insert(singleCl, 0, rows)

	c := newTestClusterWith(b, "sqlite://"+filepath.Join(b.TempDir(), "meta.db"), edit, "n1", "n2", "n3")
	c.exec(create)
	led := c.waitLeaders(1)
	var ids []string
	for id := range led {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var at int64
	for i, id := range ids {
		share := rows * int64(led[id]) / 6
		if i == len(ids)-1 {
			share = rows - at
		}
		insert(client(b, c.nodes[id].n.Addr()), at, at+share)
		at += share
	}
	local := int64(0)
	for _, bk := range c.tableBuckets("n1", 1) {
		if bk.Leader == "n1" {
			local++
		}
	}
	clusterCl := client(b, c.nodes["n1"].n.Addr())
	run := func(cl *flightsql.Client) (time.Duration, time.Duration) {
		cpu0 := processCPU()
		began := time.Now()
		if n := countRows(b, cl, query); n != 1000 {
			b.Fatalf("%d groups, want 1000", n)
		}
		return time.Since(began), processCPU() - cpu0
	}
	run(singleCl) // warm: the column cache, DuckDB's first query
	run(clusterCl)
	var one, three, oneCPU, threeCPU []time.Duration
	b.ResetTimer()
	for range max(b.N, 5) {
		d, c := run(singleCl)
		one, oneCPU = append(one, d), append(oneCPU, c)
		d, c = run(clusterCl)
		three, threeCPU = append(three, d), append(threeCPU, c)
	}
	b.StopTimer()
	med := func(ds []time.Duration) time.Duration {
		slices.Sort(ds)
		return ds[len(ds)/2]
	}
	b.ReportMetric(med(one).Seconds()*1e3, "single-ms")
	b.ReportMetric(med(three).Seconds()*1e3, "3node-ms")
	b.ReportMetric(med(three).Seconds()/med(one).Seconds(), "3node/single")
	b.ReportMetric(float64(med(oneCPU).Nanoseconds())/float64(rows), "single-cpu-ns/row")
	b.ReportMetric(float64(med(threeCPU).Nanoseconds())/float64(rows), "3node-cpu-ns/row")
	b.ReportMetric(float64(6-local)/6, "remote-buckets-share")
	b.ReportMetric(float64(dirBytes(b, filepath.Join(scfg.DataDir, "tables")))/float64(rows), "stored-bytes/row")
}

// dirBytes is the size of the files under dir.
func dirBytes(b *testing.B, dir string) int64 {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err == nil {
			n += info.Size()
		}
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	return n
}

// processCPU is the CPU time (user and system) this process used so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// countRows runs a query and counts its rows.
func countRows(b *testing.B, cl *flightsql.Client, sql string) int64 {
	ctx := context.Background()
	info, err := cl.Execute(ctx, sql)
	if err != nil {
		b.Fatal(err)
	}
	var n int64
	for _, ep := range info.Endpoint {
		rdr, err := cl.DoGet(ctx, ep.Ticket)
		if err != nil {
			b.Fatal(err)
		}
		for rdr.Next() {
			n += rdr.RecordBatch().NumRows()
		}
		err = rdr.Err()
		rdr.Release()
		if err != nil {
			b.Fatal(err)
		}
	}
	return n
}
