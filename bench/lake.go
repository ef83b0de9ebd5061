package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"google.golang.org/grpc"

	"github.com/lakestream/lakestream/catalog"
	"github.com/lakestream/lakestream/columnarlog"
	"github.com/lakestream/lakestream/flightsrv"
	"github.com/lakestream/lakestream/internal/scan"
	"github.com/lakestream/lakestream/planner/duck"
	"github.com/lakestream/lakestream/tables"
	"github.com/lakestream/lakestream/tiering"
)

// The lake workloads: tiering into Apache Iceberg, and queries over the
// union of the lake and the log tail.
//
// tiering (a), throughput: Config.Rows rows ingested into a fresh table
// (untimed), then tiering rounds until the backlog is in the lake, timed,
// with the process's CPU time (getrusage: every thread, DuckDB's and the
// idle env node's included) around them. The ceiling writes the same rows,
// from memory, to one zstd Parquet file per bucket with arrow-go's pqarrow
// and iceberg-go's default writer settings, the files in parallel: the
// Parquet encoding a round cannot avoid, without the log read, the
// partitioning, the manifests or the commit.
//
// tiering (b), flatness: Config.LakeRounds rounds, each after a 1,000-row
// ingest; commit latency (RoundResult.Commit), the whole round, and the
// planning of a union read (Resolver(store).Table(...).Plan, nothing read)
// over the first, the middle and the last lakeWindow rounds, late ÷ early
// and late ÷ middle (1 = flat).
// Once with maintenance as the node runs it (defaults, but snapshots expire
// by count: the rounds run back to back, milliseconds apart, so no
// snapshot would ever reach the default age of 10 minutes and age-based
// expiry would keep all of them), once without (no maintenance pass, and
// commit.manifest-merge.enabled turned off on the Iceberg table).
//
// union: Config.QueryRows rows, 90% tiered and 10% left in the log tail;
// GROUP BY queries over Flight SQL (the node's embedded DuckDB over the
// union, the query workload's path) against DuckDB in this process reading
// the snapshot's Parquet data files with read_parquet UNION ALL the same
// tail rows in a native table. Same answers on both sides, and every row
// counted once.
//
// Both run on a lakeNode of their own rather than on the env's node, whose
// Serve loop tiers every table on its own schedule (datalake.freshness):
// the workloads must choose when rounds run, and read RoundResult.

// lakeWindow is the rounds averaged at each end of the flatness series
// (trimmedMean).
const lakeWindow = 10

// flatIngestRows is the rows ingested before each round of the flatness
// series.
const flatIngestRows = 1000

// lakeMaintenance is the maintenance policy of the workloads' service: the
// defaults of tiering.Maintenance except SnapshotAge (see above).
// EveryRounds and OrphanEveryRounds are spelled out because the workload,
// not the service's loop, runs the passes (flatRound); they are the
// defaults of maintain.go.
var lakeMaintenance = tiering.Maintenance{EveryRounds: 10, OrphanEveryRounds: 500, SnapshotAge: -1}

// lakeNode is a node's storage, lake and query path wired as node.Start
// wires them (tables.Store, tiering.Service on a SQLite Iceberg catalog
// with a file:// warehouse, the embedded DuckDB engine over the service's
// resolver, the Flight SQL server on 127.0.0.1:0), without the Serve loop:
// rounds and maintenance run only when the workload asks.
type lakeNode struct {
	dir, temp string // temp: removed by close
	cat       *catalog.Catalog
	store     *tables.Store
	ice       icecatalog.Catalog
	svc       *tiering.Service
	eng       *duck.Engine
	srv       *flightsrv.Server
	grpc      *grpc.Server
	served    chan error
	addr      string
	cl        *flightsql.Client
	created   int // tables, for their names
}

// startLakeNode opens a lake node in <DataDir>/<name>, or in a new temp dir.
func startLakeNode(ctx context.Context, cfg Config, name string) (_ *lakeNode, err error) {
	n := &lakeNode{}
	defer func() {
		if err != nil {
			err = errors.Join(err, n.close())
		}
	}()
	if cfg.DataDir != "" {
		n.dir = filepath.Join(cfg.DataDir, name)
	} else if n.dir, err = os.MkdirTemp("", "lakestream-bench-"+name+"-"); err != nil {
		return nil, err
	} else {
		n.temp = n.dir
	}
	if err := os.MkdirAll(n.dir, 0o755); err != nil {
		return nil, err
	}
	quiet := slog.New(slog.DiscardHandler)
	if n.cat, err = catalog.Open(ctx, filepath.Join(n.dir, "catalog.db"), catalog.Config{DefaultBucketNum: 1}); err != nil {
		return nil, err
	}
	policy, _ := columnarlog.ParseSyncPolicy(cfg.Sync) // validated
	if n.store, err = tables.Open(ctx, n.cat, tables.Config{Dir: filepath.Join(n.dir, "tables"),
		Log: columnarlog.Options{Sync: policy, Logger: quiet}, Logger: quiet}); err != nil {
		return nil, err
	}
	if n.ice, err = tiering.OpenCatalog(ctx, tiering.StorageConfig{Catalog: "sqlite://" + filepath.Join(n.dir, "iceberg.db"),
		Warehouse: "file://" + filepath.Join(n.dir, "warehouse")}); err != nil {
		return nil, fmt.Errorf("lake catalog: %w", err)
	}
	if n.svc, err = tiering.New(ctx, n.ice, n.store, tiering.Config{Maintenance: lakeMaintenance, Logger: quiet}); err != nil {
		return nil, err
	}
	if n.eng, err = duck.New(n.svc.Resolver(n.store), duck.Options{Logger: quiet}); err != nil {
		return nil, err
	}
	if n.srv, err = flightsrv.New(n.store, n.eng, flightsrv.Options{Version: "bench", Logger: quiet}); err != nil {
		return nil, err
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	n.addr, n.grpc, n.served = lis.Addr().String(), n.srv.GRPCServer(), make(chan error, 1)
	go func() { n.served <- n.grpc.Serve(lis) }()
	if n.cl, err = dial(n.addr); err != nil {
		return nil, err
	}
	return n, nil
}

// close stops what start started, in reverse order.
func (n *lakeNode) close() error {
	var errs []error
	if n.cl != nil {
		errs = append(errs, n.cl.Close())
	}
	if n.grpc != nil {
		n.srv.Shutdown()
		n.grpc.Stop()
		if err := <-n.served; err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			errs = append(errs, err)
		}
	}
	if n.eng != nil {
		errs = append(errs, n.eng.Close())
	}
	if n.store != nil {
		n.store.SetDDLHook(nil)
		errs = append(errs, n.store.Close())
	}
	if c, ok := n.ice.(interface{ Close() error }); ok {
		errs = append(errs, c.Close())
	}
	if n.cat != nil {
		errs = append(errs, n.cat.Close())
	}
	if n.temp != "" {
		errs = append(errs, os.RemoveAll(n.temp))
	}
	return errors.Join(errs...)
}

// createTable creates an events table like env.createTable (4 buckets by
// id, the configured codec), but one that tiers (datalake.enabled, the
// default).
func (n *lakeNode) createTable(ctx context.Context, prefix, codec string) (*tables.Table, error) {
	n.created++
	name := fmt.Sprintf("%s_%d", prefix, n.created)
	ddl := fmt.Sprintf("CREATE TABLE %s %s WITH ('bucket.num'='%d', 'bucket.key'='id', 'log.compression'='%s')",
		name, eventsDDL, tableBuckets, codec)
	if _, err := n.cl.ExecuteUpdate(ctx, ddl); err != nil {
		return nil, fmt.Errorf("%s: %w", ddl, err)
	}
	return n.store.Get(ctx, "", name)
}

func (n *lakeNode) dropTable(ctx context.Context, t *tables.Table) error {
	if _, err := n.cl.ExecuteUpdate(ctx, "DROP TABLE "+t.Def().Name); err != nil {
		return fmt.Errorf("drop %s: %w", t.Def().Name, err)
	}
	return nil
}

// tierAll runs rounds until everything committed to t's log is in the
// lake, and checks that want rows went.
func (n *lakeNode) tierAll(ctx context.Context, t *tables.Table, want int64) (rounds int, err error) {
	var rows int64
	for {
		res, err := n.svc.Round(ctx, t.Def().ID)
		if err != nil {
			return rounds, fmt.Errorf("tiering round %d of %s: %w", rounds+1, t.Name(), err)
		}
		rounds++
		rows += res.Rows
		if !res.Truncated {
			break
		}
	}
	if rows != want {
		return rounds, fmt.Errorf("tiering %s: %d rows went to the lake, want %d", t.Name(), rows, want)
	}
	return rounds, nil
}

// lakeTable loads t's Iceberg table from the catalog.
func (n *lakeNode) lakeTable(ctx context.Context, t *tables.Table) (*table.Table, error) {
	def := t.Def()
	return n.ice.LoadTable(ctx, table.Identifier{def.DB, def.Name})
}

// cpuTime is the CPU time, user and system, of every thread of this
// process so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

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
	if _, err := ingestAll(ctx, cls, t.Def().Name, recs, e.prog); err != nil {
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
func lakeDataBytes(ctx context.Context, n *lakeNode, t *tables.Table) (int64, error) {
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
func runFlatSeries(ctx context.Context, e *env, n *lakeNode, t *tables.Table, maintained bool) (*flatSeries, error) {
	cfg := e.cfg
	fs := &flatSeries{rounds: make([]flatSample, 0, cfg.LakeRounds)}
	early, mid, late := flatWindows(cfg.LakeRounds)
	for r := 1; r <= cfg.LakeRounds; r++ {
		s, err := flatRound(ctx, n, t, r, inWindow(r-1, early, mid, late))
		if err != nil {
			return nil, fmt.Errorf("round %d: %w", r, err)
		}
		fs.rounds = append(fs.rounds, s)
		if maintained && r%lakeMaintenance.EveryRounds == 0 {
			// As in the node's loop (tiering.Service.runTable), a failed
			// pass is reported and the rounds go on.
			start := time.Now()
			res, err := n.svc.Maintain(ctx, t.Def().ID, r%lakeMaintenance.OrphanEveryRounds == 0)
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
			label, len(fs.passes), lakeMaintenance.EveryRounds, human(sum(fs.passes)/1e3), sumInts(fs.compacts), fs.compacts[len(fs.compacts)-1]))
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
func flatRound(ctx context.Context, n *lakeNode, t *tables.Table, r int, plan bool) (flatSample, error) {
	var s flatSample
	rec := events(int64(r-1)*flatIngestRows, flatIngestRows)
	defer rec.Release()
	if err := ingestOne(ctx, n.cl, t.Def().Name, rec); err != nil {
		return s, err
	}
	start := time.Now()
	res, err := n.svc.Round(ctx, t.Def().ID)
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
	st, err := n.svc.Resolver(n.store).Table(ctx, "", t.Def().Name)
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
func setLakeProperty(ctx context.Context, n *lakeNode, t *tables.Table, key, value string) error {
	tbl, err := n.lakeTable(ctx, t)
	if err != nil {
		return err
	}
	tx := tbl.NewTransaction()
	if err := tx.SetProperties(iceberg.Properties{key: value}); err != nil {
		return err
	}
	if _, err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("set %s on the lake table of %s: %w", key, t.Name(), err)
	}
	return nil
}

// lakeShape describes t's Iceberg table: snapshots, manifests, data files
// and the metadata file's size.
func lakeShape(ctx context.Context, n *lakeNode, t *tables.Table) (string, error) {
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
var unionQueries = []int{0, 2}

func runUnion(ctx context.Context, e *env) (*WorkloadReport, error) {
	cfg := e.cfg
	lakeRows := cfg.QueryRows - cfg.QueryRows/10
	w := &WorkloadReport{Name: "union", About: fmt.Sprintf(
		"GROUP BY queries over %s rows, %s in the lake (Iceberg) and %s in the log tail, through Flight SQL (embedded DuckDB over the union) "+
			"vs DuckDB in-process on read_parquet(the snapshot's data files) UNION ALL the tail rows in a native table",
		human(float64(cfg.QueryRows)), human(float64(lakeRows)), human(float64(cfg.QueryRows-lakeRows)))}
	n, err := startLakeNode(ctx, cfg, "lake-union")
	if err != nil {
		return nil, err
	}
	err = unionQueriesRun(ctx, e, n, w, lakeRows)
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
	// The query workload's client code, on this node's connection.
	client := *e
	client.node = n.cl
	for _, qi := range unionQueries {
		q := benchQueries[qi]
		lakeSQL, duckSQL := fmt.Sprintf(q.sql, t.Def().Name), fmt.Sprintf(q.sql, "events")
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
func loadUnion(ctx context.Context, e *env, n *lakeNode, w *WorkloadReport, lakeRows int) (*tables.Table, []string, error) {
	cfg := e.cfg
	t, err := n.createTable(ctx, "union", cfg.Codec)
	if err != nil {
		return nil, nil, err
	}
	cls, closeCls, err := dialN(n.addr, cfg.Writers)
	if err != nil {
		return nil, nil, err
	}
	defer closeCls()
	ingest := func(from, rows int) (time.Duration, error) {
		recs := make([]arrow.RecordBatch, 0, rows/(64<<10)+1)
		for at := from; at < from+rows; at += 64 << 10 {
			recs = append(recs, events(int64(at), min(64<<10, from+rows-at)))
		}
		defer release(recs)
		e.prog.step(int64(rows), "rows", "union: loading %s rows", human(float64(rows)))
		return ingestAll(ctx, cls, t.Def().Name, recs, e.prog)
	}
	lakeLoad, err := ingest(0, lakeRows)
	if err != nil {
		return nil, nil, err
	}
	e.prog.step(0, "", "union: tiering %s rows", human(float64(lakeRows)))
	start := time.Now()
	rounds, err := n.tierAll(ctx, t, int64(lakeRows))
	if err != nil {
		return nil, nil, err
	}
	tierTime := time.Since(start)
	tailLoad, err := ingest(lakeRows, cfg.QueryRows-lakeRows)
	if err != nil {
		return nil, nil, err
	}
	files, err := checkUnionSplit(ctx, n, t, int64(lakeRows), int64(cfg.QueryRows-lakeRows))
	if err != nil {
		return nil, nil, err
	}
	w.Notes = append(w.Notes, fmt.Sprintf("loading took %s ms (ingest of the lake rows), %s ms (%d tiering round(s)), %s ms (ingest of the tail); the lake holds %d data files",
		human(ms(lakeLoad)), human(ms(tierTime)), rounds, human(ms(tailLoad)), len(files)))
	return t, files, nil
}

// checkUnionSplit checks that the lake snapshot holds lakeRows rows and the
// log tail above the tiered offsets tailRows, and returns the snapshot's
// data files as local paths.
func checkUnionSplit(ctx context.Context, n *lakeNode, t *tables.Table, lakeRows, tailRows int64) ([]string, error) {
	var lag int64
	for _, b := range n.svc.Status() {
		if b.Table == t.Name() {
			lag += b.LagRows
		}
	}
	if lag != tailRows {
		return nil, fmt.Errorf("%s: %d rows in the log tail, want %d", t.Name(), lag, tailRows)
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
		return nil, fmt.Errorf("%s: %d rows in the lake, want %d", t.Name(), rows, lakeRows)
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
func profilePath(base string, qi int) string {
	ext := filepath.Ext(base)
	return fmt.Sprintf("%s-q%d%s", strings.TrimSuffix(base, ext), qi+1, ext)
}
