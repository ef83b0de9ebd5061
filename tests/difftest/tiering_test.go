package difftest

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	icecatalog "github.com/apache/iceberg-go/catalog"

	"github.com/lakestream/lakestream/columnarlog"
	"github.com/lakestream/lakestream/internal/scan"
	"github.com/lakestream/lakestream/node"
	"github.com/lakestream/lakestream/tables"
	"github.com/lakestream/lakestream/tiering"
)

// The corpus while tiering runs (the tiering issue's "Must show": the SQL
// differential corpus passes while tiering runs concurrently).
//
// A fixture of its own loads the data set into tables that tier: the
// tiering service is the store's DDL hook before the first CREATE TABLE, as
// on a node, so Iceberg tables are created and evolved (evolving's ADD
// COLUMN) by DDL. The engine resolves names through the service: a table is
// its Iceberg snapshot plus the log tail above the tiered offsets.
//
//	stage a  the corpus runs tieringPasses times while a driver goroutine
//	         tiers the tables one stored batch per bucket per round, the
//	         rounds of each table spread evenly over all those queries, with
//	         compaction, snapshot expiry and orphan deletion between them:
//	         queries see every mix of lake and tail, and commits land while
//	         they run.
//	stage b  every row is tiered (lakestream.tiering shows no tail, each
//	         "t$lake" holds all of t's rows) and compacted; the corpus runs
//	         again, reading the lake only.
//	stage c  the corpus queries that scan and filter (lakeNamesPrefixes)
//	         run again with their tables renamed to "t$lake"; the reference
//	         answers those names with views of the same tables.
//
// Every query must equal the reference exactly, as in TestCorpus.

const (
	// lakeRoundRows is Config.MaxRoundRows: less than one batch, so that a
	// round tiers exactly one stored batch of each bucket (a round takes
	// whole batches), and a table reaches the lake in as many rounds as its
	// fullest bucket has batches.
	lakeRoundRows = 1
	// maintainEvery runs Maintain after this many rounds of a table; every
	// second such pass also deletes orphan files.
	maintainEvery = 3
	// tieringPasses is how many runs of the corpus stage a spreads the
	// rounds over.
	tieringPasses = 2
)

// lakeMaintenance expires snapshots by count and compacts early, so that
// both happen within the test. It is safe for the queries because a query
// overlaps at most one driver step (tierDriver.before waits for the last
// step before it starts the next), and a step adds at most two snapshots to
// a table (a round's append, a compaction's replace; expiry adds none): the
// snapshot a query planned on is among the last three, which expiry keeps
// with their files.
var lakeMaintenance = tiering.Maintenance{
	RetainSnapshots: 4,
	SnapshotAge:     -1, // by count only
	CompactMinFiles: 2,
	OrphanAge:       time.Millisecond,
}

func TestCorpusWhileTiering(t *testing.T) {
	ctx := context.Background()
	start := time.Now()
	f, lake := openTieredFixture(ctx, t)
	corpus := loadCorpus(t)
	d, err := startTierDriver(ctx, lake.svc, f)
	if err != nil {
		t.Fatal(err)
	}
	defer d.stop()

	loaded := time.Now()
	var a stageStats
	t.Run("during_rounds", func(t *testing.T) {
		span := tieringPasses * len(corpus)
		for pass := range tieringPasses {
			t.Run(fmt.Sprintf("pass%d", pass+1), func(t *testing.T) {
				a.passed += runCorpusTiering(ctx, t, f, corpus, d, pass*len(corpus), span, &a)
			})
		}
	})
	if err := d.wait(); err != nil {
		t.Fatalf("tiering: %v", err)
	}
	d.reportMaintErrs(t)
	t.Logf("stage a (%s, after %s of loading): %d of %d queries pass; %d read a table partly in the lake and partly in the log tail, %d ran while a commit landed; %s",
		time.Since(loaded).Round(time.Millisecond), loaded.Sub(start).Round(time.Millisecond),
		a.passed, a.queries, a.mixed, a.overlapped, d.summary())
	if a.mixed < a.queries/2 {
		t.Errorf("only %d of %d queries read a table partly tiered: stage a shows little", a.mixed, a.queries)
	}
	if a.overlapped == 0 {
		t.Error("no commit landed while a query ran: stage a shows nothing concurrent")
	}

	if err := d.finish(ctx); err != nil {
		t.Fatalf("tiering: %v", err)
	}
	d.reportMaintErrs(t)
	checkAllTiered(ctx, t, f, lake.svc)
	t.Logf("all tiered: %s", d.summary())
	var b, c stageStats
	bStart := time.Now()
	t.Run("all_tiered", func(t *testing.T) {
		b.passed = runCorpusTiering(ctx, t, f, corpus, nil, 0, 0, &b)
	})
	cStart := time.Now()
	t.Run("lake_names", func(t *testing.T) {
		c.passed, c.queries = runLakeNames(ctx, t, f, corpus, lakeNamesPrefixes)
	})
	t.Logf("stage b (%s): %d of %d queries pass; stage c (%s, \"t$lake\" names): %d of %d pass; %s in all",
		cStart.Sub(bStart).Round(time.Millisecond), b.passed, b.queries,
		time.Since(cStart).Round(time.Millisecond), c.passed, c.queries, time.Since(start).Round(time.Millisecond))
	if c.queries < 150 {
		t.Errorf("only %d corpus queries ran with \"t$lake\" names", c.queries)
	}
}

// lakeTier is the lake under a tiered fixture: an Iceberg SQL catalog on
// SQLite with a file:// warehouse in the fixture's directory, opened as a
// node opens it, and the tiering service with configuration cfg over the
// fixture's store.
type lakeTier struct {
	cfg tiering.Config
	svc *tiering.Service
}

// openTieredFixture opens a fixture of its own (the shared one is read
// through the store only), closed when t ends.
func openTieredFixture(ctx context.Context, t *testing.T) (*fixture, *lakeTier) {
	t.Helper()
	return openTieredFixtureOf(ctx, t, nil, tiering.Config{MaxRoundRows: lakeRoundRows, Maintenance: lakeMaintenance})
}

// openTieredFixtureOf is openTieredFixture with the tables named in only
// (an empty map: none) and the tiering configuration cfg.
func openTieredFixtureOf(ctx context.Context, t *testing.T, only map[string]bool, cfg tiering.Config) (*fixture, *lakeTier) {
	t.Helper()
	lake := &lakeTier{cfg: cfg}
	f, err := openFixtureWith(ctx, only, lake.attach)
	if err != nil {
		t.Fatalf("tiered fixture: %v", err)
	}
	t.Cleanup(func() {
		if err := f.close(); err != nil {
			t.Errorf("close tiered fixture: %v", err)
		}
	})
	return f, lake
}

// attach is the fixture's lakeHook.
func (l *lakeTier) attach(ctx context.Context, f *fixture) (scan.Resolver, func() error, error) {
	ice, err := tiering.OpenCatalog(ctx, tiering.StorageConfig{
		Catalog:   "sqlite://" + filepath.Join(f.dir, "iceberg.db"),
		Warehouse: "file://" + filepath.Join(f.dir, "warehouse"),
	})
	if err != nil {
		return nil, nil, err
	}
	closeIce := func() error {
		if c, ok := ice.(icecatalog.Closer); ok {
			return c.Close()
		}
		return nil
	}
	// f.mem: what the service decodes and converts is leak-checked with
	// the rest of the fixture.
	cfg := l.cfg
	cfg.Mem = f.mem
	svc, err := tiering.New(ctx, ice, f.store, cfg)
	if err != nil {
		return nil, nil, errors.Join(err, closeIce())
	}
	l.svc = svc
	stop := func() error {
		f.store.SetLake(nil)
		return closeIce()
	}
	return node.Resolver(f.store, svc), stop, nil
}

// stageStats counts what one stage's queries saw.
type stageStats struct {
	queries, passed int
	// mixed queries read a table partly in the lake and partly in the log
	// tail; overlapped ones ran while a commit landed.
	mixed, overlapped int
}

// runCorpusTiering runs the corpus as subtests of t, as runCorpus does; with
// a driver, each query is numbered first+i of span, and the driver starts
// the tiering steps due before it. Known-bug queries are skipped: they run
// isolated in TestCorpus, and may crash the process.
func runCorpusTiering(ctx context.Context, t *testing.T, f *fixture, corpus []corpusQuery, d *tierDriver, first, span int, st *stageStats) int {
	passed := 0
	for i, q := range corpus {
		if q.bug != "" {
			t.Run(q.name, func(t *testing.T) { t.Skipf("known Lakestream bug, run in TestCorpus: %s", q.bug) })
			continue
		}
		var lakeState string
		var commits int64
		if d != nil {
			if err := d.before(first+i, span); err != nil {
				t.Fatalf("tiering: %v", err)
			}
			var mixed bool
			lakeState, mixed = d.state(q)
			if mixed {
				st.mixed++
			}
			commits = d.commits.Load()
		}
		st.queries++
		t.Run(q.name, func(t *testing.T) {
			if report(t, q, runCorpusQuery(ctx, f, q)) {
				passed++
			} else if d != nil {
				t.Logf("tiering state when the query started: %s", lakeState)
			}
		})
		if d != nil && d.commits.Load() != commits {
			st.overlapped++
		}
	}
	return passed
}

// tierDriver tiers and maintains the fixture's tables from one goroutine,
// in steps the test starts between queries; a step runs while the queries
// after it do.
type tierDriver struct {
	svc    *tiering.Service
	tables []*tierTable
	steps  chan []*tierTable
	done   chan error
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// busy: a step was sent and its result not yet received. The test
	// goroutine's only.
	busy bool
	// commits counts the Iceberg commits of rounds and maintenance.
	commits atomic.Int64

	// The driver goroutine writes these during a step; the test reads
	// them between steps only (after wait).
	rounds, rowsTiered, maintained           int64
	compacted, expired, orphans, emptyRounds int64
	// maintErrs are the errors of Maintain. Unlike a round's, they do not
	// stop the driver: the maintenance commits are in the table, and the
	// next round goes on from the catalog's state.
	maintErrs        []error
	stepTime, waited time.Duration
}

// tierTable is one table of the data set as the driver tiers it.
type tierTable struct {
	spec *tableSpec
	tbl  *tables.Table
	// planned is the rounds its backlog takes: the most batches any of its
	// buckets holds. requested is the test's count of rounds asked for;
	// rounds the driver's count of rounds run.
	planned, requested, rounds int
}

func startTierDriver(ctx context.Context, svc *tiering.Service, f *fixture) (*tierDriver, error) {
	d := &tierDriver{svc: svc, steps: make(chan []*tierTable), done: make(chan error, 1)}
	for _, spec := range f.specs {
		tbl, err := f.store.Get(ctx, spec.db, spec.name)
		if err != nil {
			return nil, err
		}
		n, err := backlogBatches(ctx, tbl)
		if err != nil {
			return nil, err
		}
		d.tables = append(d.tables, &tierTable{spec: spec, tbl: tbl, planned: n})
	}
	ctx, d.cancel = context.WithCancel(ctx)
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		for {
			select {
			case <-ctx.Done():
				return
			case step := <-d.steps:
				st := time.Now()
				err := d.step(ctx, step)
				d.stepTime += time.Since(st)
				d.done <- err
			}
		}
	}()
	return d, nil
}

// backlogBatches is the most batches any bucket of tbl holds above its
// tiered offset.
func backlogBatches(ctx context.Context, tbl *tables.Table) (int, error) {
	tiered := tbl.Tiered()
	most := 0
	for b, end := range tbl.Log().CommittedEnds() {
		var from int64
		if tiered != nil {
			from = tiered[b]
		}
		n := 0
		err := tbl.ReadBatches(ctx, tables.Range{Bucket: b, From: from, To: end}, func(columnarlog.Batch) error {
			n++
			return nil
		})
		if err != nil {
			return 0, err
		}
		most = max(most, n)
	}
	return most, nil
}

// roundsDue is how many rounds of a table of planned rounds are due by
// query g of span: its rounds are spread evenly over the span, the last at
// its end.
func roundsDue(planned, g, span int) int {
	return min(planned, (planned*(g+1)+span-1)/span)
}

// before starts the step due before query g of span, if any, after waiting
// for the previous one.
func (d *tierDriver) before(g, span int) error {
	var due []*tierTable
	for _, tt := range d.tables {
		if tt.requested < roundsDue(tt.planned, g, span) {
			tt.requested++
			due = append(due, tt)
		}
	}
	if len(due) == 0 {
		return nil
	}
	if err := d.wait(); err != nil {
		return err
	}
	d.steps <- due
	d.busy = true
	return nil
}

// wait waits for the step in flight, if any, and returns its error.
func (d *tierDriver) wait() error {
	if !d.busy {
		return nil
	}
	d.busy = false
	st := time.Now()
	defer func() { d.waited += time.Since(st) }()
	return <-d.done
}

func (d *tierDriver) stop() {
	d.cancel()
	d.wg.Wait()
}

// step runs one round of each table, and Maintain after every
// maintainEvery rounds of it.
func (d *tierDriver) step(ctx context.Context, tts []*tierTable) error {
	for _, tt := range tts {
		if err := d.round(ctx, tt); err != nil {
			return err
		}
	}
	return nil
}

func (d *tierDriver) round(ctx context.Context, tt *tierTable) error {
	id := tt.tbl.Def().ID
	res, err := d.svc.Round(ctx, id)
	if err != nil {
		return fmt.Errorf("round %d of %s: %w", tt.rounds+1, tt.spec.ref(), err)
	}
	tt.rounds++
	d.rounds++
	d.rowsTiered += res.Rows
	if res.Rows == 0 {
		d.emptyRounds++
	} else {
		d.commits.Add(1)
	}
	if tt.rounds%maintainEvery != 0 {
		return nil
	}
	d.maintained++
	d.maintain(ctx, tt, d.maintained%2 == 0)
	return nil
}

func (d *tierDriver) maintain(ctx context.Context, tt *tierTable, orphans bool) {
	m, err := d.svc.Maintain(ctx, tt.tbl.Def().ID, orphans)
	if err != nil {
		d.maintErrs = append(d.maintErrs, fmt.Errorf("maintain %s after round %d: %w", tt.spec.ref(), tt.rounds, err))
	}
	d.compacted += int64(m.FilesCompacted)
	d.expired += int64(m.SnapshotsExpired)
	d.orphans += int64(m.OrphansDeleted)
	// A failed pass may have committed too (see maintErrs): count it.
	if m.FilesCompacted > 0 || m.SnapshotsExpired > 0 || err != nil {
		d.commits.Add(1)
	}
}

// finish tiers whatever is left, then compacts, expires and deletes
// orphans in every table.
func (d *tierDriver) finish(ctx context.Context) error {
	if err := d.wait(); err != nil {
		return err
	}
	for _, tt := range d.tables {
		for {
			before := d.rowsTiered
			if err := d.round(ctx, tt); err != nil {
				return err
			}
			if d.rowsTiered == before {
				break
			}
		}
		d.maintain(ctx, tt, true)
	}
	return nil
}

// reportMaintErrs reports the Maintain errors so far, the first in full.
func (d *tierDriver) reportMaintErrs(t *testing.T) {
	t.Helper()
	if len(d.maintErrs) == 0 {
		return
	}
	t.Errorf("%d of %d maintenance passes failed; the first: %v", len(d.maintErrs), d.maintained, d.maintErrs[0])
	for _, err := range d.maintErrs[1:] {
		first, _, _ := strings.Cut(err.Error(), "\n")
		t.Logf("also: %s", first)
	}
	d.maintErrs = nil
}

func (d *tierDriver) summary() string {
	return fmt.Sprintf("driver busy %s, queries waited %s for it; %d rounds (%d empty) tiered %d rows; %d maintenance passes compacted %d files, expired %d snapshots, deleted %d orphan files",
		d.stepTime, d.waited, d.rounds, d.emptyRounds, d.rowsTiered, d.maintained, d.compacted, d.expired, d.orphans)
}

// state describes where the rows of the tables q names are, and reports
// whether one of them is partly in the lake and partly in the log tail. It
// reads the tiered offsets a commit hands the table (Table.SetTiered), not
// Service.Status, which reads the log of every lagging bucket.
func (d *tierDriver) state(q corpusQuery) (string, bool) {
	sql := strings.ToLower(q.sql)
	var parts []string
	mixed := false
	for _, tt := range d.tables {
		if !strings.Contains(sql, strings.ToLower(tt.spec.name)) {
			continue
		}
		tiered := tt.tbl.Tiered()
		var lake, tail int64
		for b, end := range tt.tbl.Log().CommittedEnds() {
			var o int64
			if tiered != nil {
				o = tiered[b]
			}
			lake, tail = lake+o, tail+end-o
		}
		mixed = mixed || (lake > 0 && tail > 0)
		parts = append(parts, fmt.Sprintf("%s: %d rows in the lake, %d in the tail", tt.tbl.Name(), lake, tail))
	}
	return strings.Join(parts, "; "), mixed
}

// checkAllTiered checks, through the engine, that lakestream.tiering shows
// no log tail and no error, and that each table's lake layer holds all its
// rows.
func checkAllTiered(ctx context.Context, t *testing.T, f *fixture, svc *tiering.Service) {
	t.Helper()
	r, err := lakeQuery(ctx, f.eng, `SELECT table_name, count(*) AS buckets, sum(lag_rows) AS tail,
		sum(log_end_offset - tiered_offset) AS untiered, count(last_error) AS errors
		FROM lakestream.tiering GROUP BY table_name ORDER BY table_name`, nil)
	if err != nil {
		t.Fatalf("lakestream.tiering: %v", err)
	}
	seen := map[string]bool{}
	for _, row := range r.rows {
		seen[row[0].text] = true // quoted: canon's form of a string
		if row[2].text != "0" || row[3].text != "0" || row[4].text != "0" {
			t.Errorf("lakestream.tiering after the last round: %s (table, buckets, tail, untiered, errors)", rowText(row))
		}
	}
	for _, spec := range f.specs {
		tbl, err := f.store.Get(ctx, spec.db, spec.name)
		if err != nil {
			t.Fatal(err)
		}
		if !seen[strconv.Quote(tbl.Name())] {
			t.Errorf("lakestream.tiering has no row for %s", tbl.Name())
		}
		lake := lakeRef(spec)
		q := fmt.Sprintf("SELECT count(*) AS n FROM %s", lake)
		r, err := lakeQuery(ctx, f.eng, q, nil)
		if err != nil {
			t.Errorf("%s: %v", q, err)
			continue
		}
		if got, want := r.rows[0][0].text, fmt.Sprint(len(spec.rows)); got != want {
			t.Errorf("%s has %s rows, want all %s of %s", lake, got, want, spec.ref())
		}
	}
	for _, bs := range svc.Status() {
		if bs.LastError != "" {
			t.Errorf("%s: last tiering error: %s", bs.Table, bs.LastError)
		}
	}
}

// lakeRef is the SQL name of spec's lake layer.
func lakeRef(spec *tableSpec) string {
	name := quoteIdent(spec.name + "$lake")
	if spec.db == "" {
		return name
	}
	return quoteIdent(spec.db) + "." + name
}

// runLakeNames runs the corpus queries named with one of prefixes that
// lakeNames can rename against the lake layers. The reference answers the
// "$lake" names with views of the same tables. It returns how many passed
// of how many ran.
func runLakeNames(ctx context.Context, t *testing.T, f *fixture, corpus []corpusQuery, prefixes []string) (passed, ran int) {
	for _, spec := range f.specs {
		views := []string{fmt.Sprintf("CREATE OR REPLACE VIEW %s AS SELECT * FROM %s", lakeRef(spec), spec.ref())}
		if spec.db == "" {
			views = append(views, fmt.Sprintf(`CREATE OR REPLACE VIEW "default".%s AS SELECT * FROM main.%s`, lakeRef(spec), spec.ref()))
		}
		if err := f.ref.exec(views...); err != nil {
			t.Fatal(err)
		}
	}
	for _, q := range corpus {
		if !slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(q.name, p) }) {
			continue
		}
		sql, ok := lakeNames(q, f.specs)
		if !ok {
			continue
		}
		ran++
		lq := q
		lq.sql = sql
		t.Run(q.name, func(t *testing.T) {
			if report(t, lq, runCorpusQuery(ctx, f, lq)) {
				passed++
			}
		})
	}
	return passed, ran
}

// lakeNamesPrefixes name the corpus queries stage c runs: those that read
// columns whole or filter them, where the lake layer's own plan (the
// filters pushed into Iceberg, the conversion of what it reads) decides the
// result. Joins, windows and the like read through the same scans, and
// stage b ran them against the lake already.
var lakeNamesPrefixes = []string{"scan_", "where_", "prune_", "param_", "list_", "map_", "struct_", "edge_", "names_", "shape_", "dt_"}

var (
	// tableRefRE is a table reference: FROM or JOIN (or a comma of a FROM
	// list), a database, a name.
	tableRefRE = regexp.MustCompile(`(?i)(\bFROM|\bJOIN|,)(\s+)((?:analytics|"default")\s*\.\s*)?("[^"]+"|[a-z_][a-z0-9_]*)`)
	// qualifierRE is a name used as a qualifier ("orders.id").
	qualifierRE = regexp.MustCompile(`(?i)("[^"]+"|\b[a-z_][a-z0-9_]*)\s*\.`)
	// cteRE is a name a CTE defines.
	cteRE = regexp.MustCompile(`(?i)(\bWITH|,)\s+(?:RECURSIVE\s+)?("[^"]+"|[a-z_][a-z0-9_]*)\s+AS\s*\(`)
)

// lakeNames renames every table reference of q after FROM or JOIN to the
// table's lake layer ("orders" → "orders$lake"). It declines a query it
// cannot rename whole: one that fails on purpose, uses query_table, names a
// table elsewhere (a comma join, a qualifier such as orders.id), defines a
// CTE named like a table, or names no table.
func lakeNames(q corpusQuery, specs []*tableSpec) (string, bool) {
	if q.isError || q.bug != "" || strings.Contains(strings.ToLower(q.sql), "query_table") {
		return "", false
	}
	isTable := func(name string) bool {
		name = strings.Trim(name, `"`)
		for _, s := range specs {
			if strings.EqualFold(s.name, name) {
				return true
			}
		}
		return false
	}
	for _, m := range cteRE.FindAllStringSubmatch(q.sql, -1) {
		if isTable(m[2]) {
			return "", false
		}
	}
	for _, m := range qualifierRE.FindAllStringSubmatch(q.sql, -1) {
		if isTable(m[1]) {
			return "", false
		}
	}
	renamed, clean := 0, true
	sql := tableRefRE.ReplaceAllStringFunc(q.sql, func(ref string) string {
		m := tableRefRE.FindStringSubmatch(ref)
		if !isTable(m[4]) {
			return ref
		}
		if m[1] == "," {
			clean = false
			return ref
		}
		renamed++
		return m[1] + m[2] + m[3] + quoteIdent(strings.Trim(m[4], `"`)+"$lake")
	})
	return sql, clean && renamed > 0
}

// ============================================================ regressions
//
// Minimal reproductions of the tiering bugs TestCorpusWhileTiering found,
// one test each; each failed before its fix. Each writes a few rows to a one-bucket table, runs its
// queries through the union before the table's first round (all rows in
// the log tail) and after it (all rows in the lake), and wants the same
// results.

// TestTieringRegressionBooleanOrderPushdown: an ordering comparison of a BOOLEAN
// column is pushed into the Iceberg scan, whose row filter (Arrow compute)
// has no such kernel: the scan fails once the rows are in the lake.
func TestTieringRegressionBooleanOrderPushdown(t *testing.T) {
	r := openRepro(t, "CREATE TABLE repro (id BIGINT NOT NULL, flag BOOLEAN) WITH ('bucket.num'='1')", [][]any{
		{int64(1), true}, {int64(2), false}, {int64(3), nil},
	})
	r.compare(t,
		"SELECT count(*) AS n FROM repro WHERE flag > false",
		"SELECT count(*) AS n FROM repro WHERE flag <= true",
	)
}

// TestTieringRegressionNestedNullTestPushdown: IS [NOT] NULL on a LIST, MAP or
// STRUCT column is pushed into the Iceberg scan, whose manifest evaluator
// does not handle a nested column: planning fails once the table has a
// snapshot.
func TestTieringRegressionNestedNullTestPushdown(t *testing.T) {
	r := openRepro(t, "CREATE TABLE repro (id BIGINT NOT NULL, tags VARCHAR[], m MAP(VARCHAR, INTEGER), s STRUCT(k VARCHAR)) WITH ('bucket.num'='1')", [][]any{
		{int64(1), []any{"a"}, []kv{{"k", int32(1)}}, []any{"x"}},
		{int64(2), nil, nil, nil},
		{int64(3), []any{}, []kv{}, []any{nil}},
	})
	r.compare(t,
		"SELECT id FROM repro WHERE tags IS NOT NULL",
		"SELECT id FROM repro WHERE m IS NULL",
		"SELECT id FROM repro WHERE s IS NOT NULL",
	)
}

// TestTieringRegressionExpiryAfterCompaction: expiring a compaction's snapshot
// after the snapshots that added the files it replaced were expired (and
// their files deleted) fails: iceberg-go deletes the files of every entry
// of an expired manifest, the compaction's DELETED entries included, and
// the second delete of a file fails. The expiry is committed all the same,
// but Maintain reports the error, skips orphan deletion, and keeps its
// stale table, so that the next pass, with no round in between, fails to
// open the manifest list of a snapshot already expired.
func TestTieringRegressionExpiryAfterCompaction(t *testing.T) {
	ctx := context.Background()
	cfg := tiering.Config{Maintenance: tiering.Maintenance{RetainSnapshots: 1, SnapshotAge: -1, CompactMinFiles: 2}}
	r := openReproWith(t, cfg, "CREATE TABLE repro (id BIGINT NOT NULL) WITH ('bucket.num'='1')", nil)
	id := r.tbl.Def().ID
	step := func(what string, fn func() error) {
		t.Helper()
		if err := fn(); err != nil {
			t.Errorf("%s: %v", what, err)
		}
	}
	for i := range 3 {
		r.write(t, [][]any{{int64(i)}})
		if _, err := r.lake.svc.Round(ctx, id); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			continue
		}
		// After the second round: compact the two files, expire the
		// snapshots that added them, delete their files. After the
		// third: compact again, expire the first compaction.
		step(fmt.Sprintf("maintain after round %d", i+1), func() error {
			_, err := r.lake.svc.Maintain(ctx, id, false)
			return err
		})
	}
	step("maintain again, no round in between", func() error {
		_, err := r.lake.svc.Maintain(ctx, id, true)
		return err
	})
	// The rows are intact whatever maintenance reported.
	got, err := lakeQuery(ctx, r.f.eng, `SELECT count(*) AS n, sum(id) AS s FROM "repro$lake"`, nil)
	if err != nil {
		t.Fatal(err)
	}
	if text := rowText(got.rows[0]); text != "(3, 3)" {
		t.Errorf("the lake holds (count, sum) %s, want (3, 3)", text)
	}
}

// repro is a tiered fixture with no data set and one table, repro.
type repro struct {
	f    *fixture
	lake *lakeTier
	tbl  *tables.Table
}

func openRepro(t *testing.T, ddl string, rows [][]any) *repro {
	return openReproWith(t, tiering.Config{}, ddl, rows)
}

func openReproWith(t *testing.T, cfg tiering.Config, ddl string, rows [][]any) *repro {
	t.Helper()
	ctx := context.Background()
	f, lake := openTieredFixtureOf(ctx, t, map[string]bool{}, cfg)
	if err := execDDL(ctx, f.store, ddl); err != nil {
		t.Fatal(err)
	}
	tbl, err := f.store.Get(ctx, "", "repro")
	if err != nil {
		t.Fatal(err)
	}
	r := &repro{f: f, lake: lake, tbl: tbl}
	if rows != nil {
		r.write(t, rows)
	}
	return r
}

func (r *repro) write(t *testing.T, rows [][]any) {
	t.Helper()
	rec, err := buildRecord(r.tbl.Schema(), rows)
	if err != nil {
		t.Fatal(err)
	}
	if err := conformAndWrite(context.Background(), r.tbl, []arrow.RecordBatch{rec}); err != nil {
		t.Fatal(err)
	}
}

// compare runs each query with the rows in the log tail, tiers them all,
// and runs it again from the lake: the results must be the same.
func (r *repro) compare(t *testing.T, queries ...string) {
	t.Helper()
	ctx := context.Background()
	before := map[string]*result{}
	for _, q := range queries {
		want, err := lakeQuery(ctx, r.f.eng, q, nil)
		if err != nil {
			t.Fatalf("%s, rows in the log tail: %v", q, err)
		}
		before[q] = want
	}
	for {
		res, err := r.lake.svc.Round(ctx, r.tbl.Def().ID)
		if err != nil {
			t.Fatal(err)
		}
		if res.Rows == 0 {
			break
		}
	}
	for _, q := range queries {
		want := before[q]
		got, err := lakeQuery(ctx, r.f.eng, q, nil)
		switch {
		case err != nil:
			t.Errorf("%s\n  rows in the log tail: %s\n  rows in the lake:     %v", q, rowsText(want), err)
		case diff(got, want, false) != "":
			t.Errorf("%s\n  rows in the log tail: %s\n  rows in the lake:     %s", q, rowsText(want), rowsText(got))
		}
	}
}

func rowsText(r *result) string {
	parts := make([]string, len(r.rows))
	for i, row := range r.rows {
		parts[i] = rowText(row)
	}
	return strings.Join(parts, " ")
}
