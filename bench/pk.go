package bench

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/jackc/pgx/v5"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// The primary-key workload (docs/benchmarks.md, "Primary-key tables"),
// through the SQL/Flight surface only:
//
//  1. upsert ingest: Config.PKRows rows over Config.PKKeys keys
//     (pk_data.go), Config.PKBatchRows-row batches, Config.Writers writers
//     (ADBC bulk ingest, one batch per call) into a table with PRIMARY KEY
//     (id), vs PostgreSQL's staging COPY + INSERT … ON CONFLICT
//     (pk_pg.go); the node's state is checked (count = keys) after each;
//  2. point lookups: Config.PKClients clients, each its own connection, a
//     prepared SELECT * FROM t WHERE id = ? (prepared once, then bind one
//     key, execute, fetch: what ADBC does), for Config.PKDuration each run:
//     lookups/s and p50/p99, and the RPCs each lookup took, counted by a
//     client interceptor; vs PostgreSQL's prepared lookup (its socket
//     writes per lookup counted) and vs the floor, a no-op unary RPC to
//     the ceiling;
//  3. batch lookups: the same prepared statement bound to a parameter batch
//     of Config.PKBatchKeys distinct keys per call, keys/s, vs PostgreSQL's
//     WHERE id = ANY($1);
//  4. an aggregate over the state, SELECT kind, count(*), sum(amount) …
//     GROUP BY kind, vs DuckDB on a native table of the same final rows
//     (and PostgreSQL on its upserted table);
//  5. the key index's size on disk (the table's kv/ directory in the node's
//     data dir) per million keys, and the process's RSS.
//
// Latencies are in ms, as the other workloads' (the HTML latency chart).
//
// Fluss is reported missing: the bench's Fluss driver (bench/fluss) drives
// log tables only.

const pkQuery = "SELECT kind, count(*) AS n, sum(amount) AS total FROM %s GROUP BY kind ORDER BY kind"

// pkFlussMissing is why the pk workload has no Fluss figure.
const pkFlussMissing = "not measured by the pk workload: the bench's Fluss driver (bench/fluss/Driver.java) writes and reads log tables only; " +
	"it has no primary-key table upsert writer or lookup client"

func runPK(ctx context.Context, e *env) (*WorkloadReport, error) {
	cfg := e.cfg
	w := &WorkloadReport{Name: "pk", About: fmt.Sprintf(
		"primary-key table (%d buckets): upsert ingest of %s rows over %s keys in %s-row batches by %d writers (ADBC bulk ingest); "+
			"point lookups by %d clients (Flight SQL prepared SELECT * … WHERE id = ?, bind one key, execute, fetch); "+
			"batch lookups of %s keys per call (the prepared lookup bound to a parameter batch); GROUP BY over the state",
		tableBuckets, human(float64(cfg.PKRows)), human(float64(cfg.PKKeys)), human(float64(cfg.PKBatchRows)), cfg.Writers,
		cfg.PKClients, human(float64(cfg.PKBatchKeys)))}
	ks := newPKKeyspace(cfg.PKKeys)
	lists := pkWrites(ks, cfg.PKRows, cfg.PKBatchRows, cfg.Writers)
	defer func() {
		for _, l := range lists {
			release(l)
		}
	}()
	var pgWrites atomic.Int64 // the socket writes of the PostgreSQL connections
	table, pgTable, pgConns, closePG, err := pkUpserts(ctx, e, w, lists, &pgWrites)
	defer closePG()
	if err != nil {
		return nil, fmt.Errorf("upsert: %w", err)
	}
	if err := pkFootprint(e, w, "after the upserts"); err != nil {
		return nil, err
	}
	if pgConns != nil {
		if err := pgExec(ctx, pgConns[0], "VACUUM ANALYZE "+pgTable); err != nil {
			return nil, err
		}
		if err := pgPrepareLookups(ctx, pgConns, pgTable); err != nil {
			return nil, err
		}
	}
	if err := pkPointLookups(ctx, e, w, ks, table, pgConns, pgWrites.Load); err != nil {
		return nil, fmt.Errorf("point lookups: %w", err)
	}
	if err := pkBatchLookups(ctx, e, w, ks, table, pgConns); err != nil {
		return nil, fmt.Errorf("batch lookups: %w", err)
	}
	if err := pkAggregate(ctx, e, w, ks, table, pgConns, pgTable); err != nil {
		return nil, fmt.Errorf("aggregate: %w", err)
	}
	if err := pkFootprint(e, w, "after the lookups and the aggregate"); err != nil {
		return nil, err
	}
	e.base.reportMissing(w, "postgres")
	if e.base.fluss == nil && e.base.why["fluss"] != "" {
		w.missing(pkFlussTitle, pkFlussMissing+" (and Fluss itself: "+e.base.why["fluss"]+")")
	} else {
		w.missing(pkFlussTitle, pkFlussMissing)
	}
	return w, e.dropTable(ctx, table)
}

// pkFlussTitle names Fluss's primary-key table in the missing entry.
const pkFlussTitle = "Apache Fluss (primary-key table, upsert writer and lookups)"

// pkCreate creates a primary-key table of the event columns, keyed and
// bucketed by id.
func (e *env) pkCreate(ctx context.Context) (string, error) {
	e.tables++
	name := fmt.Sprintf("pk_%d", e.tables)
	ddl := fmt.Sprintf("CREATE TABLE %s (id BIGINT NOT NULL, amount DOUBLE, kind VARCHAR, ts TIMESTAMPTZ, PRIMARY KEY (id)) "+
		"WITH ('bucket.num'='%d', 'log.compression'='%s', 'datalake.enabled'='false')", name, tableBuckets, e.cfg.Codec)
	if _, err := e.node.ExecuteUpdate(ctx, ddl); err != nil {
		return "", fmt.Errorf("%s: %w", ddl, err)
	}
	return name, nil
}

// pkUpserts measures Runs upsert runs of each system, each into a fresh
// table, rotating which goes first; the last run's tables stay for the
// lookups. With PostgreSQL running, pgConns are its connections
// (their socket writes counted in pgWrites) and pgTable its table.
func pkUpserts(ctx context.Context, e *env, w *WorkloadReport, lists [][]arrow.RecordBatch, pgWrites *atomic.Int64) (table, pgTable string, pgConns []*pgx.Conn, closePG func(), err error) {
	cfg := e.cfg
	closePG = func() {}
	cls, closeCls, err := dialN(e.nodeAddr, cfg.Writers)
	if err != nil {
		return "", "", nil, closePG, err
	}
	defer closeCls()
	type side struct {
		system string
		run    func(last bool) (time.Duration, error)
	}
	sides := []side{{"lakestream", func(last bool) (time.Duration, error) {
		t, err := e.pkCreate(ctx)
		if err != nil {
			return 0, err
		}
		d, err := sendLists(ctx, cls, lists, e.prog, func(ctx context.Context, cl *flightsql.Client, rec arrow.RecordBatch) error {
			return ingestOne(ctx, cl, t, rec)
		})
		if err != nil {
			return 0, err
		}
		n, err := countRows(ctx, e, t)
		if err != nil {
			return 0, err
		}
		if n != int64(cfg.PKKeys) {
			return 0, fmt.Errorf("%s holds %d rows after the upserts, want %d (one per key)", t, n, cfg.PKKeys)
		}
		if last {
			table = t
			return d, nil
		}
		return d, e.dropTable(ctx, t)
	}}}
	if pg := e.base.pg; pg != nil {
		conns, closeConns, err := pg.connectCounting(ctx, max(cfg.Writers, cfg.PKClients), pgWrites)
		if err != nil {
			return "", "", nil, closePG, err
		}
		closePG, pgConns = closeConns, conns
		sides = append(sides, side{baselineSystems["postgres"], func(last bool) (time.Duration, error) {
			e.tables++
			t := fmt.Sprintf("pk_%d", e.tables)
			d, err := pgUpsert(ctx, e, conns[:cfg.Writers], t, lists)
			if err != nil {
				return 0, err
			}
			if err := pgCheckRows(ctx, conns[0], t, int64(cfg.PKKeys)); err != nil {
				return 0, err
			}
			if last {
				pgTable = t
				return d, nil
			}
			return d, pgExec(ctx, conns[0], "DROP TABLE "+t)
		}})
		w.About += fmt.Sprintf("; PostgreSQL %s: per batch one transaction, COPY into a temporary staging table then INSERT … ON CONFLICT (id) DO UPDATE", pg.version)
	}
	_, rows := countAll(lists)
	group := fmt.Sprintf("upsert %s rows over %s keys, %s-row batches, %d writers", human(float64(rows)), human(float64(cfg.PKKeys)),
		human(float64(cfg.PKBatchRows)), cfg.Writers)
	secs := make([][]float64, len(sides))
	for run := 1; run <= cfg.Runs; run++ {
		for j := range sides {
			si := (run - 1 + j) % len(sides)
			e.prog.step(rows, "rows", "pk upsert, run %d/%d: %s", run, cfg.Runs, sides[si].system)
			d, err := sides[si].run(run == cfg.Runs)
			if err != nil {
				return "", "", pgConns, closePG, fmt.Errorf("%s: %w", sides[si].system, err)
			}
			secs[si] = append(secs[si], d.Seconds())
		}
	}
	var line []string
	for si, s := range sides {
		tput := make([]float64, len(secs[si]))
		for i, sec := range secs[si] {
			tput[i] = float64(rows) / sec
		}
		secs[si] = tput
		w.figure(group, s.system, "throughput", "rows/s", tput)
		line = append(line, fmt.Sprintf("%s %s rows/s", s.system, human(summarize(tput).Median)))
		if si > 0 {
			w.ratio(group, "lakestream", s.system, "throughput", "higher is better", secs[0], tput, 2, 0)
		}
	}
	e.prog.logf("pk %s: %s", group, strings.Join(line, ", "))
	return table, pgTable, pgConns, closePG, nil
}

// sendLists sends each writer's batches in order over its own client, a
// goroutine each, and returns the wall time from the first send to the
// last acknowledgement; the first error stops them all.
func sendLists[W any](ctx context.Context, writers []W, lists [][]arrow.RecordBatch, prog *progress, send func(context.Context, W, arrow.RecordBatch) error) (time.Duration, error) {
	if len(lists) != len(writers) {
		return 0, fmt.Errorf("%d batch lists for %d writers", len(lists), len(writers))
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	start := time.Now()
	for wi, w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, rec := range lists[wi] {
				if ctx.Err() != nil {
					return
				}
				if err := send(ctx, w, rec); err != nil {
					cancel(err)
					return
				}
				prog.add(rec.NumRows())
			}
		}()
	}
	wg.Wait()
	d := time.Since(start)
	if err := context.Cause(ctx); err != nil {
		return 0, err
	}
	return d, nil
}

// latencyResult is one timed run of concurrent clients.
type latencyResult struct {
	calls, items int64
	secs         float64
	p50, p99     float64 // ms
}

// timedClients runs call on n clients for d, each back to back, and
// records each call's latency. call returns the items (keys) it served.
func timedClients(ctx context.Context, n int, d time.Duration, call func(ctx context.Context, client int, rng *rand.Rand) (int, error)) (latencyResult, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	hists := make([]*hdrhistogram.Histogram, n)
	counts := make([][2]int64, n)
	var wg sync.WaitGroup
	start := time.Now()
	end := start.Add(d)
	for c := range n {
		hists[c] = hdrhistogram.New(1, int64(time.Minute/time.Microsecond), 3)
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(c)+1, 0x5eed))
			for ctx.Err() == nil {
				t0 := time.Now()
				if !t0.Before(end) {
					return
				}
				items, err := call(ctx, c, rng)
				if err != nil {
					cancel(err)
					return
				}
				if err := hists[c].RecordValue(max(1, int64(time.Since(t0)/time.Microsecond))); err != nil {
					cancel(err)
					return
				}
				counts[c][0]++
				counts[c][1] += int64(items)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err := context.Cause(ctx); err != nil {
		return latencyResult{}, err
	}
	all := hdrhistogram.New(1, int64(time.Minute/time.Microsecond), 3)
	r := latencyResult{secs: elapsed.Seconds()}
	for c, h := range hists {
		all.Merge(h)
		r.calls += counts[c][0]
		r.items += counts[c][1]
	}
	if r.calls == 0 {
		return r, errors.New("no call completed")
	}
	r.p50, r.p99 = float64(all.ValueAtQuantile(50))/1000, float64(all.ValueAtQuantile(99))/1000
	return r, nil
}

// rpcCounter counts the RPCs its clients start.
type rpcCounter struct{ n atomic.Int64 }

func (r *rpcCounter) options() []grpc.DialOption {
	return []grpc.DialOption{
		grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			r.n.Add(1)
			return invoker(ctx, method, req, reply, cc, opts...)
		}),
		grpc.WithChainStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
			r.n.Add(1)
			return streamer(ctx, desc, cc, method, opts...)
		}),
	}
}

// dialCounting connects n Flight SQL clients whose RPCs count in r.
func dialCounting(addr string, n int, r *rpcCounter) ([]*flightsql.Client, func(), error) {
	cls := make([]*flightsql.Client, 0, n)
	closeAll := func() {
		for _, c := range cls {
			c.Close()
		}
	}
	for range n {
		opts := append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMsg), grpc.MaxCallSendMsgSize(maxMsg))}, r.options()...)
		c, err := flightsql.NewClient(addr, nil, nil, opts...)
		if err != nil {
			closeAll()
			return nil, nil, fmt.Errorf("dial %s: %w", addr, err)
		}
		cls = append(cls, c)
	}
	return cls, closeAll, nil
}

// pkLookupClients are the prepared lookups, one per client.
type pkLookupClients struct {
	cls   []*flightsql.Client
	preps []*flightsql.PreparedStatement
	rpcs  rpcCounter
	close func()
}

func openLookupClients(ctx context.Context, e *env, table string) (*pkLookupClients, error) {
	lc := &pkLookupClients{}
	cls, closeCls, err := dialCounting(e.nodeAddr, e.cfg.PKClients, &lc.rpcs)
	if err != nil {
		return nil, err
	}
	lc.cls = cls
	lc.close = func() {
		for _, p := range lc.preps {
			_ = p.Close(context.Background()) // closing the statement: the connection goes next
		}
		closeCls()
	}
	for _, cl := range cls {
		p, err := cl.Prepare(ctx, "SELECT * FROM "+table+" WHERE id = ?")
		if err != nil {
			lc.close()
			return nil, fmt.Errorf("prepare: %w", err)
		}
		lc.preps = append(lc.preps, p)
	}
	return lc, nil
}

// lookup binds keys to client c's prepared lookup, executes it and reads
// the result, checking that it holds one row per key, in the keys' order.
// The call's context ends with it: arrow-go's prepared Execute reads the
// bind DoPut's one result but not the stream's end, and gRPC frees a
// client stream only at its end or its context's (without this, every
// lookup left a goroutine and its stream behind for the whole run, and
// the collector scanned thousands of them: measured, 4,090 goroutines
// after 4,000 lookups in flightsrv's BenchmarkPKLookup).
func (lc *pkLookupClients) lookup(ctx context.Context, c int, keys []int64) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	b := array.NewInt64Builder(memory.DefaultAllocator)
	b.AppendValues(keys, nil)
	col := b.NewArray()
	b.Release()
	schema := lc.preps[c].ParameterSchema()
	if schema == nil || schema.NumFields() != 1 {
		col.Release()
		return fmt.Errorf("prepared lookup has parameter schema %v, want one key parameter", schema)
	}
	params := array.NewRecordBatch(schema, []arrow.Array{col}, int64(len(keys)))
	col.Release()
	lc.preps[c].SetParameters(params)
	params.Release()
	info, err := lc.preps[c].Execute(ctx)
	if err != nil {
		return fmt.Errorf("execute: %w", err)
	}
	got := 0
	for _, ep := range info.GetEndpoint() {
		rdr, err := lc.cls[c].DoGet(ctx, ep.GetTicket())
		if err != nil {
			return fmt.Errorf("fetch: %w", err)
		}
		for rdr.Next() {
			ids, ok := rdr.RecordBatch().Column(0).(*array.Int64)
			if !ok {
				rdr.Release()
				return fmt.Errorf("column 0 is %s, want int64", rdr.RecordBatch().Column(0).DataType())
			}
			for _, id := range ids.Int64Values() {
				if got >= len(keys) || id != keys[got] {
					rdr.Release()
					return fmt.Errorf("lookup of %d keys: row %d has key %d", len(keys), got, id)
				}
				got++
			}
		}
		err = rdr.Err()
		rdr.Release()
		if err != nil {
			return fmt.Errorf("fetch: %w", err)
		}
	}
	if got != len(keys) {
		return fmt.Errorf("lookup of %d keys returned %d rows", len(keys), got)
	}
	return nil
}

// latencySide is one system measured by timedClients.
type latencySide struct {
	system string
	call   func(ctx context.Context, client int, rng *rand.Rand) (int, error)
	// perCall, when set, is the transport cost counter: its growth over a
	// run divided by the calls is reported under costMetric.
	perCall    func() int64
	costMetric string
}

// latencyRuns runs every side Runs times for Config.PKDuration, rotating
// which goes first, and reports the throughput (calls/s, and items/s when
// itemUnit is set), p50 and p99 of each.
func latencyRuns(ctx context.Context, e *env, w *WorkloadReport, group, callUnit, itemUnit string, sides []latencySide) ([][]float64, error) {
	cfg := e.cfg
	tput := make([][]float64, len(sides))
	p50 := make([][]float64, len(sides))
	p99 := make([][]float64, len(sides))
	cost := make([][]float64, len(sides))
	for run := 1; run <= cfg.Runs; run++ {
		for j := range sides {
			si := (run - 1 + j) % len(sides)
			s := sides[si]
			e.prog.step(0, "", "pk %s, run %d/%d: %s", group, run, cfg.Runs, s.system)
			var before int64
			if s.perCall != nil {
				before = s.perCall()
			}
			r, err := timedClients(ctx, cfg.PKClients, cfg.PKDuration, s.call)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", s.system, err)
			}
			if s.perCall != nil {
				cost[si] = append(cost[si], float64(s.perCall()-before)/float64(r.calls))
			}
			n := r.calls
			if itemUnit != "" {
				n = r.items
			}
			tput[si] = append(tput[si], float64(n)/r.secs)
			p50[si] = append(p50[si], r.p50)
			p99[si] = append(p99[si], r.p99)
		}
	}
	var line []string
	for si, s := range sides {
		unit := callUnit
		if itemUnit != "" {
			unit = itemUnit
		}
		w.figure(group, s.system, "throughput", unit, tput[si])
		w.figure(group, s.system, "p50", "ms", p50[si])
		w.figure(group, s.system, "p99", "ms", p99[si])
		if s.perCall != nil {
			w.figure(group, s.system, s.costMetric, "per call", cost[si])
		}
		line = append(line, fmt.Sprintf("%s %s %s, p99 %s ms", s.system, human(summarize(tput[si]).Median), unit, human(summarize(p99[si]).Median)))
	}
	e.prog.logf("pk %s: %s", group, strings.Join(line, "; "))
	return tput, nil
}

// pkPointLookups measures single-key lookups.
func pkPointLookups(ctx context.Context, e *env, w *WorkloadReport, ks pkKeyspace, table string, pgConns []*pgx.Conn, pgWrites func() int64) error {
	cfg := e.cfg
	lc, err := openLookupClients(ctx, e, table)
	if err != nil {
		return err
	}
	defer lc.close()
	keyBufs := make([][]int64, cfg.PKClients)
	sides := []latencySide{{system: "lakestream", perCall: lc.rpcs.n.Load, costMetric: "RPCs", call: func(ctx context.Context, c int, rng *rand.Rand) (int, error) {
		keyBufs[c] = append(keyBufs[c][:0], rng.Int64N(ks.keys))
		return 1, lc.lookup(ctx, c, keyBufs[c])
	}}}
	var floor rpcCounter
	ceilCls, closeCeil, err := dialCounting(e.ceilAddr, cfg.PKClients, &floor)
	if err != nil {
		return err
	}
	defer closeCeil()
	desc := &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: []byte("noop")}
	sides = append(sides, latencySide{system: "no-op rpc", perCall: floor.n.Load, costMetric: "RPCs", call: func(ctx context.Context, c int, _ *rand.Rand) (int, error) {
		_, err := ceilCls[c].Client.GetSchema(ctx, desc)
		return 1, err
	}})
	pgSystem := baselineSystems["postgres"]
	if pgConns != nil {
		sides = append(sides, latencySide{system: pgSystem, perCall: pgWrites, costMetric: "socket writes", call: func(ctx context.Context, c int, rng *rand.Rand) (int, error) {
			return 1, pgLookup(ctx, pgConns[c], rng.Int64N(ks.keys))
		}})
	}
	group := fmt.Sprintf("point lookup, %s keys, %d clients", human(float64(cfg.PKKeys)), cfg.PKClients)
	tput, err := latencyRuns(ctx, e, w, group, "calls/s", "", sides)
	if err != nil {
		return err
	}
	if err := pkProfile(ctx, e, w, group, "point", cfg.PKClients, sides[0].call); err != nil {
		return err
	}
	w.ratio(group, "lakestream", "no-op rpc", "throughput", "higher is better; the no-op RPC is the floor: a Flight lookup takes several RPCs", tput[0], tput[1], 0, 0)
	if pgConns != nil {
		w.ratio(group, "lakestream", pgSystem, "throughput", "higher is better", tput[0], tput[2], 0, 0)
	}
	for _, f := range w.Figures {
		if f.Group == group && f.System == "lakestream" && f.Metric == "p99" {
			verdict := "met"
			if f.Median > 1 {
				verdict = "MISSED"
			}
			w.Notes = append(w.Notes, fmt.Sprintf("point lookup p99 %s ms against the target of 1 ms: %s", human(f.Median), verdict))
		}
	}
	return nil
}

// pkBatchLookups measures lookups of Config.PKBatchKeys keys per call.
func pkBatchLookups(ctx context.Context, e *env, w *WorkloadReport, ks pkKeyspace, table string, pgConns []*pgx.Conn) error {
	cfg := e.cfg
	lc, err := openLookupClients(ctx, e, table)
	if err != nil {
		return err
	}
	defer lc.close()
	keyBufs := make([][]int64, cfg.PKClients)
	batch := func(c int, rng *rand.Rand) []int64 {
		keyBufs[c] = pkKeyBatch(ks, rng.Int64N(ks.keys), cfg.PKBatchKeys, keyBufs[c])
		return keyBufs[c]
	}
	sides := []latencySide{{system: "lakestream", perCall: lc.rpcs.n.Load, costMetric: "RPCs", call: func(ctx context.Context, c int, rng *rand.Rand) (int, error) {
		return cfg.PKBatchKeys, lc.lookup(ctx, c, batch(c, rng))
	}}}
	if pgConns != nil {
		sides = append(sides, latencySide{system: baselineSystems["postgres"], call: func(ctx context.Context, c int, rng *rand.Rand) (int, error) {
			return cfg.PKBatchKeys, pgBatchLookup(ctx, pgConns[c], batch(c, rng))
		}})
	}
	group := fmt.Sprintf("batch lookup, %s keys per call, %d clients", human(float64(cfg.PKBatchKeys)), cfg.PKClients)
	tput, err := latencyRuns(ctx, e, w, group, "calls/s", "keys/s", sides)
	if err != nil {
		return err
	}
	if err := pkProfile(ctx, e, w, group, "batch", cfg.PKClients, sides[0].call); err != nil {
		return err
	}
	if pgConns != nil {
		w.ratio(group, "lakestream", baselineSystems["postgres"], "throughput", "higher is better (keys/s)", tput[0], tput[1], 1.5, 0)
	}
	return nil
}

// pkAggregate runs the GROUP BY over the node's state, DuckDB's native
// table of the final rows and PostgreSQL's upserted table.
func pkAggregate(ctx context.Context, e *env, w *WorkloadReport, ks pkKeyspace, table string, pgConns []*pgx.Conn, pgTable string) error {
	cfg := e.cfg
	final := pkFinal(ks, cfg.PKRows, 64<<10)
	defer release(final)
	duck, err := openDuck()
	if err != nil {
		return err
	}
	defer duck.close()
	if err := duck.load("pkstate", final); err != nil {
		return err
	}
	engines := []queryEngine{
		{system: "lakestream", query: func(ctx context.Context, tmpl string) (int64, int64, error) {
			return queryNode(ctx, e, fmt.Sprintf(tmpl, table))
		}},
		{system: "duckdb", atMost: 2, query: func(_ context.Context, tmpl string) (int64, int64, error) {
			return duck.query(fmt.Sprintf(tmpl, "pkstate"), querySumCol)
		}},
	}
	if pgConns != nil {
		engines = append(engines, queryEngine{system: baselineSystems["postgres"], query: func(ctx context.Context, tmpl string) (int64, int64, error) {
			return pgQuery(ctx, pgConns[0], fmt.Sprintf(tmpl, pgTable), querySumCol)
		}})
	}
	name := fmt.Sprintf("aggregate over the state of %s keys", human(float64(cfg.PKKeys)))
	if err := queryRuns(ctx, e, w, name, pkQuery, engines); err != nil {
		return err
	}
	err = pkProfile(ctx, e, w, name, "aggregate", 1, func(ctx context.Context, _ int, _ *rand.Rand) (int, error) {
		_, _, err := engines[0].query(ctx, pkQuery)
		return 1, err
	})
	if err != nil {
		return err
	}
	// queryRuns checked that the systems agree; the state must also hold
	// every key once.
	_, sum, err := queryNode(ctx, e, fmt.Sprintf(pkQuery, table))
	if err != nil {
		return err
	}
	if sum != int64(cfg.PKKeys) {
		return fmt.Errorf("the GROUP BY counts %d rows, want %d keys", sum, cfg.PKKeys)
	}
	return nil
}

// keyIndexDir is the directory of a table's key index in the node's data
// dir (docs/format/keyindex.md).
const keyIndexDir = "kv"

// pkFootprint reports the key index's size on disk (every kv/ directory
// under the node's data dir: the workload's table is its only primary-key
// table) and the process's resident memory.
func pkFootprint(e *env, w *WorkloadReport, when string) error {
	var size int64
	err := filepath.WalkDir(e.dataDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) { // a file pebble removed meanwhile
				return nil
			}
			return err
		}
		rel, err := filepath.Rel(e.dataDir, path)
		if err != nil {
			return err
		}
		if d.IsDir() || !slices.Contains(strings.Split(filepath.ToSlash(filepath.Dir(rel)), "/"), keyIndexDir) {
			return nil
		}
		info, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		size += info.Size()
		return nil
	})
	if err != nil {
		return fmt.Errorf("key index size: %w", err)
	}
	if size == 0 {
		return fmt.Errorf("no key index (kv/) under %s", e.dataDir)
	}
	group := "footprint " + when
	mib := float64(size) / (1 << 20)
	w.figure(group, "lakestream", "key index on disk", "MiB", []float64{mib})
	w.figure(group, "lakestream", "key index on disk per million keys", "MiB", []float64{mib / (float64(e.cfg.PKKeys) / 1e6)})
	who, proc := "process", "self"
	if e.nodePID != 0 {
		who, proc = "node process", strconv.Itoa(e.nodePID)
	}
	rss, hwm, err := processRSS(proc)
	if err != nil {
		w.Notes = append(w.Notes, who+" RSS not reported: "+err.Error())
		return nil
	}
	w.figure(group, who, "RSS", "MiB", []float64{rss})
	w.figure(group, who, "peak RSS", "MiB", []float64{hwm})
	return nil
}

// processRSS is VmRSS and VmHWM of /proc/<pid>/status in MiB (pid "self":
// this process, where the node, the bench's clients and the DuckDB
// baseline then share it).
func processRSS(pid string) (rss, hwm float64, err error) {
	raw, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return 0, 0, err
	}
	var found int
	for _, l := range strings.Split(string(raw), "\n") {
		k, v, ok := strings.Cut(l, ":")
		if !ok || (k != "VmRSS" && k != "VmHWM") {
			continue
		}
		kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
		if err != nil {
			return 0, 0, fmt.Errorf("/proc/%s/status %s: %w", pid, k, err)
		}
		if k == "VmRSS" {
			rss = kb / 1024
		} else {
			hwm = kb / 1024
		}
		found++
	}
	if found != 2 {
		return 0, 0, fmt.Errorf("/proc/%s/status lacks VmRSS or VmHWM", pid)
	}
	return rss, hwm, nil
}
