package bench

// The tiering workload; lake.go describes it and its node.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/lakestream/lakestream/internal/scan"
)

func runTiering(ctx context.Context, e *env) (*WorkloadReport, error) {
	cfg := e.cfg
	w := &WorkloadReport{Name: "tiering", About: fmt.Sprintf(
		"tiering rounds into Iceberg (iceberg-go, SQLite catalog, file:// warehouse, zstd Parquet): throughput of a %s-row backlog "+
			"vs pqarrow writing the same rows to zstd Parquet; commit, plan and round time over %d rounds of %s rows, late ÷ early and late ÷ middle",
		human(float64(cfg.Rows)), cfg.LakeRounds, human(flatIngestRows))}
	n, err := startLakeNode(ctx, cfg, "lake-tiering")
	if err != nil {
		return nil, err
	}
	err = tieringThroughput(ctx, e, n, w)
	if err == nil {
		err = tieringFlatness(ctx, e, n, w, true)
	}
	if err == nil {
		err = tieringFlatness(ctx, e, n, w, false)
	}
	if err = errors.Join(err, n.close()); err != nil {
		return nil, err
	}
	return w, nil
}

// tieringThroughput measures (a): Runs pairs of (Lakestream, pqarrow),
// alternating which goes first.
func tieringThroughput(ctx context.Context, e *env, n *lakeNode, w *WorkloadReport) error {
	cfg := e.cfg
	recs := batches(cfg.Rows, 64<<10)
	defer release(recs)
	cls, closeCls, err := dialN(n.addr, cfg.Writers)
	if err != nil {
		return err
	}
	defer closeCls()
	var lake, ceil throughputRuns
	for run := 1; run <= cfg.Runs; run++ {
		sides := []func() error{
			func() error { return lake.add(tierBacklog(ctx, e, n, cls, recs, run)) },
			func() error { return ceil.add(writeCeiling(e, n, recs, run)) },
		}
		if run%2 == 0 {
			sides[0], sides[1] = sides[1], sides[0]
		}
		for _, side := range sides {
			if err := side(); err != nil {
				return err
			}
		}
	}
	reportThroughput(e, w, recs, &lake, &ceil)
	return nil
}

// throughputRuns are one side's runs of (a).
type throughputRuns struct {
	wall, cpu []float64 // s
	bytes     int64     // of the data files, last run
	rounds    int       // tiering rounds, last run
}

// throughputRun is one run of one side of (a).
type throughputRun struct {
	wall, cpu time.Duration
	bytes     int64
	rounds    int
}

func (r *throughputRuns) add(run throughputRun, err error) error {
	if err != nil {
		return err
	}
	r.wall, r.cpu = append(r.wall, run.wall.Seconds()), append(r.cpu, run.cpu.Seconds())
	r.bytes, r.rounds = run.bytes, run.rounds
	return nil
}

// tierBacklog ingests recs into a new table (untimed), then times the
// rounds that tier them.
func tierBacklog(ctx context.Context, e *env, n *lakeNode, cls []*flightsql.Client, recs []arrow.RecordBatch, run int) (throughputRun, error) {
	cfg := e.cfg
	var res throughputRun
	t, err := n.createTable(ctx, "tiering", cfg.Codec)
	if err != nil {
		return res, err
	}
	e.prog.step(int64(cfg.Rows), "rows", "tiering run %d/%d: ingest (untimed)", run, cfg.Runs)
	if _, err := ingestAll(ctx, cls, t.name, recs, e.prog); err != nil {
		return res, err
	}
	e.prog.step(0, "", "tiering run %d/%d: rounds", run, cfg.Runs)
	cpu0, start := cpuTime(), time.Now()
	if res.rounds, err = n.tierAll(ctx, t, int64(cfg.Rows)); err != nil {
		return res, err
	}
	res.wall, res.cpu = time.Since(start), cpuTime()-cpu0
	if res.bytes, err = lakeDataBytes(ctx, n, t); err != nil {
		return res, err
	}
	return res, n.dropTable(ctx, t)
}

// writeCeiling times pqarrow writing recs, one file per bucket.
func writeCeiling(e *env, n *lakeNode, recs []arrow.RecordBatch, run int) (throughputRun, error) {
	var res throughputRun
	e.prog.step(0, "", "tiering run %d/%d: pqarrow", run, e.cfg.Runs)
	dir, err := os.MkdirTemp(n.dir, "pqarrow-")
	if err != nil {
		return res, err
	}
	cpu0, start := cpuTime(), time.Now()
	res.bytes, err = writeParquetFiles(dir, recs, tableBuckets)
	res.wall, res.cpu = time.Since(start), cpuTime()-cpu0
	return res, errors.Join(err, os.RemoveAll(dir))
}

// reportThroughput adds the figures of (a): rows/s, MB/s, rows/s per core
// (GOMAXPROCS) and rows per CPU-second of both sides, and their ratios.
func reportThroughput(e *env, w *WorkloadReport, recs []arrow.RecordBatch, lake, ceil *throughputRuns) {
	rows, procs := float64(e.cfg.Rows), float64(runtime.GOMAXPROCS(0))
	per := func(amount float64, secs []float64) []float64 {
		out := make([]float64, len(secs))
		for i, s := range secs {
			out[i] = amount / s
		}
		return out
	}
	group := fmt.Sprintf("%s-row backlog, %d buckets", human(rows), tableBuckets)
	for _, side := range []struct {
		name string
		runs *throughputRuns
	}{{"lakestream", lake}, {"pqarrow", ceil}} {
		w.figure(group, side.name, "throughput", "rows/s", per(rows, side.runs.wall))
		w.figure(group, side.name, "throughput", "MB/s", per(float64(totalBytes(recs))/1e6, side.runs.wall))
		w.figure(group, side.name, "per core", "rows/s", per(rows/procs, side.runs.wall))
		w.figure(group, side.name, "per CPU-second", "rows", per(rows, side.runs.cpu))
	}
	w.ratio(group, "lakestream", "pqarrow", "throughput", "higher is better; 1 = as fast as writing the Parquet files alone",
		per(rows, lake.wall), per(rows, ceil.wall), 0, 0)
	w.ratio(group, "lakestream", "pqarrow", "per CPU-second", "higher is better; rows per CPU-second, all threads of the process",
		per(rows, lake.cpu), per(rows, ceil.cpu), 0, 0)
	w.Notes = append(w.Notes, fmt.Sprintf("the %s-row backlog took %d round(s); data files: lake %s MB, pqarrow %s MB (%d files); GOMAXPROCS %d",
		human(rows), lake.rounds, human(float64(lake.bytes)/1e6), human(float64(ceil.bytes)/1e6), tableBuckets, int(procs)))
	e.prog.logf("tiering %s: lakestream %s rows/s, pqarrow %s rows/s", group,
		human(summarize(per(rows, lake.wall)).Median), human(summarize(per(rows, ceil.wall)).Median))
}

// lakeDataBytes is the size of the data files of t's current snapshot.
func lakeDataBytes(ctx context.Context, n *lakeNode, t lakeTableRef) (int64, error) {
	tbl, err := n.lakeTable(ctx, t)
	if err != nil {
		return 0, err
	}
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		return 0, err
	}
	var size int64
	for _, task := range tasks {
		size += task.File.FileSizeBytes()
	}
	return size, nil
}

// writeParquetFiles writes the rows of recs to files zstd Parquet files in
// dir, the files in parallel, file i with the i-th share of every record's
// rows (so that each holds as many rows as a bucket's file of the lake),
// with iceberg-go's default writer settings (table/internal/
// parquet_files.go), and returns their total size.
func writeParquetFiles(dir string, recs []arrow.RecordBatch, files int) (int64, error) {
	props := ceilingProps()
	sizes := make([]int64, files)
	errs := make([]error, files)
	var wg sync.WaitGroup
	for i := range files {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sizes[i], errs[i] = writeParquetFile(filepath.Join(dir, fmt.Sprintf("%d.parquet", i)), recs, i, files, props)
		}()
	}
	wg.Wait()
	var total int64
	for _, s := range sizes {
		total += s
	}
	return total, errors.Join(errs...)
}

// ceilingProps are iceberg-go's default Parquet writer settings, and the
// encodings of the files the lake ends up with: a dictionary for kind only.
// (The lake's writer drops the dictionaries of the unique columns id,
// amount and ts before their first page, as parquet metadata of its files
// shows; written here with dictionaries, the same rows took about twice
// the CPU, 17 MB instead of 14, and the ceiling fell below the lake.)
func ceilingProps() *parquet.WriterProperties {
	return parquet.NewWriterProperties(
		parquet.WithDictionaryDefault(false),
		parquet.WithDictionaryFor("kind", true),
		parquet.WithCompression(compress.Codecs.Zstd),
		parquet.WithCompressionLevel(table.ParquetCompressionLevelDefault),
		parquet.WithMaxRowGroupLength(table.ParquetRowGroupLimitDefault),
		parquet.WithDataPageSize(table.ParquetPageSizeBytesDefault),
		parquet.WithDataPageVersion(parquet.DataPageV2),
		parquet.WithBatchSize(table.ParquetPageRowLimitDefault),
		parquet.WithDictionaryPageSizeLimit(table.ParquetDictSizeBytesDefault),
	)
}

// writeParquetFile writes share i of n of every record's rows to path.
func writeParquetFile(path string, recs []arrow.RecordBatch, i, n int, props *parquet.WriterProperties) (int64, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	fw, err := pqarrow.NewFileWriter(eventsSchema, f, props, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		f.Close()
		return 0, err
	}
	for _, rec := range recs {
		rows := rec.NumRows()
		part := rec.NewSlice(rows*int64(i)/int64(n), rows*int64(i+1)/int64(n))
		err := fw.WriteBuffered(part)
		part.Release()
		if err != nil {
			fw.Close()
			return 0, fmt.Errorf("write %s: %w", path, err)
		}
	}
	if err := fw.Close(); err != nil { // closes f
		return 0, fmt.Errorf("write %s: %w", path, err)
	}
	st, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

// flatSample is one round of the flatness series, in ms; plan is measured
// in the windows only (without maintenance it grows to seconds).
type flatSample struct{ commit, round, plan float64 }

// flatSeries is what one flatness series measured.
type flatSeries struct {
	rounds   []flatSample
	passes   []float64 // ms of each maintenance pass
	compacts []int     // data files each pass compacted
	failed   int       // maintenance passes that returned an error
	firstErr error
}

// flatWindows are the windows of a series of n rounds: the first, the
// middle (the table long in its steady state) and the last lakeWindow
// rounds, as [from, to) indexes.
func flatWindows(n int) (early, mid, late [2]int) {
	m := n/2 - lakeWindow/2
	return [2]int{0, lakeWindow}, [2]int{m, m + lakeWindow}, [2]int{n - lakeWindow, n}
}

func inWindow(i int, ws ...[2]int) bool {
	for _, w := range ws {
		if i >= w[0] && i < w[1] {
			return true
		}
	}
	return false
}

// tieringFlatness measures (b) once, with or without maintenance.
func tieringFlatness(ctx context.Context, e *env, n *lakeNode, w *WorkloadReport, maintained bool) error {
	cfg := e.cfg
	t, err := n.createTable(ctx, "flat", cfg.Codec)
	if err != nil {
		return err
	}
	label := "with maintenance"
	if !maintained {
		label = "without maintenance"
		if err := setLakeProperty(ctx, n, t, table.ManifestMergeEnabledKey, "false"); err != nil {
			return err
		}
	}
	e.prog.step(int64(cfg.LakeRounds), "rounds", "tiering: %d rounds of %s rows, %s", cfg.LakeRounds, human(flatIngestRows), label)
	fs, err := runFlatSeries(ctx, e, n, t, maintained)
	if err != nil {
		return fmt.Errorf("%s: %w", label, err)
	}
	shape, err := lakeShape(ctx, n, t)
	if err != nil {
		return err
	}
	reportFlatness(e, w, label, fs)
	w.Notes = append(w.Notes, fmt.Sprintf("%s, after %d rounds: %s", label, cfg.LakeRounds, shape))
	return n.dropTable(ctx, t)
}

// runFlatSeries runs Config.LakeRounds rounds of t, and with maintained the
// maintenance passes the node's loop would run after them.
func runFlatSeries(ctx context.Context, e *env, n *lakeNode, t lakeTableRef, maintained bool) (*flatSeries, error) {
	cfg := e.cfg
	fs := &flatSeries{rounds: make([]flatSample, 0, cfg.LakeRounds)}
	early, mid, late := flatWindows(cfg.LakeRounds)
	for r := 1; r <= cfg.LakeRounds; r++ {
		s, err := flatRound(ctx, n, t, r, inWindow(r-1, early, mid, late))
		if err != nil {
			return nil, fmt.Errorf("round %d: %w", r, err)
		}
		fs.rounds = append(fs.rounds, s)
		if maintained && r%lakeMaintainEvery == 0 {
			// As in the node's loop (tiering.Service.runTable), a failed
			// pass is reported and the rounds go on.
			start := time.Now()
			res, err := n.node.Lake().Maintain(ctx, t.id, r%lakeOrphansEvery == 0)
			fs.passes, fs.compacts = append(fs.passes, ms(time.Since(start))), append(fs.compacts, res.FilesCompacted)
			if err != nil {
				if fs.failed++; fs.firstErr == nil {
					fs.firstErr = fmt.Errorf("after round %d: %w", r, err)
				}
			}
		}
		e.prog.add(1)
	}
	return fs, nil
}

// reportFlatness adds a series' figures: each metric in each window, and
// late ÷ early (the growth from an empty table) and late ÷ middle (the
// growth in the steady state), each of trimmed means; and the maintenance
// passes, first ones against last ones.
func reportFlatness(e *env, w *WorkloadReport, label string, fs *flatSeries) {
	n := len(fs.rounds)
	group := fmt.Sprintf("%s-row rounds, %s", human(flatIngestRows), label)
	windows := [3][2]int{}
	windows[0], windows[1], windows[2] = flatWindows(n)
	names := [3]string{}
	for i, win := range windows {
		names[i] = fmt.Sprintf("rounds %d–%d", win[0]+1, win[1])
	}
	for _, m := range flatMetrics {
		var vals [3][]float64
		for i, win := range windows {
			vals[i] = pluck(fs.rounds[win[0]:win[1]], m.of)
			w.figure(group, names[i], m.name, "ms", vals[i])
		}
		w.ratio(group, names[2], names[0], m.name, "trimmed means; 1 = as fast after the rounds as on the empty table",
			[]float64{trimmedMean(vals[2])}, []float64{trimmedMean(vals[0])}, 0, 0)
		w.ratio(group, names[2], names[1], m.name, "trimmed means; 1 = flat in the steady state",
			[]float64{trimmedMean(vals[2])}, []float64{trimmedMean(vals[1])}, 0, 0)
	}
	if k := min(lakeWindow, len(fs.passes)/2); k > 0 {
		first, last := fs.passes[:k], fs.passes[len(fs.passes)-k:]
		firstName, lastName := fmt.Sprintf("passes 1–%d", k), fmt.Sprintf("passes %d–%d", len(fs.passes)-k+1, len(fs.passes))
		w.figure(group, firstName, "maintenance", "ms", first)
		w.figure(group, lastName, "maintenance", "ms", last)
		w.ratio(group, lastName, firstName, "maintenance", "trimmed means; 1 = a pass costs the same however large the table",
			[]float64{trimmedMean(last)}, []float64{trimmedMean(first)}, 0, 0)
		w.Notes = append(w.Notes, fmt.Sprintf("%s: %d maintenance passes (one every %d rounds) took %s s in all; "+
			"they compacted %d data files, the last pass %d",
			label, len(fs.passes), lakeMaintainEvery, human(sum(fs.passes)/1e3), sumInts(fs.compacts), fs.compacts[len(fs.compacts)-1]))
	}
	if fs.firstErr != nil {
		w.Notes = append(w.Notes, fmt.Sprintf("%s: %d of %d maintenance passes failed; the first %s",
			label, fs.failed, len(fs.passes), firstLine(fs.firstErr.Error())))
	}
	tm := func(win [2]int, m int) string {
		return human(trimmedMean(pluck(fs.rounds[win[0]:win[1]], flatMetrics[m].of)))
	}
	e.prog.logf("tiering %s: commit %s → %s → %s ms, plan %s → %s → %s ms", group,
		tm(windows[0], 0), tm(windows[1], 0), tm(windows[2], 0), tm(windows[0], 1), tm(windows[1], 1), tm(windows[2], 1))
}

func sumInts(v []int) int {
	var s int
	for _, x := range v {
		s += x
	}
	return s
}

func sum(v []float64) float64 {
	var s float64
	for _, x := range v {
		s += x
	}
	return s
}

var flatMetrics = []struct {
	name string
	of   func(flatSample) float64
}{
	{"commit", func(s flatSample) float64 { return s.commit }},
	{"plan", func(s flatSample) float64 { return s.plan }},
	{"round", func(s flatSample) float64 { return s.round }},
}

// flatRound is round r of the flatness series: an ingest (untimed), the
// round, and with plan a union read's planning.
func flatRound(ctx context.Context, n *lakeNode, t lakeTableRef, r int, plan bool) (flatSample, error) {
	var s flatSample
	rec := events(int64(r-1)*flatIngestRows, flatIngestRows)
	defer rec.Release()
	if err := ingestOne(ctx, n.cl, t.name, rec); err != nil {
		return s, err
	}
	start := time.Now()
	res, err := n.node.Lake().Round(ctx, t.id)
	if err != nil {
		return s, err
	}
	s.round, s.commit = ms(time.Since(start)), ms(res.Commit)
	if res.Rows != flatIngestRows {
		return s, fmt.Errorf("round tiered %d rows, want %d", res.Rows, flatIngestRows)
	}
	if !plan {
		return s, nil
	}
	start = time.Now()
	st, err := n.node.Resolver().Table(ctx, "", t.name)
	if err != nil {
		return s, err
	}
	p, err := st.Plan(ctx, scan.Request{})
	if err != nil {
		return s, err
	}
	s.plan = ms(time.Since(start))
	if len(p.Parts()) == 0 {
		return s, errors.New("the union plan has no parts")
	}
	return s, nil
}

// firstLine is s up to its first line break.
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// setLakeProperty sets a property of t's Iceberg table in a commit of its
// own. The service's next round commits on top of it: the SQL catalog
// applies a commit's updates to the table's current metadata.
func setLakeProperty(ctx context.Context, n *lakeNode, t lakeTableRef, key, value string) error {
	tbl, err := n.lakeTable(ctx, t)
	if err != nil {
		return err
	}
	tx := tbl.NewTransaction()
	if err := tx.SetProperties(iceberg.Properties{key: value}); err != nil {
		return err
	}
	if _, err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("set %s on the lake table of %s: %w", key, t.full, err)
	}
	return nil
}

// lakeShape describes t's Iceberg table: snapshots, manifests, data files
// and the metadata file's size.
func lakeShape(ctx context.Context, n *lakeNode, t lakeTableRef) (string, error) {
	tbl, err := n.lakeTable(ctx, t)
	if err != nil {
		return "", err
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		return "", err
	}
	manifests, err := tbl.CurrentSnapshot().Manifests(fs)
	if err != nil {
		return "", err
	}
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		return "", err
	}
	meta := "?"
	if st, err := os.Stat(strings.TrimPrefix(tbl.MetadataLocation(), "file://")); err == nil {
		meta = human(float64(st.Size())/1e3) + " kB"
	}
	return fmt.Sprintf("%d snapshots, %d manifests, %d data files, metadata file %s",
		len(tbl.Metadata().Snapshots()), len(manifests), len(tasks), meta), nil
}

func pluck(s []flatSample, f func(flatSample) float64) []float64 {
	out := make([]float64, len(s))
	for i, x := range s {
		out[i] = f(x)
	}
	return out
}

// trimmedMean is the mean of v without its lowest and highest value: on a
// shared VM one round of ten can stall on the disk for tens of ms, and a
// plain mean of ten would then say more about that stall than about the
// table.
func trimmedMean(v []float64) float64 {
	if len(v) < 3 {
		return summarize(v).Median
	}
	s := slices.Clone(v)
	slices.Sort(s)
	var sum float64
	for _, x := range s[1 : len(s)-1] {
		sum += x
	}
	return sum / float64(len(s)-2)
}

// unionQueries are the query workload's queries that the union workload
// runs: q1 (bound by reading) and q3 (a large hash aggregate). q2 is bound
// by date_trunc on both sides and says little about reading the lake.
