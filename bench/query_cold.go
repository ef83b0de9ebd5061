package bench

import (
	"context"
	"fmt"
	"time"
)

// The cold queries: the first read of rows just ingested, the common case
// for fresh data. For each of q1 and q3 and each run, a table of its own is
// loaded with the query workload's rows (untimed) and the query timed once,
// then DuckDB's on its native table right after, so that each ratio pairs
// two times taken under the same load. The warm figures (queryRuns) come
// from repeated queries of one table.
var coldQueries = []int{0, 2}

// coldQueryRuns times the cold queries against duck, DuckDB's engine of the
// query workload.
func coldQueryRuns(ctx context.Context, e *env, w *WorkloadReport, duck queryEngine) error {
	cfg := e.cfg
	recs := batches(cfg.QueryRows, 64<<10)
	defer release(recs)
	cls, closeCls, err := dialN(e.nodeAddr, cfg.Writers)
	if err != nil {
		return err
	}
	defer closeCls()
	for _, qi := range coldQueries {
		q := benchQueries[qi]
		name := q.name + ", cold"
		var lakeMS, duckMS []float64
		for run := 1; run <= cfg.Runs; run++ {
			table, err := e.createTable(ctx, "cold")
			if err != nil {
				return err
			}
			e.prog.step(int64(cfg.QueryRows), "rows", "query %s, run %d/%d: loading %s", name, run, cfg.Runs, table)
			if _, err := ingestAll(ctx, cls, table, recs, e.prog); err != nil {
				return err
			}
			if err := checkRows(ctx, e, table, int64(cfg.QueryRows)); err != nil {
				return err
			}
			start := time.Now()
			lr, ls, err := queryNode(ctx, e, fmt.Sprintf(q.sql, table))
			lakeMS = append(lakeMS, ms(time.Since(start)))
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			start = time.Now()
			dr, ds, err := duck.query(ctx, q.sql)
			duckMS = append(duckMS, ms(time.Since(start)))
			if err != nil {
				return fmt.Errorf("%s: duckdb: %w", name, err)
			}
			if lr != dr || ls != ds || lr == 0 {
				return fmt.Errorf("%s: lakestream returned %d rows counting %d, duckdb %d rows counting %d", name, lr, ls, dr, ds)
			}
			if err := e.dropTable(ctx, table); err != nil {
				return err
			}
		}
		w.figure(name, "lakestream", "time", "ms", lakeMS)
		w.figure(name, "duckdb", "time", "ms", duckMS)
		w.ratio(name, "lakestream", "duckdb", "time",
			"lower is better; the first query of rows just ingested, against DuckDB on its own table", lakeMS, duckMS, 0, 1.3)
		e.prog.logf("query %s: lakestream %s ms, duckdb %s ms", name, human(summarize(lakeMS).Median), human(summarize(duckMS).Median))
	}
	return nil
}
