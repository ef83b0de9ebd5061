package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/lakestream/lakestream/internal/proc"
	"github.com/lakestream/lakestream/node"
)

// The cluster workload: a three-node Lakestream cluster in this process
// (node.Start with a ClusterConfig each: gossip on loopback, the "local"
// failure-detector timing, one shared SQLite metadata store, each node its
// own data dir and catalog, every DDL run on all three in the same order
// so that table ids agree), against the run's single node and against
// Kafka on three brokers (kafka3: three KRaft processes, each broker and
// controller, kafka.go).
//
// Tables have one bucket, bucket.replicas 3, min.insync.replicas 2: a
// node accepts writes only for the buckets it leads, so the writers talk
// to the bucket's leader, found in lakestream.buckets. The single node's
// table has one bucket too, and the Kafka topics one partition,
// replication factor 3, min.insync.replicas 2, acks=all: one leader on
// each side, copying to two followers.
//
//   - ingest: Config.Rows rows in batches of each Config.BatchRows, by
//     Config.Writers writers, on the single node, the cluster's leader and
//     Kafka, run by run (as the ingest workload): rows/s and the ratios
//     cluster ÷ single (target ≥ 0.5) and cluster ÷ Kafka (target ≥ 2).
//   - subscribe: Config.Rate rows/s in batches of Config.SubscribeBatchRows
//     for Config.Duration, as the subscribe workload, with the subscriber
//     on the single node, on the cluster's leader, on a follower, and a
//     Kafka consumer (which reads from the partition's leader): rows are
//     delivered once replicated (the high watermark) on both sides. p99
//     (target ≤ 10 ms and below Kafka's) from the ack and from the call's
//     start; the single node's figures tell what replication adds.

// clusterNodes is the size of the cluster the workload starts.
const clusterNodes = 3

// lakeCluster is the workload's running cluster.
type lakeCluster struct {
	ids   []string
	addrs []string
	cls   []*flightsql.Client // one per node, for DDL and lookups
	stops []func() error
	dir   string
}

// startLakeCluster starts clusterNodes nodes in this process and waits
// until each sees all of them alive.
func startLakeCluster(ctx context.Context, cfg Config, prog *progress) (*lakeCluster, error) {
	dir, err := os.MkdirTemp("", "lakestream-bench-cluster-")
	if err != nil {
		return nil, err
	}
	c := &lakeCluster{dir: dir}
	meta := "sqlite://" + filepath.Join(dir, "meta.db")
	var nodes []*node.Node
	var seed string
	for i := range clusterNodes {
		id := fmt.Sprintf("n%d", i+1)
		gossip, err := proc.FreeLoopbackAddr()
		if err != nil {
			return nil, errors.Join(err, c.stop())
		}
		cc := node.ClusterConfig{NodeID: id, Gossip: gossip, GossipTiming: "local", Meta: meta, LeaveTimeout: time.Second}
		if seed == "" {
			seed = gossip
		} else {
			cc.Join = []string{seed}
		}
		n, err := node.Start(ctx, node.Config{DataDir: filepath.Join(dir, id), Listen: "127.0.0.1:0", HTTP: "off", Sync: cfg.Sync,
			Tiering: node.TieringManual, Version: "bench", Logger: slog.New(slog.DiscardHandler), Cluster: cc})
		if err != nil {
			return nil, errors.Join(fmt.Errorf("start cluster node %s: %w", id, err), c.stop())
		}
		serveCtx, stopServe := context.WithCancel(context.Background())
		served := make(chan error, 1)
		go func() { served <- n.Serve(serveCtx) }()
		c.stops = append(c.stops, func() error { stopServe(); return <-served })
		cl, err := dial(n.Addr())
		if err != nil {
			return nil, errors.Join(err, c.stop())
		}
		c.stops = append(c.stops, cl.Close)
		c.ids, c.addrs, c.cls = append(c.ids, id), append(c.addrs, n.Addr()), append(c.cls, cl)
		nodes = append(nodes, n)
	}
	prog.logf("cluster of %d nodes on %s", clusterNodes, strings.Join(c.addrs, ", "))
	err = waitFor(ctx, time.Minute, "every node sees the whole cluster", func() (bool, error) {
		for _, n := range nodes {
			if len(n.Members().Live()) != clusterNodes {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return nil, errors.Join(err, c.stop())
	}
	return c, nil
}

// stop stops the nodes, the last started first, and removes their data.
func (c *lakeCluster) stop() error {
	var errs []error
	for i := len(c.stops) - 1; i >= 0; i-- {
		errs = append(errs, c.stops[i]())
	}
	return errors.Join(append(errs, os.RemoveAll(c.dir))...)
}

// clusterTableDDL is the cluster workload's table: the event columns, one
// bucket, three replicas, two in sync to acknowledge.
func clusterTableDDL(name, codec string, replicated bool) string {
	opts := fmt.Sprintf("'bucket.num'='1', 'bucket.key'='id', 'log.compression'='%s', 'datalake.enabled'='false'", codec)
	if replicated {
		opts += fmt.Sprintf(", 'bucket.replicas'='%d', 'min.insync.replicas'='2'", clusterNodes)
	}
	return fmt.Sprintf("CREATE TABLE %s %s WITH (%s)", name, eventsDDL, opts)
}

// exec runs a statement on every node, in the same order on each.
func (c *lakeCluster) exec(ctx context.Context, sql string) error {
	for i, cl := range c.cls {
		if _, err := cl.ExecuteUpdate(ctx, sql); err != nil {
			return fmt.Errorf("%s on %s: %w", sql, c.ids[i], err)
		}
	}
	return nil
}

// createTable creates a replicated table and waits until its bucket has a
// leader that leads it, followers that follow it, and all three replicas
// in sync; it returns the leader's index and a follower's.
func (c *lakeCluster) createTable(ctx context.Context, name, codec string) (leader, follower int, err error) {
	if err := c.exec(ctx, clusterTableDDL(name, codec, true)); err != nil {
		return 0, 0, err
	}
	err = waitFor(ctx, 30*time.Second, "the bucket of "+name+" has a leader and three in-sync replicas", func() (bool, error) {
		leader, follower = -1, -1
		for i, cl := range c.cls {
			role, isr, err := bucketRole(ctx, cl, name)
			if err != nil {
				return false, err
			}
			switch {
			case role == "leader" && isr == clusterNodes:
				leader = i
			case role == "follower":
				follower = i
			}
		}
		return leader >= 0 && follower >= 0, nil
	})
	return leader, follower, err
}

// bucketRole is a node's local_role of table's bucket in
// lakestream.buckets, and the size of the in-sync set it knows ("" and 0
// while the node does not know the table yet).
func bucketRole(ctx context.Context, cl *flightsql.Client, table string) (role string, isr int, err error) {
	info, err := cl.Execute(ctx, "SELECT table_name, local_role, isr FROM lakestream.buckets")
	if err != nil {
		return "", 0, fmt.Errorf("lakestream.buckets: %w", err)
	}
	for _, ep := range info.GetEndpoint() {
		rdr, err := cl.DoGet(ctx, ep.GetTicket())
		if err != nil {
			return "", 0, err
		}
		for rdr.Next() {
			rec := rdr.RecordBatch()
			names, roles := rec.Column(0).(*array.String), rec.Column(1).(*array.String)
			sets := rec.Column(2).(*array.List)
			for i := range int(rec.NumRows()) {
				// table_name is qualified by its database.
				if n := names.Value(i); names.IsValid(i) && (n == table || strings.HasSuffix(n, "."+table)) {
					start, end := sets.ValueOffsets(i)
					role, isr = roles.Value(i), int(end-start)
				}
			}
		}
		err = rdr.Err()
		rdr.Release()
		if err != nil {
			return "", 0, err
		}
	}
	return role, isr, nil
}

// waitFor polls cond every 20 ms until it holds, fails, or timeout.
func waitFor(ctx context.Context, timeout time.Duration, what string, cond func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	for {
		ok, err := cond()
		switch {
		case err != nil:
			return fmt.Errorf("wait until %s: %w", what, err)
		case ok:
			return nil
		case time.Now().After(deadline):
			return fmt.Errorf("not yet after %s: %s", timeout, what)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond): // polling servers, not synchronising goroutines
		}
	}
}

func runCluster(ctx context.Context, e *env) (*WorkloadReport, error) {
	cfg := e.cfg
	w := &WorkloadReport{Name: "cluster", About: fmt.Sprintf(
		"a %d-node cluster in this process (one bucket, bucket.replicas %d, min.insync.replicas 2; writers on its leader) "+
			"against the single node (one bucket); ingest: %s rows by %d writers, one ExecuteIngest per batch; "+
			"subscribe: %s rows/s in %d-row batches, changes() on the leader and on a follower",
		clusterNodes, clusterNodes, human(float64(cfg.Rows)), cfg.Writers, human(float64(cfg.Rate)), cfg.SubscribeBatchRows)}
	e.prog.logf("starting a %d-node cluster", clusterNodes)
	c, err := startLakeCluster(ctx, cfg, e.prog)
	if err != nil {
		return nil, err
	}
	err = errors.Join(clusterIngest(ctx, e, c, w), clusterSubscribe(ctx, e, c, w))
	if err = errors.Join(err, c.stop()); err != nil {
		return nil, err
	}
	if k := e.base.kafka3; k != nil {
		w.About += fmt.Sprintf("; Kafka %s on 3 KRaft brokers (each broker and controller): topics of 1 partition, replication factor 3, "+
			"min.insync.replicas 2, producers acks=all, flush.messages=1 with sync=always", k.version)
	}
	e.base.reportMissing(w, "kafka3")
	return w, nil
}

// The systems of the cluster workload's figures.
const (
	systemSingle   = "lakestream-single"
	systemCluster  = "lakestream-cluster"
	systemFollower = "lakestream-cluster-follower"
)

// clusterIngest measures ingest into the single node, the cluster and
// Kafka on three brokers, run by run, per batch size.
func clusterIngest(ctx context.Context, e *env, c *lakeCluster, w *WorkloadReport) error {
	n := e.cfg.Writers
	singleCls, closeSingle, err := dialN(e.nodeAddr, n)
	if err != nil {
		return err
	}
	defer closeSingle()
	// The leader of each new table is placed anew: writers to every node,
	// the ones of the table's leader used.
	nodeCls := make([][]*flightsql.Client, len(c.addrs))
	for i, addr := range c.addrs {
		cls, closeCls, err := dialN(addr, n)
		if err != nil {
			return err
		}
		defer closeCls()
		nodeCls[i] = cls
	}
	sides := []ingestSide{
		{system: systemSingle, ingest: func(ctx context.Context, recs []arrow.RecordBatch, label string) (time.Duration, error) {
			e.tables++
			table := fmt.Sprintf("single_%d", e.tables)
			if _, err := e.node.ExecuteUpdate(ctx, clusterTableDDL(table, e.cfg.Codec, false)); err != nil {
				return 0, err
			}
			e.prog.step(totalRows(recs), "rows", "%s: %s", label, systemSingle)
			d, err := ingestAll(ctx, singleCls, table, recs, e.prog)
			if err != nil {
				return 0, err
			}
			if err := checkRowsOn(ctx, e.node, table, totalRows(recs)); err != nil {
				return 0, err
			}
			return d, e.dropTable(ctx, table)
		}},
		{system: systemCluster, atLeast: 0.5, ingest: func(ctx context.Context, recs []arrow.RecordBatch, label string) (time.Duration, error) {
			e.tables++
			table := fmt.Sprintf("cluster_%d", e.tables)
			leader, _, err := c.createTable(ctx, table, e.cfg.Codec)
			if err != nil {
				return 0, err
			}
			e.prog.step(totalRows(recs), "rows", "%s: %s (leader %s)", label, systemCluster, c.ids[leader])
			d, err := ingestAll(ctx, nodeCls[leader], table, recs, e.prog)
			if err != nil {
				return 0, err
			}
			if err := checkRowsOn(ctx, c.cls[leader], table, totalRows(recs)); err != nil {
				return 0, err
			}
			return d, c.exec(ctx, "DROP TABLE "+table)
		}},
	}
	if k := e.base.kafka3; k != nil {
		prods, closeProds, err := k.producers(n)
		if err != nil {
			return err
		}
		defer closeProds()
		sides = append(sides, ingestSide{system: baselineSystems["kafka3"], ingest: func(ctx context.Context, recs []arrow.RecordBatch, label string) (time.Duration, error) {
			return kafkaIngestOn(ctx, e, k, prods, recs, label)
		}})
	}
	for _, bs := range e.cfg.BatchRows {
		if err := clusterIngestBatchSize(ctx, e, w, bs, sides); err != nil {
			return err
		}
	}
	return nil
}

// clusterIngestBatchSize measures one batch size on every side, rotating
// which goes first, and reports the cluster's ratios to the others.
func clusterIngestBatchSize(ctx context.Context, e *env, w *WorkloadReport, bs int, sides []ingestSide) error {
	cfg := e.cfg
	recs := batches(cfg.Rows, bs)
	defer release(recs)
	group := fmt.Sprintf("ingest, %s-row batches, %d writers", human(float64(bs)), cfg.Writers)
	rows := float64(totalRows(recs))
	perSec := make([][]float64, len(sides))
	for run := 1; run <= cfg.Runs; run++ {
		for j := range sides {
			si := (run - 1 + j) % len(sides)
			d, err := sides[si].ingest(ctx, recs, fmt.Sprintf("cluster %s, run %d/%d", group, run, cfg.Runs))
			if err != nil {
				return fmt.Errorf("%s: %w", sides[si].system, err)
			}
			perSec[si] = append(perSec[si], rows/d.Seconds())
		}
	}
	var line []string
	for si, s := range sides {
		w.figure(group, s.system, "throughput", "rows/s", perSec[si])
		line = append(line, fmt.Sprintf("%s %s rows/s", s.system, human(summarize(perSec[si]).Median)))
	}
	w.ratio(group, systemCluster, systemSingle, "throughput", "higher is better; target ≥ 0.5 (issue 17)", perSec[1], perSec[0], 0.5, 0)
	if len(sides) > 2 {
		w.ratio(group, systemCluster, sides[2].system, "throughput", "higher is better; target ≥ 2 (issue 17)", perSec[1], perSec[2], 2, 0)
	}
	e.prog.logf("cluster %s: %s", group, strings.Join(line, ", "))
	return nil
}

// kafkaIngestOn produces recs into a fresh topic of k, checks its record
// count and deletes it.
func kafkaIngestOn(ctx context.Context, e *env, k *kafkaServer, prods []*kgo.Client, recs []arrow.RecordBatch, label string) (time.Duration, error) {
	e.tables++
	topic := fmt.Sprintf("ingest_%d", e.tables)
	if err := k.createTopic(ctx, topic); err != nil {
		return 0, err
	}
	rows := totalRows(recs)
	e.prog.step(rows, "rows", "%s: %s", label, baselineSystems["kafka3"])
	d, err := kafkaIngestAll(ctx, prods, topic, recs, e.prog)
	if err != nil {
		return 0, err
	}
	if err := k.checkRecords(ctx, topic, rows); err != nil {
		return 0, err
	}
	return d, k.deleteTopic(ctx, topic)
}

// clusterSubscribe measures subscription latency at Config.Rate on the
// cluster, with the subscriber on the leader and on a follower, and on
// Kafka's three brokers, run by run.
func clusterSubscribe(ctx context.Context, e *env, c *lakeCluster, w *WorkloadReport) error {
	cfg := e.cfg
	nodeCls := make([][]*flightsql.Client, len(c.addrs))
	for i, addr := range c.addrs {
		cls, closeCls, err := dialN(addr, cfg.Writers+1)
		if err != nil {
			return err
		}
		defer closeCls()
		nodeCls[i] = cls
	}
	singleCls, closeSingle, err := dialN(e.nodeAddr, cfg.Writers+1)
	if err != nil {
		return err
	}
	defer closeSingle()
	feeds := []subscribeSide{
		&lakeFeed{e: e, cls: singleCls, name: systemSingle, create: func(ctx context.Context) (string, error) {
			e.tables++
			table := fmt.Sprintf("ssub_%d", e.tables)
			_, err := e.node.ExecuteUpdate(ctx, clusterTableDDL(table, e.cfg.Codec, false))
			return table, err
		}},
		&clusterFeed{e: e, c: c, cls: nodeCls, system_: systemCluster},
		&clusterFeed{e: e, c: c, cls: nodeCls, system_: systemFollower, onFollower: true},
	}
	if k := e.base.kafka3; k != nil {
		prods, closeProds, err := k.producers(cfg.Writers)
		if err != nil {
			return err
		}
		defer closeProds()
		feeds = append(feeds, &kafkaFeed{k: k, prods: prods, name: baselineSystems["kafka3"]})
	}
	group := fmt.Sprintf("subscribe, %s rows/s", human(float64(cfg.Rate)))
	series := make([][][]float64, len(feeds)) // feed, latencySeries, run
	for fi := range feeds {
		series[fi] = make([][]float64, len(latencySeries))
	}
	for run := 1; run <= cfg.Runs; run++ {
		for j := range feeds {
			fi := (run - 1 + j) % len(feeds)
			r, err := measureSide(ctx, e, feeds[fi], cfg.Rate, cfg.Duration, fmt.Sprintf("run %d/%d", run, cfg.Runs))
			if err != nil {
				return fmt.Errorf("%s: %w", feeds[fi].system(), err)
			}
			if !r.sustainable() {
				w.Notes = append(w.Notes, fmt.Sprintf("%s run %d at %s rows/s was not sustained: %s rows/s achieved, last row %s after the last ack",
					feeds[fi].system(), run, human(float64(cfg.Rate)), human(r.achieved), r.drain.Round(time.Millisecond)))
			}
			for i, s := range latencySeries {
				series[fi][i] = append(series[fi][i], s.pick(r))
			}
		}
	}
	for fi, f := range feeds {
		for i, s := range latencySeries {
			w.figure(group, f.system(), s.metric, "ms", series[fi][i])
		}
		e.prog.logf("cluster %s %s: p50 %s ms, p99 %s ms (from the call's start: p50 %s ms, p99 %s ms)", group, f.system(),
			trim(summarize(series[fi][0]).Median), trim(summarize(series[fi][1]).Median),
			trim(summarize(series[fi][4]).Median), trim(summarize(series[fi][5]).Median))
	}
	if len(feeds) > 3 {
		for fi := 1; fi < 3; fi++ {
			for i, s := range latencySeries {
				if s.metric == "p99" || s.metric == "p99 from call" {
					w.ratio(group, feeds[fi].system(), feeds[3].system(), s.metric, "lower is better; target < 1 (issue 17)",
						series[fi][i], series[3][i], 0, 0)
				}
			}
		}
	}
	for fi := 1; fi < 3; fi++ {
		w.Notes = append(w.Notes, fmt.Sprintf("target (issue 17): p99 <= 10 ms at %s rows/s; %s: %s ms from the ack, %s ms from the call's start",
			human(float64(cfg.Rate)), feeds[fi].system(), trim(summarize(series[fi][1]).Median), trim(summarize(series[fi][5]).Median)))
	}
	return nil
}

// clusterFeed writes to a new table's leader and subscribes on the leader,
// or on a follower with onFollower.
type clusterFeed struct {
	e          *env
	c          *lakeCluster
	cls        [][]*flightsql.Client // per node: a subscriber, then the writers
	system_    string
	onFollower bool
	leader     int // of the open stream
}

func (f *clusterFeed) system() string { return f.system_ }
func (f *clusterFeed) writers() int   { return len(f.cls[0]) - 1 }

func (f *clusterFeed) open(ctx context.Context, sub *subscriber) (string, error) {
	f.e.tables++
	table := fmt.Sprintf("csub_%d", f.e.tables)
	leader, follower, err := f.c.createTable(ctx, table, f.e.cfg.Codec)
	if err != nil {
		return "", err
	}
	f.leader = leader
	reader := f.cls[leader][0]
	if f.onFollower {
		reader = f.cls[follower][0]
	}
	info, err := reader.Execute(ctx, fmt.Sprintf("SELECT id, _bucket, _offset FROM changes('%s', 'latest')", table))
	if err != nil {
		return "", err
	}
	if n := len(info.GetEndpoint()); n != 1 {
		return "", fmt.Errorf("changes(%s): %d endpoints, want 1", table, n)
	}
	ticket := info.GetEndpoint()[0].GetTicket()
	sub.run(ctx, func(ctx context.Context) error {
		rdr, err := reader.DoGet(ctx, ticket)
		if err != nil {
			return err
		}
		defer rdr.Release()
		return readChanges(rdr, sub)
	})
	return table, nil
}

func (f *clusterFeed) send(ctx context.Context, w int, table string, rec arrow.RecordBatch) error {
	return ingestOne(ctx, f.cls[f.leader][1+w], table, rec)
}

func (f *clusterFeed) drop(ctx context.Context, table string) error {
	return f.c.exec(ctx, "DROP TABLE "+table)
}

// checkRowsOn checks that a table holds want rows, as checkRows does, on
// the node of cl.
func checkRowsOn(ctx context.Context, cl *flightsql.Client, table string, want int64) error {
	info, err := cl.Execute(ctx, "SELECT * FROM "+table)
	if err != nil {
		return fmt.Errorf("count %s: %w", table, err)
	}
	if got := info.GetTotalRecords(); got != want {
		return fmt.Errorf("%s holds %d rows after ingest, want %d", table, got, want)
	}
	return nil
}
