package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
)

// The query workload: analytical GROUP BY queries over Config.QueryRows
// event rows, sent to the node over Flight SQL (Execute, then DoGet of
// every endpoint, the result decoded), against DuckDB in this process on a
// native table of the same rows. The node runs them in its embedded
// DuckDB over the log: the ratio is the cost of reading the log through
// the engine's table function, and of Flight, over DuckDB's own storage.
// Both sides must return the same number of rows and the same sum of the
// count column.
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
	table, duck, err := loadQueryData(ctx, e, w)
	if err != nil {
		return nil, err
	}
	defer duck.close()
	for _, q := range benchQueries {
		lakeSQL, duckSQL := fmt.Sprintf(q.sql, table), fmt.Sprintf(q.sql, "events")
		// Warm-up, and the check that both give the same answer.
		lr, ls, err := queryNode(ctx, e, lakeSQL)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", q.name, err)
		}
		dr, ds, err := duck.query(duckSQL, querySumCol)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", q.name, err)
		}
		if lr != dr || ls != ds || lr == 0 {
			return nil, fmt.Errorf("%s: lakestream returned %d rows counting %d, duckdb %d rows counting %d", q.name, lr, ls, dr, ds)
		}
		var lakeMS, duckMS []float64
		for run := 1; run <= cfg.Runs; run++ {
			e.prog.step(0, "", "query %s, run %d/%d", q.name, run, cfg.Runs)
			start := time.Now()
			if _, _, err := queryNode(ctx, e, lakeSQL); err != nil {
				return nil, err
			}
			lakeMS = append(lakeMS, ms(time.Since(start)))
			start = time.Now()
			if _, _, err := duck.query(duckSQL, querySumCol); err != nil {
				return nil, err
			}
			duckMS = append(duckMS, ms(time.Since(start)))
		}
		w.figure(q.name, "lakestream", "time", "ms", lakeMS)
		w.figure(q.name, "duckdb", "time", "ms", duckMS)
		w.ratio(q.name, "lakestream", "duckdb", "time", "lower is better; 1 = as fast as DuckDB on its own table", lakeMS, duckMS, 0, 2)
		e.prog.logf("query %s: lakestream %s ms, duckdb %s ms", q.name, human(summarize(lakeMS).Median), human(summarize(duckMS).Median))
	}
	w.missing("PostgreSQL (same queries through adbc-driver-postgresql)", "not assembled by the harness yet")
	return w, e.dropTable(ctx, table)
}

// loadQueryData loads the rows into a node table and a DuckDB table
// "events", untimed (the load times go into a note).
func loadQueryData(ctx context.Context, e *env, w *WorkloadReport) (string, *duckRef, error) {
	cfg := e.cfg
	recs := batches(cfg.QueryRows, 64<<10)
	defer release(recs)
	table, err := e.createTable(ctx, "query")
	if err != nil {
		return "", nil, err
	}
	cls, closeCls, err := dialN(e.nodeAddr, cfg.Writers)
	if err != nil {
		return "", nil, err
	}
	defer closeCls()
	e.prog.step(int64(cfg.QueryRows), "rows", "query: loading %s", table)
	lakeLoad, err := ingestAll(ctx, cls, table, recs, e.prog)
	if err != nil {
		return "", nil, err
	}
	if err := checkRows(ctx, e, table, int64(cfg.QueryRows)); err != nil {
		return "", nil, err
	}
	e.prog.step(0, "", "query: loading DuckDB")
	duck, err := openDuck()
	if err != nil {
		return "", nil, err
	}
	start := time.Now()
	if err := duck.load("events", recs); err != nil {
		duck.close()
		return "", nil, err
	}
	w.Notes = append(w.Notes, fmt.Sprintf("loading the rows took %s ms into Lakestream (ingest, %d writers, 64k-row batches) and %s ms into DuckDB (appender, in-process)",
		human(ms(lakeLoad)), cfg.Writers, human(ms(time.Since(start)))))
	return table, duck, nil
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
