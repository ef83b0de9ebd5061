package bench

// The union workload; lake.go describes it and its node.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
)

var unionQueries = []int{0, 2}

func runUnion(ctx context.Context, e *env) (*WorkloadReport, error) {
	cfg := e.cfg
	lakeRows := cfg.QueryRows - cfg.QueryRows/10
	w := &WorkloadReport{Name: "union", About: fmt.Sprintf(
		"SELECT * and GROUP BY queries over %s rows, %s in the lake (Iceberg) and %s in the log tail, through Flight SQL (embedded DuckDB over the union); "+
			"scans vs the ceiling serving the same records, queries vs DuckDB in-process on read_parquet(the snapshot's data files) UNION ALL the tail rows in a native table",
		human(float64(cfg.QueryRows)), human(float64(lakeRows)), human(float64(cfg.QueryRows-lakeRows)))}
	n, err := startLakeNode(ctx, cfg, "lake-union")
	if err != nil {
		return nil, err
	}
	err = unionQueriesRun(ctx, e, n, w, lakeRows)
	if err == nil {
		var cold *WorkloadReport
		if cold, err = unionColdRuns(ctx, e, n, lakeRows); err == nil {
			w.Figures, w.Ratios = append(w.Figures, cold.Figures...), append(w.Ratios, cold.Ratios...)
		}
	}
	if err = errors.Join(err, n.close()); err != nil {
		return nil, err
	}
	return w, nil
}

func unionQueriesRun(ctx context.Context, e *env, n *lakeNode, w *WorkloadReport, lakeRows int) error {
	cfg := e.cfg
	t, files, err := loadUnion(ctx, e, n, w, lakeRows)
	if err != nil {
		return err
	}
	duck, err := openDuck()
	if err != nil {
		return err
	}
	defer duck.close()
	if err := loadUnionBaseline(duck, files, lakeRows, cfg.QueryRows); err != nil {
		return err
	}
	// SELECT * of the union (lake and tail), and of the lake alone, against
	// the ceiling serving the same records.
	for _, v := range []struct {
		label, table string
		rows         int64
	}{
		{"union (lake + log tail): ", t.name, int64(cfg.QueryRows)},
		{"lake only (\"t$lake\"): ", `"` + t.name + `$lake"`, int64(lakeRows)},
	} {
		read := func(keep bool) ([][]arrow.RecordBatch, error) { return scanNode(ctx, e, n.cl, v.table, v.rows, keep) }
		if err := scanVsCeiling(e, w, v.label, v.rows, 0, read, nil, ""); err != nil {
			return fmt.Errorf("scan %s: %w", v.table, err)
		}
		if cfg.CPUProfile != "" {
			path := scanProfilePath(cfg.CPUProfile, v.table)
			scan := func() (int64, int64, error) { _, err := read(false); return v.rows, 0, err }
			if err := profileQuery(e, path, "scan "+v.table, scan); err != nil {
				return fmt.Errorf("scan %s: profile: %w", v.table, err)
			}
		}
	}
	// The query workload's client code, on this node's connection.
	client := *e
	client.node = n.cl
	for _, qi := range unionQueries {
		q := benchQueries[qi]
		lakeSQL, duckSQL := fmt.Sprintf(q.sql, t.name), fmt.Sprintf(q.sql, "events")
		lake := func() (int64, int64, error) { return queryNode(ctx, &client, lakeSQL) }
		base := func() (int64, int64, error) { return duck.query(duckSQL, querySumCol) }
		if err := unionQuery(e, w, q.name, lake, base, qi == 0); err != nil {
			return fmt.Errorf("%s: %w", q.name, err)
		}
		if cfg.CPUProfile != "" {
			if err := profileQuery(e, profilePath(cfg.CPUProfile, qi), q.name, lake); err != nil {
				return fmt.Errorf("%s: profile: %w", q.name, err)
			}
		}
	}
	return n.dropTable(ctx, t)
}

// loadUnion ingests the rows, tiers the first lakeRows and leaves the rest
// in the log, checks the split, and returns the table and the paths of the
// snapshot's data files.
func loadUnion(ctx context.Context, e *env, n *lakeNode, w *WorkloadReport, lakeRows int) (lakeTableRef, []string, error) {
	cfg := e.cfg
	t, err := n.createTable(ctx, "union", cfg.Codec)
	if err != nil {
		return lakeTableRef{}, nil, err
	}
	cls, closeCls, err := dialN(n.addr, cfg.Writers)
	if err != nil {
		return lakeTableRef{}, nil, err
	}
	defer closeCls()
	ingest := func(from, rows int) (time.Duration, error) {
		recs := make([]arrow.RecordBatch, 0, rows/(64<<10)+1)
		for at := from; at < from+rows; at += 64 << 10 {
			recs = append(recs, events(int64(at), min(64<<10, from+rows-at)))
		}
		defer release(recs)
		e.prog.step(int64(rows), "rows", "union: loading %s rows", human(float64(rows)))
		return ingestAll(ctx, cls, t.name, recs, e.prog)
	}
	lakeLoad, err := ingest(0, lakeRows)
	if err != nil {
		return lakeTableRef{}, nil, err
	}
	e.prog.step(0, "", "union: tiering %s rows", human(float64(lakeRows)))
	start := time.Now()
	rounds, err := n.tierAll(ctx, t, int64(lakeRows))
	if err != nil {
		return lakeTableRef{}, nil, err
	}
	tierTime := time.Since(start)
	tailLoad, err := ingest(lakeRows, cfg.QueryRows-lakeRows)
	if err != nil {
		return lakeTableRef{}, nil, err
	}
	files, err := checkUnionSplit(ctx, n, t, int64(lakeRows), int64(cfg.QueryRows-lakeRows))
	if err != nil {
		return lakeTableRef{}, nil, err
	}
	w.Notes = append(w.Notes, fmt.Sprintf("loading took %s ms (ingest of the lake rows), %s ms (%d tiering round(s)), %s ms (ingest of the tail); the lake holds %d data files",
		human(ms(lakeLoad)), human(ms(tierTime)), rounds, human(ms(tailLoad)), len(files)))
	return t, files, nil
}

// checkUnionSplit checks that the lake snapshot holds lakeRows rows and the
// log tail above the tiered offsets tailRows, and returns the snapshot's
// data files as local paths.
func checkUnionSplit(ctx context.Context, n *lakeNode, t lakeTableRef, lakeRows, tailRows int64) ([]string, error) {
	var lag int64
	for _, b := range n.node.Lake().Status() {
		if b.Table == t.full {
			lag += b.LagRows
		}
	}
	if lag != tailRows {
		return nil, fmt.Errorf("%s: %d rows in the log tail, want %d", t.full, lag, tailRows)
	}
	tbl, err := n.lakeTable(ctx, t)
	if err != nil {
		return nil, err
	}
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		return nil, err
	}
	var rows int64
	files := make([]string, len(tasks))
	for i, task := range tasks {
		rows += task.File.Count()
		p, ok := strings.CutPrefix(task.File.FilePath(), "file://")
		if !ok {
			return nil, fmt.Errorf("data file %s is not local", task.File.FilePath())
		}
		files[i] = p
	}
	if rows != lakeRows {
		return nil, fmt.Errorf("%s: %d rows in the lake, want %d", t.full, rows, lakeRows)
	}
	return files, nil
}

// loadUnionBaseline gives DuckDB the view events: the data files through
// read_parquet, UNION ALL the tail rows [lakeRows, rows) in a native table.
func loadUnionBaseline(d *duckRef, files []string, lakeRows, rows int) error {
	var tail []arrow.RecordBatch
	for at := lakeRows; at < rows; at += 64 << 10 {
		tail = append(tail, events(int64(at), min(64<<10, rows-at)))
	}
	defer release(tail)
	if err := d.load("tail", tail); err != nil {
		return err
	}
	quoted := make([]string, len(files))
	for i, f := range files {
		quoted[i] = "'" + strings.ReplaceAll(f, "'", "''") + "'"
	}
	return d.exec("CREATE VIEW events AS SELECT id, amount, kind, ts FROM read_parquet([" + strings.Join(quoted, ", ") +
		"]) UNION ALL SELECT id, amount, kind, ts FROM tail")
}

// unionQuery checks that both sides give the same answer (with
// countsAll, that the groups count every row once), then measures Runs
// pairs, alternating which side goes first.
func unionQuery(e *env, w *WorkloadReport, name string, lake, base func() (int64, int64, error), countsAll bool) error {
	cfg := e.cfg
	lr, ls, err := lake()
	if err != nil {
		return err
	}
	dr, ds, err := base()
	if err != nil {
		return err
	}
	if lr != dr || ls != ds || lr == 0 {
		return fmt.Errorf("lakestream returned %d rows counting %d, duckdb %d rows counting %d", lr, ls, dr, ds)
	}
	if countsAll && ls != int64(cfg.QueryRows) {
		return fmt.Errorf("the groups count %d rows, want %d", ls, cfg.QueryRows)
	}
	var lakeMS, duckMS []float64
	timed := func(f func() (int64, int64, error), out *[]float64) func() error {
		return func() error {
			start := time.Now()
			_, _, err := f()
			*out = append(*out, ms(time.Since(start)))
			return err
		}
	}
	for run := 1; run <= cfg.Runs; run++ {
		e.prog.step(0, "", "union %s, run %d/%d", name, run, cfg.Runs)
		first, second := timed(lake, &lakeMS), timed(base, &duckMS)
		if run%2 == 0 {
			first, second = second, first
		}
		if err := first(); err != nil {
			return err
		}
		if err := second(); err != nil {
			return err
		}
	}
	w.figure(name, "lakestream", "time", "ms", lakeMS)
	w.figure(name, "duckdb-parquet", "time", "ms", duckMS)
	w.ratio(name, "lakestream", "duckdb-parquet", "time",
		"lower is better; 1 = as fast as DuckDB reading the same Parquet files plus the same tail", lakeMS, duckMS, 0, 2)
	e.prog.logf("union %s: lakestream %s ms, duckdb-parquet %s ms", name, human(summarize(lakeMS).Median), human(summarize(duckMS).Median))
	return nil
}

// profileQuery writes a CPU profile of the Lakestream side of a query, run
// again and again, untimed, for at least profileFor. The profile is of the
// whole process, client and server; DuckDB's own threads appear as
// runtime._ExternalCode (use perf for inside them).
func profileQuery(e *env, path, name string, lake func() (int64, int64, error)) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	e.prog.step(0, "", "union %s: CPU profile to %s", name, path)
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return err
	}
	runs := 0
	for start := time.Now(); time.Since(start) < profileFor || runs < e.cfg.Runs; runs++ {
		if _, _, err = lake(); err != nil {
			break
		}
	}
	pprof.StopCPUProfile()
	err = errors.Join(err, f.Close())
	e.prog.logf("union %s: CPU profile of %d runs in %s", name, runs, path)
	return err
}

// profileFor is the least time profileQuery spends running a query.
const profileFor = 5 * time.Second

// profilePath is the profile file of query qi: base with "-q<qi+1>"
// before its extension.
// scanProfilePath is the profile of a scan of table: base with "-scan"
// or "-scan-lake" before its extension.
func scanProfilePath(base, table string) string {
	ext, which := filepath.Ext(base), "-scan"
	if strings.Contains(table, "$lake") {
		which = "-scan-lake"
	}
	return strings.TrimSuffix(base, ext) + which + ext
}

func profilePath(base string, qi int) string {
	ext := filepath.Ext(base)
	return fmt.Sprintf("%s-q%d%s", strings.TrimSuffix(base, ext), qi+1, ext)
}

// unionColdRuns times the first union read of freshly tiered files: for
// each union query and each run, a table of its own is loaded and tiered as
// loadUnion does (untimed), the query timed once on the node, then DuckDB's
// on the same new files plus the tail right after, so that each ratio pairs
// two times taken under the same load. The node's log tail was just written
// (and so is in its read cache); its data files were never read.
func unionColdRuns(ctx context.Context, e *env, n *lakeNode, lakeRows int) (*WorkloadReport, error) {
	cfg := e.cfg
	w := &WorkloadReport{}
	client := *e
	client.node = n.cl
	for _, qi := range unionQueries {
		q := benchQueries[qi]
		name := q.name + ", cold"
		var lakeMS, duckMS []float64
		for run := 1; run <= cfg.Runs; run++ {
			e.prog.step(0, "", "union %s, run %d/%d", name, run, cfg.Runs)
			lm, dm, err := unionColdRun(ctx, e, &client, n, lakeRows, q.sql)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			lakeMS, duckMS = append(lakeMS, lm), append(duckMS, dm)
		}
		w.figure(name, "lakestream", "time", "ms", lakeMS)
		w.figure(name, "duckdb-parquet", "time", "ms", duckMS)
		w.ratio(name, "lakestream", "duckdb-parquet", "time",
			"lower is better; the first read of freshly tiered files (plus the tail), against DuckDB reading the same files", lakeMS, duckMS, 0, 1.5)
		e.prog.logf("union %s: lakestream %s ms, duckdb-parquet %s ms", name, human(summarize(lakeMS).Median), human(summarize(duckMS).Median))
	}
	return w, nil
}

// unionColdRun loads one union table, times sql on the node and on DuckDB
// once each, checks they agree and drops the table.
func unionColdRun(ctx context.Context, e, client *env, n *lakeNode, lakeRows int, sql string) (lakeMS, duckMS float64, err error) {
	t, files, err := loadUnion(ctx, e, n, &WorkloadReport{}, lakeRows)
	if err != nil {
		return 0, 0, err
	}
	duck, err := openDuck()
	if err != nil {
		return 0, 0, err
	}
	defer duck.close()
	if err := loadUnionBaseline(duck, files, lakeRows, e.cfg.QueryRows); err != nil {
		return 0, 0, err
	}
	start := time.Now()
	lr, ls, err := queryNode(ctx, client, fmt.Sprintf(sql, t.name))
	lakeMS = ms(time.Since(start))
	if err != nil {
		return 0, 0, err
	}
	start = time.Now()
	dr, ds, err := duck.query(fmt.Sprintf(sql, "events"), querySumCol)
	duckMS = ms(time.Since(start))
	if err != nil {
		return 0, 0, fmt.Errorf("duckdb: %w", err)
	}
	if lr != dr || ls != ds || lr == 0 {
		return 0, 0, fmt.Errorf("lakestream returned %d rows counting %d, duckdb %d rows counting %d", lr, ls, dr, ds)
	}
	return lakeMS, duckMS, n.dropTable(ctx, t)
}
