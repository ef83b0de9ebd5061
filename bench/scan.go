package bench

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
)

// The scan workload: SELECT * of a table of Config.Rows rows that are all
// in the log (fresh, nothing tiered), every endpoint fetched in parallel
// over one client connection, every record decoded by arrow-go's
// flight.NewRecordReader. Planning (Execute) is inside the clock.
//
// The ceiling serves exactly the records that Lakestream's scan returned,
// stream by stream, from memory: "ceiling" writes them uncompressed per
// read (the least work a server can do; the client decodes nothing),
// "ceiling-<codec>" sends them pre-encoded once with the table's codec, so
// the client pays the same decompression as against Lakestream. MB/s is of
// the uncompressed Arrow data, the same bytes for every system.

func runScan(ctx context.Context, e *env) (*WorkloadReport, error) {
	cfg := e.cfg
	w := &WorkloadReport{Name: "scan", About: fmt.Sprintf(
		"SELECT * of a fresh %s-row log table (%d buckets, %s), every endpoint in parallel, client decodes; "+
			"ceiling: an arrow-go Flight server streaming the same records from memory",
		human(float64(cfg.Rows)), tableBuckets, cfg.Codec)}
	table, size, err := loadScanTable(ctx, e)
	if err != nil {
		return nil, err
	}
	read := func(keep bool) ([][]arrow.RecordBatch, error) {
		return scanNode(ctx, e, e.node, table, int64(cfg.Rows), keep)
	}
	if err := scanVsCeiling(e, w, "", int64(cfg.Rows), size, read, e.nodeCPU, cfg.Codec); err != nil {
		return nil, err
	}
	return w, e.dropTable(ctx, table)
}

// scanVsCeiling measures a scan of rows rows (size bytes of Arrow data; 0:
// the size of the records read) by read against the ceiling serving,
// stream by stream, exactly the records read's first call returned:
// uncompressed ("ceiling", the target's reference), and, with codec set,
// pre-encoded with it ("ceiling-<codec>"). Runs rounds of every side, the
// order rotated run by run; the figures go to w under a group naming the
// rows and endpoints, after label. With nodeCPU (the node that read
// scans in a process of its own) and the ceiling in one too, each side's
// server CPU per million rows is reported beside its throughput.
func scanVsCeiling(e *env, w *WorkloadReport, label string, rows, size int64, read func(keep bool) ([][]arrow.RecordBatch, error), nodeCPU func() (float64, error), codec string) error {
	cfg := e.cfg
	ctx := context.Background()
	what := "scan" // in progress lines: the label ends in ": "
	if label != "" {
		what += " " + strings.TrimSuffix(label, ": ")
	}
	// The first scan warms the node and hands its records to the ceiling.
	e.prog.step(rows, "rows", "%s: first read, records to the ceiling", what)
	streams, err := read(true)
	if err != nil {
		return err
	}
	var schema *arrow.Schema
	var readBytes int64
	for _, recs := range streams {
		if len(recs) > 0 {
			schema = recs[0].Schema()
		}
		readBytes += totalBytes(recs)
	}
	if size == 0 {
		size = readBytes
	}
	enc := codec
	if enc == "" {
		enc = "none"
	}
	err = setCeilingScan(ctx, e.ceilCl.Client, schema, streams, enc)
	for _, recs := range streams {
		release(recs)
	}
	if err != nil {
		return err
	}
	type side struct {
		name string
		cpu  func() (float64, error)
		read func() (int64, error)
	}
	sides := []side{
		{"lakestream", nodeCPU, func() (int64, error) { _, err := read(false); return rows, err }},
		{"ceiling", e.ceilCPU, func() (int64, error) {
			return readTickets(ctx, e, e.ceilCl.Client, ceilingTickets("plain", len(streams)), nil)
		}},
	}
	encodedName := "ceiling-" + codec
	if codec != "" {
		sides = append(sides, side{encodedName, e.ceilCPU, func() (int64, error) {
			return readTickets(ctx, e, e.ceilCl.Client, ceilingTickets("encoded", len(streams)), nil)
		}})
	}
	secs := make([][]float64, len(sides))
	cpus := make([][]float64, len(sides)) // server CPU-s per million rows
	for run := 1; run <= cfg.Runs; run++ {
		for k := range sides {
			i := (k + run - 1) % len(sides) // rotate the order run by run
			s := sides[i]
			e.prog.step(rows, "rows", "%s, run %d/%d: %s", what, run, cfg.Runs, s.name)
			start := time.Now()
			var n int64
			cpu, ok, err := cpuSpan(s.cpu, func() (err error) { n, err = s.read(); return err })
			if err != nil {
				return fmt.Errorf("%s: %w", s.name, err)
			}
			if n != rows {
				return fmt.Errorf("%s read %d rows, want %d", s.name, n, rows)
			}
			secs[i] = append(secs[i], time.Since(start).Seconds())
			if ok {
				cpus[i] = append(cpus[i], cpu/float64(rows)*1e6)
			}
		}
	}
	group := fmt.Sprintf("%s%s rows, %d endpoints", label, human(float64(rows)), len(streams))
	mbps := make([][]float64, len(sides))
	for i, s := range sides {
		mbps[i] = make([]float64, len(secs[i]))
		rs := make([]float64, len(secs[i]))
		for r, t := range secs[i] {
			mbps[i][r], rs[r] = float64(size)/1e6/t, float64(rows)/t
		}
		w.figure(group, s.name, "throughput", "MB/s", mbps[i])
		w.figure(group, s.name, "throughput", "rows/s", rs)
	}
	w.ratio(group, "lakestream", "ceiling", "throughput", "higher is better; 1 = as fast as the ceiling", mbps[0], mbps[1], 0.8, 0)
	line := fmt.Sprintf("scan %s: lakestream %s MB/s, ceiling %s MB/s", group, human(summarize(mbps[0]).Median), human(summarize(mbps[1]).Median))
	if codec != "" {
		w.ratio(group, "lakestream", encodedName, "throughput", "higher is better; same client decompression on both sides", mbps[0], mbps[2], 0, 0)
		line += fmt.Sprintf(", %s %s MB/s", encodedName, human(summarize(mbps[2]).Median))
	}
	if len(cpus[0]) > 0 && len(cpus[1]) > 0 {
		for i, s := range sides {
			w.figure(group, s.name, serverCPU, cpuUnit, cpus[i])
		}
		w.ratio(group, "lakestream", "ceiling", serverCPU, "lower is better; 1 = the server spends as much CPU per row as the ceiling", cpus[0], cpus[1], 0, 0)
		line += fmt.Sprintf("; server CPU lakestream %s, ceiling %s s/Mrows", trim(summarize(cpus[0]).Median), trim(summarize(cpus[1]).Median))
	} else if e.nodeCPU == nil {
		w.note(cpuMissing)
	}
	e.prog.logf("%s", line)
	return nil
}

// loadScanTable fills a new table with Config.Rows rows in 64k-row
// batches, untimed, and returns it with the rows' Arrow size.
func loadScanTable(ctx context.Context, e *env) (string, int64, error) {
	table, err := e.createTable(ctx, "scan")
	if err != nil {
		return "", 0, err
	}
	recs := batches(e.cfg.Rows, 64<<10)
	defer release(recs)
	cls, closeCls, err := dialN(e.nodeAddr, e.cfg.Writers)
	if err != nil {
		return "", 0, err
	}
	defer closeCls()
	e.prog.step(int64(e.cfg.Rows), "rows", "scan: loading %s", table)
	if _, err := ingestAll(ctx, cls, table, recs, e.prog); err != nil {
		return "", 0, err
	}
	return table, totalBytes(recs), checkRows(ctx, e, table, int64(e.cfg.Rows))
}

// scanNode plans SELECT * FROM table on node, reads every endpoint and
// checks it read want rows; with keep it returns each endpoint's records.
func scanNode(ctx context.Context, e *env, node *flightsql.Client, table string, want int64, keep bool) ([][]arrow.RecordBatch, error) {
	info, err := node.Execute(ctx, "SELECT * FROM "+table)
	if err != nil {
		return nil, err
	}
	tickets := make([]*flight.Ticket, len(info.GetEndpoint()))
	for i, ep := range info.GetEndpoint() {
		tickets[i] = ep.GetTicket()
	}
	var kept [][]arrow.RecordBatch
	if keep {
		kept = make([][]arrow.RecordBatch, len(tickets))
	}
	n, err := readTickets(ctx, e, node.Client, tickets, kept)
	if err != nil {
		for _, recs := range kept {
			release(recs)
		}
		return nil, err
	}
	if n != want {
		return nil, fmt.Errorf("scan of %s read %d rows, want %d", table, n, want)
	}
	return kept, nil
}

// readTickets is the client side of every scan: DoGet all tickets in
// parallel on cl, decode every record, count the rows. With kept != nil
// (one slot per ticket) the records are kept there, retained.
func readTickets(ctx context.Context, e *env, cl flight.Client, tickets []*flight.Ticket, kept [][]arrow.RecordBatch) (int64, error) {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		total int64
		first error
	)
	for i, tk := range tickets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n, err := readTicket(ctx, e, cl, tk, kept, i)
			mu.Lock()
			defer mu.Unlock()
			total += n
			if err != nil && first == nil {
				first = err
			}
		}()
	}
	wg.Wait()
	return total, first
}

func readTicket(ctx context.Context, e *env, cl flight.Client, tk *flight.Ticket, kept [][]arrow.RecordBatch, i int) (int64, error) {
	stream, err := cl.DoGet(ctx, tk)
	if err != nil {
		return 0, err
	}
	rdr, err := flight.NewRecordReader(stream)
	if err != nil {
		return 0, err
	}
	defer rdr.Release()
	var n int64
	for rdr.Next() {
		rec := rdr.RecordBatch()
		n += rec.NumRows()
		e.prog.add(rec.NumRows())
		if kept != nil {
			rec.Retain()
			kept[i] = append(kept[i], rec)
		}
	}
	return n, rdr.Err()
}
