package bench

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
)

// The pklake workload (docs/benchmarks.md, "Primary-key tables in the
// lake"): primary-key tables tiered into Iceberg, on a lake node of its own
// (lake.go: rounds run when the workload asks). The rows are the pk
// workload's (pk_data.go): row i writes key id(i) of a key space of K keys,
// rows [0, K) insert every key, row K+j updates key id(K+j).
//
//  1. tiering of a 50%-update stream: Config.PKLakeUpdates inserts
//     ingested (untimed) and tiered (timed), then as many updates of those
//     keys ingested (untimed) and tiered (timed), into a primary-key table
//     — the second round writes position deletes for the rows it
//     supersedes — against the same two steps of the same rows into a log
//     table; rows/s per core (GOMAXPROCS) and per CPU-second of the
//     stream's rows, the ratio's goal ≥ 0.5. Each side's lake is checked
//     (`"t$lake"` counts one row per key, or every row).
//  2. union read: Config.PKLakeKeys keys tiered, then Config.PKLakeUpdates
//     of them updated and left in the log tail; pkQuery (GROUP BY kind)
//     through Flight SQL against DuckDB in this process over a native
//     table of the same final rows (pkFinal), goal ≤ 2×, the answers equal.
//  3. pyiceberg: the tail of 2 tiered too (the union still counting K),
//     then pyiceberg's
//     scan().to_arrow() of that table (position deletes applied) against
//     the same of a log table tiered with the final rows alone; both in
//     one Python process (the .venv's python at the root of the source
//     tree, pklake_pyiceberg.py), timed inside it, each table's row count
//     checked; goal ≤ 1.3×. Then again after a maintenance pass, which
//     (the table's log.retention being 1ms) applies the position deletes
//     of every file that has any: pyiceberg pays for every row of a data
//     file with deletes, so only a lake without them meets the goal.

//go:embed pklake_pyiceberg.py
var pyicebergScript string

func runPKLake(ctx context.Context, e *env) (*WorkloadReport, error) {
	cfg := e.cfg
	w := &WorkloadReport{Name: "pklake", About: fmt.Sprintf(
		"primary-key tables in the lake (%d buckets, position deletes): tiering of a %s-row stream, half of it updates, vs a log table; "+
			"GROUP BY over %s keys in the lake with %s updated keys in the log tail vs DuckDB over a native table of the final rows; "+
			"pyiceberg's scan().to_arrow() of the tiered primary-key table vs of a log table of the same final rows",
		tableBuckets, human(float64(2*cfg.PKLakeUpdates)), human(float64(cfg.PKLakeKeys)), human(float64(cfg.PKLakeUpdates)))}
	n, err := startLakeNode(ctx, cfg, "lake-pk")
	if err != nil {
		return nil, err
	}
	err = pkLakeTiering(ctx, e, n, w)
	if err == nil {
		err = pkLakeReads(ctx, e, n, w)
	}
	if err = errors.Join(err, n.close()); err != nil {
		return nil, err
	}
	return w, nil
}

// createPKLakeTable creates a primary-key table of the event columns that
// tiers (datalake.enabled, the default), with the extra WITH options opts
// (", 'k'='v'…").
func (n *lakeNode) createPKLakeTable(ctx context.Context, prefix, codec, opts string) (lakeTableRef, error) {
	n.created++
	name := fmt.Sprintf("%s_%d", prefix, n.created)
	ddl := fmt.Sprintf("CREATE TABLE %s (id BIGINT NOT NULL, amount DOUBLE, kind VARCHAR, ts TIMESTAMPTZ, PRIMARY KEY (id)) "+
		"WITH ('bucket.num'='%d', 'log.compression'='%s'%s)", name, tableBuckets, codec, opts)
	if _, err := n.cl.ExecuteUpdate(ctx, ddl); err != nil {
		return lakeTableRef{}, fmt.Errorf("%s: %w", ddl, err)
	}
	t, err := n.node.Tables().Get(ctx, "", name)
	if err != nil {
		return lakeTableRef{}, err
	}
	def := t.Def()
	return lakeTableRef{id: def.ID, db: def.DB, name: def.Name, full: def.FullName()}, nil
}

// pkRows are rows [from, to) of ks's sequence in batches of at most bs.
func pkRows(ks pkKeyspace, from, to int64, bs int) []arrow.RecordBatch {
	var out []arrow.RecordBatch
	b := newPKBuilder(bs)
	defer b.release()
	for i := from; i < to; i++ {
		b.add(i, ks.id(i))
		if b.n == bs {
			out = append(out, b.flush(bs))
		}
	}
	if b.n > 0 {
		out = append(out, b.flush(0))
	}
	return out
}

// tierUp runs rounds of t until a round is not truncated (a primary-key
// round tiers one published state whole, MaxRoundRows notwithstanding).
func (n *lakeNode) tierUp(ctx context.Context, t lakeTableRef) (rounds int, err error) {
	for {
		res, err := n.node.Lake().Round(ctx, t.id)
		if err != nil {
			return rounds, fmt.Errorf("tiering round %d of %s: %w", rounds+1, t.full, err)
		}
		rounds++
		if !res.Truncated {
			return rounds, nil
		}
	}
}

// countSQL is the count(*) of table (a name or a quoted "t$lake") on cl.
func countSQL(ctx context.Context, cl *flightsql.Client, table string) (int64, error) {
	info, err := cl.Execute(ctx, "SELECT count(*) FROM "+table)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, ep := range info.GetEndpoint() {
		rdr, err := cl.DoGet(ctx, ep.GetTicket())
		if err != nil {
			return 0, err
		}
		for rdr.Next() {
			col, ok := rdr.RecordBatch().Column(0).(*array.Int64)
			if !ok || col.Len() != 1 {
				rdr.Release()
				return 0, fmt.Errorf("count(*) of %s: unexpected result", table)
			}
			n += col.Value(0)
		}
		err = rdr.Err()
		rdr.Release()
		if err != nil {
			return 0, err
		}
	}
	return n, nil
}

func checkCount(ctx context.Context, cl *flightsql.Client, table string, want int64) error {
	got, err := countSQL(ctx, cl, table)
	if err != nil {
		return fmt.Errorf("count %s: %w", table, err)
	}
	if got != want {
		return fmt.Errorf("%s holds %d rows, want %d", table, got, want)
	}
	return nil
}

func lakeOf(t lakeTableRef) string { return `"` + t.name + `$lake"` }

// pkLakeMissing reports a primary-key side that could not run: the node
// does not tier primary-key tables (yet), or its round failed.
func pkLakeMissing(w *WorkloadReport, what string, err error) {
	w.missing("lakestream primary-key table in the lake ("+what+")", firstLine(err.Error()))
}

// pkLakeTiering measures 1: Runs pairs of (primary-key table, log table),
// alternating which goes first.
func pkLakeTiering(ctx context.Context, e *env, n *lakeNode, w *WorkloadReport) error {
	cfg := e.cfg
	k := int64(cfg.PKLakeUpdates)
	ks := newPKKeyspace(int(k))
	inserts, updates := pkRows(ks, 0, k, 64<<10), pkRows(ks, k, 2*k, 64<<10)
	defer release(inserts)
	defer release(updates)
	cls, closeCls, err := dialN(n.addr, cfg.Writers)
	if err != nil {
		return err
	}
	defer closeCls()
	// side runs the stream into a new table: each half ingested (untimed)
	// and tiered (timed).
	side := func(pk bool, run int) (throughputRun, error) {
		var res throughputRun
		kind, create, want := "log", n.createTable, 2*k
		if pk {
			kind, want = "primary-key", k
			create = func(ctx context.Context, prefix, codec string) (lakeTableRef, error) {
				return n.createPKLakeTable(ctx, prefix, codec, "")
			}
		}
		t, err := create(ctx, "pkl_tier", cfg.Codec)
		if err != nil {
			return res, err
		}
		for half, recs := range [][]arrow.RecordBatch{inserts, updates} {
			e.prog.step(k, "rows", "pklake tiering run %d/%d, %s table: ingest of the %s (untimed)", run, cfg.Runs, kind, []string{"inserts", "updates"}[half])
			if _, err := ingestAll(ctx, cls, t.name, recs, e.prog); err != nil {
				return res, err
			}
			e.prog.step(0, "", "pklake tiering run %d/%d, %s table: rounds", run, cfg.Runs, kind)
			cpu0, start := cpuTime(), time.Now()
			rounds, err := n.tierUp(ctx, t)
			res.wall, res.cpu, res.rounds = res.wall+time.Since(start), res.cpu+cpuTime()-cpu0, res.rounds+rounds
			if err != nil {
				return res, errors.Join(err, n.dropTable(ctx, t))
			}
		}
		if err := checkCount(ctx, n.cl, lakeOf(t), want); err != nil {
			return res, err
		}
		return res, n.dropTable(ctx, t)
	}
	var pk, lg throughputRuns
	var pkErr error
	for run := 1; run <= cfg.Runs; run++ {
		sides := []func() error{
			func() error { return lg.add(side(false, run)) },
			func() error {
				if pkErr != nil {
					return nil
				}
				r, err := side(true, run)
				if err != nil {
					pkErr = err
					return nil
				}
				return pk.add(r, nil)
			},
		}
		if run%2 == 0 {
			sides[0], sides[1] = sides[1], sides[0]
		}
		for _, s := range sides {
			if err := s(); err != nil {
				return err
			}
		}
	}
	rows, procs := float64(2*k), float64(runtime.GOMAXPROCS(0))
	per := func(amount float64, secs []float64) []float64 {
		out := make([]float64, len(secs))
		for i, s := range secs {
			out[i] = amount / s
		}
		return out
	}
	group := fmt.Sprintf("tiering a %s-row stream (%s inserts, then %s updates), %d buckets", human(rows), human(float64(k)), human(float64(k)), tableBuckets)
	sides := []struct {
		name string
		runs *throughputRuns
	}{{"log table", &lg}}
	if pkErr == nil {
		sides = append(sides, struct {
			name string
			runs *throughputRuns
		}{"primary-key table", &pk})
	}
	for _, s := range sides {
		w.figure(group, s.name, "throughput", "rows/s", per(rows, s.runs.wall))
		w.figure(group, s.name, "per core", "rows/s", per(rows/procs, s.runs.wall))
		w.figure(group, s.name, "per CPU-second", "rows", per(rows, s.runs.cpu))
	}
	if pkErr != nil {
		pkLakeMissing(w, "tiering", pkErr)
		e.prog.logf("pklake %s: log table %s rows/s; primary-key table not measured: %v", group, human(summarize(per(rows, lg.wall)).Median), firstLine(pkErr.Error()))
		return nil
	}
	w.ratio(group, "primary-key table", "log table", "per core", "higher is better; rows of the stream per second per core, 1 = as fast as a log table",
		per(rows/procs, pk.wall), per(rows/procs, lg.wall), 0.5, 0)
	w.ratio(group, "primary-key table", "log table", "per CPU-second", "higher is better; rows of the stream per CPU-second, all threads of the process",
		per(rows, pk.cpu), per(rows, lg.cpu), 0, 0)
	w.Notes = append(w.Notes, fmt.Sprintf("tiering: %d round(s) per run for the primary-key table, %d for the log table; GOMAXPROCS %d",
		pk.rounds, lg.rounds, int(procs)))
	e.prog.logf("pklake %s: primary-key table %s rows/s, log table %s rows/s", group,
		human(summarize(per(rows, pk.wall)).Median), human(summarize(per(rows, lg.wall)).Median))
	return nil
}

// pkLakeReads measures 2 and 3.
func pkLakeReads(ctx context.Context, e *env, n *lakeNode, w *WorkloadReport) error {
	cfg := e.cfg
	k, u := int64(cfg.PKLakeKeys), int64(cfg.PKLakeUpdates)
	ks := newPKKeyspace(int(k))
	cls, closeCls, err := dialN(n.addr, cfg.Writers)
	if err != nil {
		return err
	}
	defer closeCls()
	ingest := func(t lakeTableRef, recs []arrow.RecordBatch, what string) error {
		defer release(recs)
		e.prog.step(totalRows(recs), "rows", "pklake: %s", what)
		_, err := ingestAll(ctx, cls, t.name, recs, e.prog)
		return err
	}
	final := pkFinal(ks, int(k+u), 64<<10)
	defer release(final)

	// The log table of the final rows, for pyiceberg.
	lg, err := n.createTable(ctx, "pkl_log", cfg.Codec)
	if err != nil {
		return err
	}
	if err := ingest(lg, retain(final), "the final rows into a log table"); err != nil {
		return err
	}
	if _, err := n.tierUp(ctx, lg); err != nil {
		return err
	}
	if err := checkCount(ctx, n.cl, lakeOf(lg), k); err != nil {
		return err
	}

	// log.retention 1ms: compaction may collapse every file of the lake
	// (docs/lake.md, "Maintenance"), for the figure after compaction.
	pk, err := n.createPKLakeTable(ctx, "pkl_union", cfg.Codec, ", 'log.retention'='1ms'")
	if err != nil {
		return err
	}
	if err := ingest(pk, pkRows(ks, 0, k, 64<<10), fmt.Sprintf("%s keys into a primary-key table", human(float64(k)))); err != nil {
		return err
	}
	e.prog.step(0, "", "pklake: tiering %s keys", human(float64(k)))
	start := time.Now()
	if _, err := n.tierUp(ctx, pk); err != nil {
		pkLakeMissing(w, "union read and pyiceberg", err)
		return pyicebergLogOnly(ctx, e, n, w, lg, k)
	}
	tierTime := time.Since(start)
	if err := ingest(pk, pkRows(ks, k, k+u, 64<<10), fmt.Sprintf("%s updates into the log tail", human(float64(u)))); err != nil {
		return err
	}
	if err := checkCount(ctx, n.cl, lakeOf(pk), k); err != nil {
		return fmt.Errorf("the lake before the tail: %w", err)
	}
	if err := checkCount(ctx, n.cl, pk.name, k); err != nil {
		return fmt.Errorf("the union: %w", err)
	}

	duck, err := openDuck()
	if err != nil {
		return err
	}
	defer duck.close()
	if err := duck.load("pkstate", final); err != nil {
		return err
	}
	client := *e
	client.node = n.cl
	engines := []queryEngine{
		{system: "lakestream", query: func(ctx context.Context, tmpl string) (int64, int64, error) {
			return queryNode(ctx, &client, fmt.Sprintf(tmpl, pk.name))
		}},
		{system: "duckdb", atMost: 2, query: func(_ context.Context, tmpl string) (int64, int64, error) {
			return duck.query(fmt.Sprintf(tmpl, "pkstate"), querySumCol)
		}},
	}
	name := fmt.Sprintf("GROUP BY over %s keys in the lake, %s of them updated in the log tail", human(float64(k)), human(float64(u)))
	if err := queryRuns(ctx, e, w, name, pkQuery, engines); err != nil {
		return err
	}

	e.prog.step(0, "", "pklake: tiering the tail")
	if _, err := n.tierUp(ctx, pk); err != nil {
		return err
	}
	// pyiceberg counts the lake's rows (position deletes applied) below.
	if err := checkCount(ctx, n.cl, pk.name, k); err != nil {
		return fmt.Errorf("the union after the tail: %w", err)
	}
	w.Notes = append(w.Notes, fmt.Sprintf("union read: tiering the %s keys took %s ms; then the tail was tiered for pyiceberg (its lake: %s)",
		human(float64(k)), human(ms(tierTime)), lakeDeletesShape(ctx, n, pk)))
	times, err := pyicebergScans(ctx, e, n, []lakeTableRef{pk, lg}, k)
	if err != nil {
		w.missing("pyiceberg", err.Error())
		return nil
	}
	group := fmt.Sprintf("pyiceberg scan().to_arrow() of %s final rows", human(float64(k)))
	w.figure(group, "primary-key table", "time", "ms", times[0])
	w.figure(group, "log table", "time", "ms", times[1])
	w.ratio(group, "primary-key table", "log table", "time", "lower is better; 1 = the position deletes cost pyiceberg nothing",
		times[0], times[1], 0, 1.3)
	e.prog.logf("pklake %s: primary-key table %s ms, log table %s ms", group, human(summarize(times[0]).Median), human(summarize(times[1]).Median))

	// After a maintenance pass, as the node's loop runs one every
	// EveryRounds rounds: compaction applies the position deletes.
	e.prog.step(0, "", "pklake: maintenance of %s", pk.full)
	start = time.Now()
	res, err := n.node.Lake().Maintain(ctx, pk.id, false)
	if err != nil {
		return fmt.Errorf("maintenance of %s: %w", pk.full, err)
	}
	w.Notes = append(w.Notes, fmt.Sprintf("pyiceberg after compaction: the maintenance pass took %s ms and compacted %d data files (the lake then: %s)",
		human(ms(time.Since(start))), res.FilesCompacted, lakeDeletesShape(ctx, n, pk)))
	if times, err = pyicebergScans(ctx, e, n, []lakeTableRef{pk, lg}, k); err != nil {
		return err
	}
	const compacted = "primary-key table, compacted"
	w.figure(group, compacted, "time", "ms", times[0])
	w.figure(group, "log table (again)", "time", "ms", times[1])
	w.ratio(group, compacted, "log table (again)", "time", "lower is better; after a maintenance pass", times[0], times[1], 0, 1.3)
	return errors.Join(n.dropTable(ctx, pk), n.dropTable(ctx, lg))
}

// pyicebergLogOnly runs 3 on the log table alone, when the primary-key
// table could not be tiered: the figure of the log side, no ratio.
func pyicebergLogOnly(ctx context.Context, e *env, n *lakeNode, w *WorkloadReport, lg lakeTableRef, k int64) error {
	times, err := pyicebergScans(ctx, e, n, []lakeTableRef{lg}, k)
	if err != nil {
		w.missing("pyiceberg", err.Error())
		return nil
	}
	w.figure(fmt.Sprintf("pyiceberg scan().to_arrow() of %s final rows", human(float64(k))), "log table", "time", "ms", times[0])
	return n.dropTable(ctx, lg)
}

// lakeDeletesShape counts the data and position delete files of t's lake
// snapshot.
func lakeDeletesShape(ctx context.Context, n *lakeNode, t lakeTableRef) string {
	tbl, err := n.lakeTable(ctx, t)
	if err != nil {
		return "?"
	}
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		return "?"
	}
	deletes := map[string]bool{}
	for _, task := range tasks {
		for _, d := range task.DeleteFiles {
			deletes[d.FilePath()] = true
		}
	}
	return fmt.Sprintf("%d data files, %d position delete files", len(tasks), len(deletes))
}

// venvPython is the .venv's python at the root of the source tree (found
// from the working directory up, beside go.mod), or "".
func venvPython() string {
	wd, err := os.Getwd()
	if err != nil {
		return ""
	}
	for d := wd; ; d = filepath.Dir(d) {
		if p := filepath.Join(d, ".venv", "bin", "python"); fileExists(filepath.Join(d, "go.mod")) && fileExists(p) {
			return p
		}
		if filepath.Dir(d) == d {
			return ""
		}
	}
}

// pyicebergScans times Config.Runs runs of pyiceberg's scan().to_arrow()
// of each table, in one Python process (rotating which goes first), and
// checks that each returns rows rows; times[i] are table i's, in ms.
func pyicebergScans(ctx context.Context, e *env, n *lakeNode, ts []lakeTableRef, rows int64) ([][]float64, error) {
	py := venvPython()
	if py == "" {
		return nil, errors.New("not measured: no .venv/bin/python at the root of the source tree (make venv)")
	}
	var args []string
	for _, t := range ts {
		args = append(args, t.db+"."+t.name)
	}
	e.prog.step(0, "", "pklake: pyiceberg scans of %s", strings.Join(args, ", "))
	cmd := exec.CommandContext(ctx, py, append([]string{"-c", pyicebergScript, filepath.Join(n.dir, "iceberg.db"), fmt.Sprint(e.cfg.Runs)}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("pyiceberg (%s): %v: %s", py, err, strings.TrimSpace(stderr.String()))
	}
	var out struct {
		Rows  []int64     `json:"rows"`
		Times [][]float64 `json:"times"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		return nil, fmt.Errorf("pyiceberg output %q: %w", stdout.String(), err)
	}
	if len(out.Rows) != len(ts) || len(out.Times) != len(ts) {
		return nil, fmt.Errorf("pyiceberg output %q: want %d tables", stdout.String(), len(ts))
	}
	for i, r := range out.Rows {
		if r != rows {
			return nil, fmt.Errorf("pyiceberg read %d rows of %s, want %d", r, args[i], rows)
		}
	}
	return out.Times, nil
}

// retain is recs retained once more, for a second consumer that releases
// them.
func retain(recs []arrow.RecordBatch) []arrow.RecordBatch {
	for _, r := range recs {
		r.Retain()
	}
	return recs
}
