package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
)

// The ingest workload: Config.Rows event rows, cut into batches of each of
// Config.BatchRows, sent by Config.Writers concurrent clients (each its own
// connection) with ADBC-style bulk ingest, Flight SQL's ExecuteIngest in
// append mode, one batch per call. A call returns once its rows are
// durable (with sync=always). The ceiling receives the same batches from
// the same client code. Batches are generated before the clock starts.

var appendMode = &flightsql.TableDefinitionOptions{
	IfNotExist: flightsql.TableDefinitionOptionsTableNotExistOptionFail,
	IfExists:   flightsql.TableDefinitionOptionsTableExistsOptionAppend,
}

func runIngest(ctx context.Context, e *env) (*WorkloadReport, error) {
	cfg := e.cfg
	w := &WorkloadReport{Name: "ingest", About: fmt.Sprintf(
		"bulk ingest (Flight SQL ExecuteIngest, one batch per call) of %s rows into a %d-bucket table by %d concurrent writers; "+
			"ceiling: an arrow-go Flight server that decodes and discards DoPut data, fed by the same client code",
		human(float64(cfg.Rows)), tableBuckets, cfg.Writers)}
	nodeCls, closeNode, err := dialN(e.nodeAddr, cfg.Writers)
	if err != nil {
		return nil, err
	}
	defer closeNode()
	ceilCls, closeCeil, err := dialN(e.ceilAddr, cfg.Writers)
	if err != nil {
		return nil, err
	}
	defer closeCeil()
	for _, bs := range cfg.BatchRows {
		if err := ingestBatchSize(ctx, e, w, bs, nodeCls, ceilCls); err != nil {
			return nil, err
		}
	}
	w.missing("PostgreSQL (COPY through adbc-driver-postgresql)", "not assembled by the harness yet")
	w.missing("Apache Kafka (KRaft, producer acks=all)", "not assembled by the harness yet")
	w.missing("Apache Fluss", "not assembled by the harness yet")
	return w, nil
}

// ingestBatchSize measures one batch size: Runs pairs of (Lakestream,
// ceiling), alternating which goes first.
func ingestBatchSize(ctx context.Context, e *env, w *WorkloadReport, bs int, nodeCls, ceilCls []*flightsql.Client) error {
	cfg := e.cfg
	recs := batches(cfg.Rows, bs)
	defer release(recs)
	size := float64(totalBytes(recs))
	group := fmt.Sprintf("%s-row batches, %d writers", human(float64(bs)), cfg.Writers)
	var nodeS, ceilS []float64 // seconds per run
	for run := 1; run <= cfg.Runs; run++ {
		lake := func() error {
			table, err := e.createTable(ctx, "ingest")
			if err != nil {
				return err
			}
			e.prog.step(int64(cfg.Rows), "rows", "ingest %s, run %d/%d: lakestream", group, run, cfg.Runs)
			d, err := ingestAll(ctx, nodeCls, table, recs, e.prog)
			if err != nil {
				return fmt.Errorf("lakestream: %w", err)
			}
			if err := checkRows(ctx, e, table, int64(cfg.Rows)); err != nil {
				return err
			}
			nodeS = append(nodeS, d.Seconds())
			return e.dropTable(ctx, table)
		}
		ceil := func() error {
			e.prog.step(int64(cfg.Rows), "rows", "ingest %s, run %d/%d: ceiling", group, run, cfg.Runs)
			d, err := ingestAll(ctx, ceilCls, "ceiling", recs, e.prog)
			if err != nil {
				return fmt.Errorf("ceiling: %w", err)
			}
			ceilS = append(ceilS, d.Seconds())
			return nil
		}
		first, second := lake, ceil
		if run%2 == 0 {
			first, second = ceil, lake
		}
		if err := first(); err != nil {
			return err
		}
		if err := second(); err != nil {
			return err
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
	w.figure(group, "lakestream", "throughput", "rows/s", per(rows, nodeS))
	w.figure(group, "lakestream", "throughput", "MB/s", per(size/1e6, nodeS))
	w.figure(group, "ceiling", "throughput", "rows/s", per(rows, ceilS))
	w.figure(group, "ceiling", "throughput", "MB/s", per(size/1e6, ceilS))
	w.ratio(group, "lakestream", "ceiling", "throughput", "higher is better; 1 = as fast as the ceiling",
		per(rows, nodeS), per(rows, ceilS), 0.7, 0)
	e.prog.logf("ingest %s: lakestream %s rows/s, ceiling %s rows/s", group,
		human(summarize(per(rows, nodeS)).Median), human(summarize(per(rows, ceilS)).Median))
	return nil
}

// ingestAll sends recs round-robin over the clients, one ExecuteIngest
// call per batch, and returns the wall time from the first call to the
// last acknowledgement.
func ingestAll(ctx context.Context, cls []*flightsql.Client, table string, recs []arrow.RecordBatch, prog *progress) (time.Duration, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	start := time.Now()
	for wi, cl := range cls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := wi; i < len(recs) && ctx.Err() == nil; i += len(cls) {
				if err := ingestOne(ctx, cl, table, recs[i]); err != nil {
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
// scan's snapshot, which planning reports (docs/flight.md).
func checkRows(ctx context.Context, e *env, table string, want int64) error {
	info, err := e.node.Execute(ctx, "SELECT * FROM "+table)
	if err != nil {
		return fmt.Errorf("count %s: %w", table, err)
	}
	if got := info.GetTotalRecords(); got != want {
		return fmt.Errorf("%s holds %d rows after ingest, want %d", table, got, want)
	}
	return nil
}
