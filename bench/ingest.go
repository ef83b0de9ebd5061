package bench

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The ingest workload: Config.Rows event rows, cut into batches of each of
// Config.BatchRows, sent by Config.Writers concurrent clients (each its own
// connection) with ADBC-style bulk ingest, Flight SQL's ExecuteIngest in
// append mode, one batch per call. A call returns once its rows are
// durable (with sync=always). The ceiling receives the same batches from
// the same client code; PostgreSQL (postgres.go), Kafka (kafka.go) and
// Fluss (fluss.go) the same rows, cut into the same batches, through their
// own clients, one durable call per batch. Batches are generated before the clock starts.

var appendMode = &flightsql.TableDefinitionOptions{
	IfNotExist: flightsql.TableDefinitionOptionsTableNotExistOptionFail,
	IfExists:   flightsql.TableDefinitionOptionsTableExistsOptionAppend,
}

func runIngest(ctx context.Context, e *env) (*WorkloadReport, error) {
	cfg := e.cfg
	w := &WorkloadReport{Name: "ingest", About: fmt.Sprintf(
		"bulk ingest (Flight SQL ExecuteIngest, one batch per call) of %s rows into a %d-bucket table by %d concurrent writers, "+
			"and the same batches by plain Flight DoPut (a PATH descriptor, one DoPut per batch); "+
			"ceiling: an arrow-go Flight server that decodes and discards DoPut data, fed by the same client code",
		human(float64(cfg.Rows)), tableBuckets, cfg.Writers)}
	sides, plain, closeSides, err := ingestSides(ctx, e, w)
	defer closeSides()
	if err != nil {
		return nil, err
	}
	for _, bs := range cfg.BatchRows {
		if err := ingestBatchSize(ctx, e, w, bs, "", sides); err != nil {
			return nil, err
		}
		if err := ingestBatchSize(ctx, e, w, bs, ", plain DoPut", plain); err != nil {
			return nil, err
		}
	}
	e.base.reportMissing(w, "postgres", "kafka", "fluss")
	return w, nil
}

// ingestSide is one system the ingest workload measures: ingest writes
// recs once, into a fresh table or topic that it checks and drops, and
// returns the wall time of the writes alone.
type ingestSide struct {
	system  string
	atLeast float64 // the target of Lakestream ÷ this side, 0: none
	ingest  func(ctx context.Context, recs []arrow.RecordBatch, label string) (time.Duration, error)
	// cpu, when set, is the CPU-seconds the side's server spent on the
	// writes of its last ingest call, if measured (server.go).
	cpu func() (float64, bool)
}

// sendFunc sends a measurement's batches to table over the clients.
type sendFunc func(context.Context, []*flightsql.Client, string, []arrow.RecordBatch, *progress) (time.Duration, error)

// meteredSend wraps send so that the CPU meter's span over each call is
// kept, for last to report.
func meteredSend(meter func() (float64, error), send sendFunc) (metered sendFunc, last func() (float64, bool)) {
	var cpu float64
	var ok bool
	metered = func(ctx context.Context, cls []*flightsql.Client, table string, recs []arrow.RecordBatch, prog *progress) (d time.Duration, err error) {
		cpu, ok, err = cpuSpan(meter, func() (err error) { d, err = send(ctx, cls, table, recs, prog); return err })
		return d, err
	}
	return metered, func() (float64, bool) { return cpu, ok }
}

// ingestSides are Lakestream, then the ceiling and every running baseline,
// each with Config.Writers connections, ingesting through ADBC; and plain,
// Lakestream and the ceiling ingesting through plain Flight DoPut.
// closeAll closes them.
func ingestSides(ctx context.Context, e *env, w *WorkloadReport) (sides, plain []ingestSide, closeAll func(), err error) {
	var closers []func()
	closeAll = func() {
		for _, c := range closers {
			c()
		}
	}
	n := e.cfg.Writers
	nodeCls, closeNode, err := dialN(e.nodeAddr, n)
	if err != nil {
		return nil, nil, closeAll, err
	}
	closers = append(closers, closeNode)
	ceilCls, closeCeil, err := dialN(e.ceilAddr, n)
	if err != nil {
		return nil, nil, closeAll, err
	}
	closers = append(closers, closeCeil)
	for _, api := range []struct {
		to   *[]ingestSide
		send sendFunc
	}{{&sides, ingestAll}, {&plain, doPutAll}} {
		nodeSend, nodeCPU := meteredSend(e.nodeCPU, api.send)
		ceilSend, ceilCPU := meteredSend(e.ceilCPU, api.send)
		*api.to = append(*api.to, ingestSide{system: "lakestream", cpu: nodeCPU, ingest: func(ctx context.Context, recs []arrow.RecordBatch, label string) (time.Duration, error) {
			return lakeIngest(ctx, e, nodeCls, recs, label, nodeSend)
		}}, ingestSide{system: "ceiling", atLeast: 0.7, cpu: ceilCPU, ingest: func(ctx context.Context, recs []arrow.RecordBatch, label string) (time.Duration, error) {
			e.prog.step(int64(totalRows(recs)), "rows", "%s: ceiling", label)
			return ceilSend(ctx, ceilCls, "ceiling", recs, e.prog)
		}})
	}
	if pg := e.base.pg; pg != nil {
		conns, closeConns, err := pg.connectN(ctx, n)
		if err != nil {
			return nil, nil, closeAll, err
		}
		closers = append(closers, closeConns)
		sides = append(sides, ingestSide{system: baselineSystems["postgres"], atLeast: 3, ingest: func(ctx context.Context, recs []arrow.RecordBatch, label string) (time.Duration, error) {
			return pgIngest(ctx, e, conns, recs, label)
		}})
		w.About += fmt.Sprintf("; PostgreSQL %s: one binary COPY (pgx CopyFrom) per batch, each a durable commit", pg.version)
	}
	if k := e.base.kafka; k != nil {
		prods, closeProds, err := k.producers(n)
		if err != nil {
			return nil, nil, closeAll, err
		}
		closers = append(closers, closeProds)
		sides = append(sides, ingestSide{system: baselineSystems["kafka"], ingest: func(ctx context.Context, recs []arrow.RecordBatch, label string) (time.Duration, error) {
			return kafkaIngest(ctx, e, prods, recs, label)
		}})
		w.About += fmt.Sprintf("; Kafka %s: one record per row, one ProduceSync (acks=all) per batch", k.version)
	}
	if fl := e.base.fluss; fl != nil {
		sides = append(sides, ingestSide{system: baselineSystems["fluss"], ingest: func(ctx context.Context, recs []arrow.RecordBatch, label string) (time.Duration, error) {
			return fl.ingest(ctx, e, recs, label)
		}})
		w.About += fmt.Sprintf("; Fluss %s: a log table, one append per row and a flush (acks=all) per batch, by the Java client", fl.version)
	}
	return sides, plain, closeAll, nil
}

// ingestBatchSize measures one batch size: Runs rounds of every side back
// to back, rotating which goes first, and the ratios of Lakestream's
// throughput to each other side's, run by run. how ends the figures'
// group name.
func ingestBatchSize(ctx context.Context, e *env, w *WorkloadReport, bs int, how string, sides []ingestSide) error {
	cfg := e.cfg
	recs := batches(cfg.Rows, bs)
	defer release(recs)
	size := float64(totalBytes(recs))
	group := fmt.Sprintf("%s-row batches, %d writers%s", human(float64(bs)), cfg.Writers, how)
	secs := make([][]float64, len(sides)) // side, run
	cpus := make([][]float64, len(sides)) // side, run: server CPU-s per million rows
	for run := 1; run <= cfg.Runs; run++ {
		for j := range sides {
			si := (run - 1 + j) % len(sides)
			d, err := sides[si].ingest(ctx, recs, fmt.Sprintf("ingest %s, run %d/%d", group, run, cfg.Runs))
			if err != nil {
				return fmt.Errorf("%s: %w", sides[si].system, err)
			}
			secs[si] = append(secs[si], d.Seconds())
			if sides[si].cpu != nil {
				if c, ok := sides[si].cpu(); ok {
					cpus[si] = append(cpus[si], c/float64(cfg.Rows)*1e6)
				}
			}
		}
	}
	per := func(amount float64, secs []float64) []float64 {
		out := make([]float64, len(secs))
		for i, s := range secs {
			out[i] = amount / s
		}
		return out
	}
	rows := float64(cfg.Rows)
	var line []string
	for si, s := range sides {
		w.figure(group, s.system, "throughput", "rows/s", per(rows, secs[si]))
		w.figure(group, s.system, "throughput", "MB/s", per(size/1e6, secs[si]))
		line = append(line, fmt.Sprintf("%s %s rows/s", s.system, human(summarize(per(rows, secs[si])).Median)))
	}
	for si := 1; si < len(sides); si++ {
		w.ratio(group, "lakestream", sides[si].system, "throughput", fmt.Sprintf("higher is better; 1 = as fast as %s", sides[si].system),
			per(rows, secs[0]), per(rows, secs[si]), sides[si].atLeast, 0)
	}
	if len(cpus[0]) > 0 && len(cpus[1]) > 0 { // Lakestream and the ceiling
		for si := range 2 {
			w.figure(group, sides[si].system, serverCPU, cpuUnit, cpus[si])
		}
		w.ratio(group, "lakestream", "ceiling", serverCPU, "lower is better; 1 = the server spends as much CPU per row as the ceiling", cpus[0], cpus[1], 0, 0)
		line = append(line, fmt.Sprintf("server CPU lakestream %s, ceiling %s s/Mrows", trim(summarize(cpus[0]).Median), trim(summarize(cpus[1]).Median)))
	} else if e.nodeCPU == nil {
		w.note(cpuMissing)
	}
	e.prog.logf("ingest %s: %s", group, strings.Join(line, ", "))
	return nil
}

// lakeIngest ingests recs into a fresh table with send, checks its row
// count and drops it.
func lakeIngest(ctx context.Context, e *env, cls []*flightsql.Client, recs []arrow.RecordBatch, label string, send sendFunc) (time.Duration, error) {
	table, err := e.createTable(ctx, "ingest")
	if err != nil {
		return 0, err
	}
	rows := totalRows(recs)
	e.prog.step(rows, "rows", "%s: lakestream", label)
	d, err := send(ctx, cls, table, recs, e.prog)
	if err != nil {
		return 0, err
	}
	if err := checkRows(ctx, e, table, rows); err != nil {
		return 0, err
	}
	return d, e.dropTable(ctx, table)
}

// pgIngest copies recs into a fresh PostgreSQL table, checks its row
// count and drops it.
func pgIngest(ctx context.Context, e *env, conns []*pgx.Conn, recs []arrow.RecordBatch, label string) (time.Duration, error) {
	e.tables++
	table := fmt.Sprintf("ingest_%d", e.tables)
	if err := pgExec(ctx, conns[0], "CREATE TABLE "+table+" "+pgTableDDL); err != nil {
		return 0, err
	}
	rows := totalRows(recs)
	e.prog.step(rows, "rows", "%s: postgresql", label)
	d, err := pgIngestAll(ctx, conns, table, recs, e.prog)
	if err != nil {
		return 0, err
	}
	if err := pgCheckRows(ctx, conns[0], table, rows); err != nil {
		return 0, err
	}
	return d, pgExec(ctx, conns[0], "DROP TABLE "+table)
}

// kafkaIngest produces recs into a fresh topic, checks its record count
// and deletes it.
func kafkaIngest(ctx context.Context, e *env, prods []*kgo.Client, recs []arrow.RecordBatch, label string) (time.Duration, error) {
	e.tables++
	topic := fmt.Sprintf("ingest_%d", e.tables)
	k := e.base.kafka
	if err := k.createTopic(ctx, topic); err != nil {
		return 0, err
	}
	rows := totalRows(recs)
	e.prog.step(rows, "rows", "%s: kafka", label)
	d, err := kafkaIngestAll(ctx, prods, topic, recs, e.prog)
	if err != nil {
		return 0, err
	}
	if err := k.checkRecords(ctx, topic, rows); err != nil {
		return 0, err
	}
	return d, k.deleteTopic(ctx, topic)
}

func totalRows(recs []arrow.RecordBatch) int64 {
	var n int64
	for _, r := range recs {
		n += r.NumRows()
	}
	return n
}

// ingestAll sends recs round-robin over the clients, one ExecuteIngest
// call per batch, and returns the wall time from the first call to the
// last acknowledgement.
func ingestAll(ctx context.Context, cls []*flightsql.Client, table string, recs []arrow.RecordBatch, prog *progress) (time.Duration, error) {
	return sendAll(ctx, cls, recs, prog, func(ctx context.Context, cl *flightsql.Client, rec arrow.RecordBatch) error {
		return ingestOne(ctx, cl, table, rec)
	})
}

// sendAll sends recs round-robin over the writers, one send per batch, each
// writer on a goroutine of its own, and returns the wall time from the
// first send to the last acknowledgement; the first error stops them all.
// Every system's ingest measurement runs through it, so they differ only in
// their send.
func sendAll[W any](ctx context.Context, writers []W, recs []arrow.RecordBatch, prog *progress, send func(context.Context, W, arrow.RecordBatch) error) (time.Duration, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	start := time.Now()
	for wi, w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := wi; i < len(recs) && ctx.Err() == nil; i += len(writers) {
				if err := send(ctx, w, recs[i]); err != nil {
					cancel(err)
					return
				}
				prog.add(recs[i].NumRows())
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

// ingestOne appends one batch and checks the acknowledged row count.
func ingestOne(ctx context.Context, cl *flightsql.Client, table string, rec arrow.RecordBatch) error {
	rdr, err := array.NewRecordReader(rec.Schema(), []arrow.RecordBatch{rec})
	if err != nil {
		return err
	}
	defer rdr.Release()
	n, err := cl.ExecuteIngest(ctx, rdr, &flightsql.ExecuteIngestOpts{Table: table, TableDefinitionOptions: appendMode})
	if err != nil {
		return fmt.Errorf("ingest into %s: %w", table, err)
	}
	if n != rec.NumRows() {
		return fmt.Errorf("ingest into %s: %d rows acknowledged, %d sent", table, n, rec.NumRows())
	}
	return nil
}

// checkRows checks that a table holds want rows: the exact row count of a
// scan's snapshot, which planning reports (docs/flight.md) when the log
// serves the scan; when the engine serves it (some rows already tiered
// into the lake), the count is unknown (-1), and SELECT count(*) says.
func checkRows(ctx context.Context, e *env, table string, want int64) error {
	info, err := e.node.Execute(ctx, "SELECT * FROM "+table)
	if err != nil {
		return fmt.Errorf("count %s: %w", table, err)
	}
	got := info.GetTotalRecords()
	if got < 0 {
		if got, err = countRows(ctx, e, table); err != nil {
			return fmt.Errorf("count %s: %w", table, err)
		}
	}
	if got != want {
		return fmt.Errorf("%s holds %d rows after ingest, want %d", table, got, want)
	}
	return nil
}

// countRows is SELECT count(*) of a table, through Flight SQL.
func countRows(ctx context.Context, e *env, table string) (int64, error) {
	info, err := e.node.Execute(ctx, "SELECT count(*) FROM "+table)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, ep := range info.GetEndpoint() {
		rdr, err := e.node.DoGet(ctx, ep.GetTicket())
		if err != nil {
			return 0, err
		}
		for rdr.Next() {
			col, ok := rdr.RecordBatch().Column(0).(*array.Int64)
			if !ok {
				rdr.Release()
				return 0, fmt.Errorf("count(*) is %s, want int64", rdr.RecordBatch().Column(0).DataType())
			}
			for _, v := range col.Int64Values() {
				n += v
			}
		}
		err = rdr.Err()
		rdr.Release()
		if err != nil {
			return 0, err
		}
	}
	return n, nil
}
