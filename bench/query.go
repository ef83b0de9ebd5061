package bench

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/jackc/pgx/v5"
)

// The query workload: analytical GROUP BY queries over Config.QueryRows
// event rows, sent to the node over Flight SQL (Execute, then DoGet of
// every endpoint, the result decoded), against DuckDB in this process on a
// native table of the same rows. The node runs them in its embedded
// DuckDB over the log: the ratio is the cost of reading the log through
// the engine's table function, and of Flight, over DuckDB's own storage.
// PostgreSQL (postgres.go), when it runs, gets the same rows in a heap
// table and the same queries through pgx. Every system must return the
// same number of rows and the same sum of the count column.
//
// q1 is bound by reading the rows (six groups), q2 by computing date_trunc
// on every row (DuckDB's own time is mostly that), q3 by a large hash
// aggregate with a selective filter and a 100k-row result.

var benchQueries = []struct{ name, sql string }{
	{"q1 group by kind",
		"SELECT kind, count(*) AS n, sum(amount) AS total, avg(amount) AS mean, max(ts) AS last FROM %s GROUP BY kind ORDER BY kind"},
	{"q2 per-second rollup, filtered",
		"SELECT date_trunc('second', ts) AS sec, count(*) AS n, sum(amount) AS total FROM %s WHERE amount >= 100 GROUP BY sec ORDER BY sec"},
	{"q3 100k groups, filtered",
		"SELECT id %% 100000 AS account, count(*) AS n, sum(amount) AS total FROM %s WHERE kind IN ('purchase', 'refund') GROUP BY account"},
}

// querySumCol is the count column of every query.
const querySumCol = 1

func runQuery(ctx context.Context, e *env) (*WorkloadReport, error) {
	cfg := e.cfg
	w := &WorkloadReport{Name: "query", About: fmt.Sprintf(
		"GROUP BY queries over %s rows through Flight SQL (embedded DuckDB over the log) vs DuckDB in-process on a native table",
		human(float64(cfg.QueryRows)))}
	table, engines, closeEngines, err := loadQueryData(ctx, e, w)
	defer closeEngines()
	if err != nil {
		return nil, err
	}
	for _, q := range benchQueries {
		if err := queryRuns(ctx, e, w, q.name, q.sql, engines); err != nil {
			return nil, fmt.Errorf("%s: %w", q.name, err)
		}
	}
	if err := coldQueryRuns(ctx, e, w, engines[1]); err != nil {
		return nil, err
	}
	e.base.reportMissing(w, "postgres")
	return w, e.dropTable(ctx, table)
}

// queryEngine runs the queries on one system's copy of the rows.
type queryEngine struct {
	system string
	atMost float64 // the target of Lakestream's time ÷ this one's, 0: none
	// query runs the query template on the engine's table and returns the
	// result's rows and the sum of its count column.
	query func(ctx context.Context, tmpl string) (rows, sum int64, err error)
}

// queryRuns checks that every engine gives the same answer (a warm-up),
// then times Config.Runs runs of each, rotating which goes first.
func queryRuns(ctx context.Context, e *env, w *WorkloadReport, name, tmpl string, engines []queryEngine) error {
	cfg := e.cfg
	var answers []string
	for i, en := range engines {
		r, s, err := en.query(ctx, tmpl)
		if err != nil {
			return fmt.Errorf("%s: %w", en.system, err)
		}
		answers = append(answers, fmt.Sprintf("%s %d rows counting %d", en.system, r, s))
		if r == 0 || strings.TrimPrefix(answers[i], en.system) != strings.TrimPrefix(answers[0], engines[0].system) {
			return fmt.Errorf("different answers: %s", strings.Join(answers, ", "))
		}
	}
	times := make([][]float64, len(engines))
	for run := 1; run <= cfg.Runs; run++ {
		e.prog.step(0, "", "query %s, run %d/%d", name, run, cfg.Runs)
		for j := range engines {
			ei := (run - 1 + j) % len(engines)
			start := time.Now()
			if _, _, err := engines[ei].query(ctx, tmpl); err != nil {
				return fmt.Errorf("%s: %w", engines[ei].system, err)
			}
			times[ei] = append(times[ei], ms(time.Since(start)))
		}
	}
	var line []string
	for ei, en := range engines {
		w.figure(name, en.system, "time", "ms", times[ei])
		line = append(line, fmt.Sprintf("%s %s ms", en.system, human(summarize(times[ei]).Median)))
		if ei > 0 {
			w.ratio(name, "lakestream", en.system, "time", fmt.Sprintf("lower is better; 1 = as fast as %s on its own table", en.system),
				times[0], times[ei], 0, en.atMost)
		}
	}
	e.prog.logf("query %s: %s", name, strings.Join(line, ", "))
	return nil
}

// loadQueryData loads the rows into a node table, a DuckDB table "events"
// and, when PostgreSQL runs, a PostgreSQL table "events" (then VACUUM
// ANALYZE, as after any bulk load), untimed: the load times go into a
// note. closeAll closes the baselines' engines.
func loadQueryData(ctx context.Context, e *env, w *WorkloadReport) (string, []queryEngine, func(), error) {
	cfg := e.cfg
	var closers []func()
	closeAll := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	recs := batches(cfg.QueryRows, 64<<10)
	defer release(recs)
	table, err := e.createTable(ctx, "query")
	if err != nil {
		return "", nil, closeAll, err
	}
	cls, closeCls, err := dialN(e.nodeAddr, cfg.Writers)
	if err != nil {
		return "", nil, closeAll, err
	}
	defer closeCls()
	e.prog.step(int64(cfg.QueryRows), "rows", "query: loading %s", table)
	lakeLoad, err := ingestAll(ctx, cls, table, recs, e.prog)
	if err != nil {
		return "", nil, closeAll, err
	}
	if err := checkRows(ctx, e, table, int64(cfg.QueryRows)); err != nil {
		return "", nil, closeAll, err
	}
	e.prog.step(0, "", "query: loading DuckDB")
	duck, err := openDuck()
	if err != nil {
		return "", nil, closeAll, err
	}
	closers = append(closers, duck.close)
	start := time.Now()
	if err := duck.load("events", recs); err != nil {
		return "", nil, closeAll, err
	}
	note := fmt.Sprintf("loading the rows took %s ms into Lakestream (ingest, %d writers, 64k-row batches) and %s ms into DuckDB (appender, in-process)",
		human(ms(lakeLoad)), cfg.Writers, human(ms(time.Since(start))))
	engines := []queryEngine{
		{system: "lakestream", query: func(ctx context.Context, tmpl string) (int64, int64, error) {
			return queryNode(ctx, e, fmt.Sprintf(tmpl, table))
		}},
		{system: "duckdb", atMost: 2, query: func(_ context.Context, tmpl string) (int64, int64, error) {
			return duck.query(fmt.Sprintf(tmpl, "events"), querySumCol)
		}},
	}
	if pg := e.base.pg; pg != nil {
		conn, pgLoad, err := pgLoadQueryData(ctx, e, pg, recs)
		if conn != nil {
			closers = append(closers, func() { _ = conn.Close(context.Background()) })
		}
		if err != nil {
			return "", nil, closeAll, err
		}
		engines = append(engines, queryEngine{system: baselineSystems["postgres"], query: func(ctx context.Context, tmpl string) (int64, int64, error) {
			return pgQuery(ctx, conn, fmt.Sprintf(tmpl, "events"), querySumCol)
		}})
		note += fmt.Sprintf(", %s ms into PostgreSQL (COPY, %d writers, 64k-row batches, then VACUUM ANALYZE)", human(ms(pgLoad)), cfg.Writers)
		w.About += fmt.Sprintf(", and PostgreSQL %s on a heap table through pgx", pg.version)
	}
	w.Notes = append(w.Notes, note)
	return table, engines, closeAll, nil
}

// pgLoadQueryData copies recs into a PostgreSQL table "events" and
// vacuums it; it returns a connection for the queries and the load time.
func pgLoadQueryData(ctx context.Context, e *env, pg *pgServer, recs []arrow.RecordBatch) (*pgx.Conn, time.Duration, error) {
	e.prog.step(totalRows(recs), "rows", "query: loading PostgreSQL")
	conns, closeConns, err := pg.connectN(ctx, e.cfg.Writers)
	if err != nil {
		return nil, 0, err
	}
	defer closeConns()
	start := time.Now()
	if err := pgExec(ctx, conns[0], "CREATE TABLE events "+pgTableDDL); err != nil {
		return nil, 0, err
	}
	if _, err := pgIngestAll(ctx, conns, "events", recs, e.prog); err != nil {
		return nil, 0, err
	}
	if err := pgExec(ctx, conns[0], "VACUUM ANALYZE events"); err != nil {
		return nil, 0, err
	}
	if err := pgCheckRows(ctx, conns[0], "events", totalRows(recs)); err != nil {
		return nil, 0, err
	}
	d := time.Since(start)
	conn, err := pg.connect(ctx)
	return conn, d, err
}

// queryNode runs sql on the node and reads every endpoint; it returns the
// result's rows and the sum of its int64 column querySumCol.
func queryNode(ctx context.Context, e *env, sql string) (rows, sum int64, err error) {
	info, err := e.node.Execute(ctx, sql)
	if err != nil {
		return 0, 0, err
	}
	for _, ep := range info.GetEndpoint() {
		rdr, err := e.node.DoGet(ctx, ep.GetTicket())
		if err != nil {
			return 0, 0, err
		}
		for rdr.Next() {
			rec := rdr.RecordBatch()
			col, ok := rec.Column(querySumCol).(*array.Int64)
			if !ok {
				rdr.Release()
				return 0, 0, fmt.Errorf("column %d is %s, want int64", querySumCol, rec.Column(querySumCol).DataType())
			}
			for _, v := range col.Int64Values() {
				sum += v
			}
			rows += rec.NumRows()
		}
		err = rdr.Err()
		rdr.Release()
		if err != nil {
			return 0, 0, err
		}
	}
	return rows, sum, nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
