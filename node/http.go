package node

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/lakestream/lakestream/catalog"
)

// httpHandler serves /metrics (Prometheus), /healthz, a status page and
// the Iceberg REST catalog (/iceberg/v1/…).
//
// /metrics answers what it can: every table has a label value of its own
// (tableLabels), a metric that cannot be built is reported to the
// registry (prometheus.NewInvalidMetric) rather than panicking in a
// collector, and the handler continues past such errors, logging them,
// instead of answering 500 for all metrics because of one.
func (n *Node) httpHandler() http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		&logCollector{n: n}, &lakeCollector{n: n}, &cacheCollector{n: n}, &healthCollector{n: n}, &streamCollector{n: n}, &nodeCollector{n: n},
		&limitCollector{n: n}, &clusterCollector{n: n}) // limits.go, cluster_metrics.go
	reg.MustRegister(n.mon.collectors()...)
	mux := http.NewServeMux()
	mux.Handle("/metrics", n.metricsHandler(reg, promhttp.HandlerOpts{ // status_privileges.go
		ErrorHandling: promhttp.ContinueOnError,
		ErrorLog:      promLog{n.cfg.Logger},
	}))
	mux.HandleFunc("/healthz", n.healthz)
	mux.HandleFunc("/{$}", n.statusPage)
	mux.HandleFunc("/status.json", n.statusJSON)
	mux.Handle("/iceberg/", n.icebergREST()) // icebergrest.go
	return mux
}

// healthz answers 200 "ok" while every table's log accepts writes, and 503
// naming the tables whose logs refuse them, with why (a full disk, a
// failed fsync), otherwise. The node still serves reads then: a load
// balancer takes it out of the write path, not the operator's sight.
func (n *Node) healthz(w http.ResponseWriter, r *http.Request) {
	failing := n.writeFailures(r.Context())
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if len(failing) == 0 {
		fmt.Fprintln(w, "ok")
		return
	}
	w.WriteHeader(http.StatusServiceUnavailable)
	fmt.Fprintf(w, "writes refused by %d table(s); reads are served\n", len(failing))
	for _, f := range failing {
		fmt.Fprintf(w, "%s: %v\n", f.table, f.err)
	}
}

type writeFailure struct {
	table string
	err   error
}

// writeFailures lists the tables whose logs refuse writes, by name.
func (n *Node) writeFailures(ctx context.Context) []writeFailure {
	defs, err := n.cat.AllTables(ctx)
	if err != nil {
		return []writeFailure{{"catalog", err}}
	}
	var out []writeFailure
	for _, d := range defs {
		t, err := n.store.ByID(ctx, d.ID)
		if err != nil {
			continue // dropped meanwhile
		}
		if err := t.Log().Err(); err != nil {
			out = append(out, writeFailure{d.FullName(), err})
		}
	}
	return out
}

var (
	descCommitted = prometheus.NewDesc("lakestream_log_committed_offset", "Offset below which every row of the bucket is durable and visible.", []string{"table", "bucket"}, nil)
	descStart     = prometheus.NewDesc("lakestream_log_start_offset", "First offset still in the bucket's local log.", []string{"table", "bucket"}, nil)
	descBytes     = prometheus.NewDesc("lakestream_log_bytes", "Bytes of the bucket's local log segments.", []string{"table", "bucket"}, nil)
	descSegments  = prometheus.NewDesc("lakestream_log_segments", "Segments of the bucket's local log.", []string{"table", "bucket"}, nil)
	descRefusing  = prometheus.NewDesc("lakestream_log_refusing_writes", "1 while the table's log refuses writes after a failed write or sync (see /healthz).", []string{"table"}, nil)
)

// logCollector reports every bucket's log offsets at scrape time.
type logCollector struct{ n *Node }

func (c *logCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descCommitted
	ch <- descStart
	ch <- descBytes
	ch <- descSegments
	ch <- descRefusing
}

func (c *logCollector) Collect(ch chan<- prometheus.Metric) {
	refusing := map[string]bool{}
	for _, f := range c.n.writeFailures(context.Background()) {
		refusing[f.table] = true
	}
	for _, row := range c.n.bucketRows(context.Background()) {
		if row.Bucket == 0 {
			v := 0.0
			if refusing[row.Table] {
				v = 1
			}
			gauge(ch, descRefusing, v, row.Table)
		}
		labels := []string{row.Table, fmt.Sprint(row.Bucket)}
		gauge(ch, descCommitted, float64(row.Committed), labels...)
		gauge(ch, descStart, float64(row.Start), labels...)
		gauge(ch, descBytes, float64(row.Bytes), labels...)
		gauge(ch, descSegments, float64(row.Segments), labels...)
	}
}

// metric sends one metric, or, if it cannot be built (a label value that
// is not UTF-8), an invalid metric carrying the error, which the registry
// reports and the handler logs: MustNewConstMetric would panic in the
// registry's collecting goroutine and take the process down.
func metric(ch chan<- prometheus.Metric, d *prometheus.Desc, typ prometheus.ValueType, v float64, labels ...string) {
	m, err := prometheus.NewConstMetric(d, typ, v, labels...)
	if err != nil {
		m = prometheus.NewInvalidMetric(d, err)
	}
	ch <- m
}

func gauge(ch chan<- prometheus.Metric, d *prometheus.Desc, v float64, labels ...string) {
	metric(ch, d, prometheus.GaugeValue, v, labels...)
}

// promLog is the handler's error log.
type promLog struct{ l *slog.Logger }

func (p promLog) Println(v ...any) { p.l.Warn("metrics: " + fmt.Sprint(v...)) }

var (
	descTiered     = prometheus.NewDesc("lakestream_lake_tiered_offset", "First offset of the bucket not yet in the lake (Iceberg).", []string{"table", "bucket"}, nil)
	descLogEnd     = prometheus.NewDesc("lakestream_lake_log_end_offset", "Committed end of the bucket's log, as the tiering service sees it.", []string{"table", "bucket"}, nil)
	descLagRows    = prometheus.NewDesc("lakestream_lake_lag_rows", "Rows of the bucket committed to the log and not yet to the lake.", []string{"table", "bucket"}, nil)
	descLagSeconds = prometheus.NewDesc("lakestream_lake_lag_seconds", "Age of the bucket's oldest row not yet in the lake; 0 when none is.", []string{"table", "bucket"}, nil)
	descRounds     = prometheus.NewDesc("lakestream_lake_rounds_total", "Successful tiering rounds of the table since start.", []string{"table"}, nil)
	descRowsTiered = prometheus.NewDesc("lakestream_lake_rows_tiered_total", "Rows the table's rounds committed to the lake since start.", []string{"table"}, nil)
	descCommitSecs = prometheus.NewDesc("lakestream_lake_last_commit_seconds", "Duration of the table's last Iceberg commit.", []string{"table"}, nil)
	descRoundFails = prometheus.NewDesc("lakestream_lake_round_failing", "1 while the table's last tiering round failed (see the log or lakestream.tiering).", []string{"table"}, nil)
)

// lakeCollector reports every tiered bucket's lag at scrape time.
type lakeCollector struct{ n *Node }

func (c *lakeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descTiered, descLogEnd, descLagRows, descLagSeconds, descRounds, descRowsTiered, descCommitSecs, descRoundFails} {
		ch <- d
	}
}

func (c *lakeCollector) Collect(ch chan<- prometheus.Metric) {
	if c.n.lake == nil {
		return
	}
	labels := c.n.tableLabels(context.Background())
	for _, st := range c.n.lake.Status() {
		table, b := labels.of(st.TableID, st.Table), fmt.Sprint(st.Bucket)
		gauge(ch, descTiered, float64(st.TieredOffset), table, b)
		gauge(ch, descLogEnd, float64(st.LogEnd), table, b)
		gauge(ch, descLagRows, float64(st.LagRows), table, b)
		gauge(ch, descLagSeconds, st.Lag.Seconds(), table, b)
		if st.Bucket == 0 {
			metric(ch, descRounds, prometheus.CounterValue, float64(st.Rounds), table)
			metric(ch, descRowsTiered, prometheus.CounterValue, float64(st.RowsTiered), table)
			gauge(ch, descCommitSecs, st.LastCommit.Seconds(), table)
			failing := 0.0
			if st.LastError != "" {
				failing = 1
			}
			gauge(ch, descRoundFails, failing, table)
		}
	}
}

var (
	descQuarantined = prometheus.NewDesc("lakestream_table_quarantined", "1 for each table the node could not open at start-up, or whose lake is lost: its reads and writes are refused; the status page and the log say why.", []string{"table", "part"}, nil)
	descOrphans     = prometheus.NewDesc("lakestream_orphan_table_dirs", "Table data directories without a catalog entry, found at start-up: kept, never deleted (see the status page).", nil, nil)
)

// healthCollector reports what start-up could not open or account for.
type healthCollector struct{ n *Node }

func (c *healthCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descQuarantined
	ch <- descOrphans
}

func (c *healthCollector) Collect(ch chan<- prometheus.Metric) {
	labels := c.n.tableLabels(context.Background())
	for _, q := range c.n.store.Quarantined() {
		gauge(ch, descQuarantined, 1, labels.of(q.ID, q.Table), string(q.Part))
	}
	gauge(ch, descOrphans, float64(len(c.n.store.Orphans())))
}

// labelSet maps table ids to their "table" label values.
type labelSet map[int64]string

// of is table id's label, or name for a table not in the set (one
// created since the set was made).
func (l labelSet) of(id int64, name string) string {
	if v, ok := l[id]; ok {
		return v
	}
	return name
}

// tableLabels gives every table of the catalog, loaded or broken, a label
// value of its own: "db.name", or, where tables of a catalog written before
// the name rules (catalog/limits.go) share one (`"default.x".t` and
// `default."x.t"` are both "default.x.t"), the quoted spelling
// (catalog.TableName.String), which is unambiguous, and failing that (a
// quoted spelling equal to another's plain name) the id after it. Two
// series with the same labels would make the whole scrape fail.
func (n *Node) tableLabels(ctx context.Context) labelSet {
	type named struct {
		id   int64
		name catalog.TableName
	}
	var all []named
	if defs, err := n.cat.AllTables(ctx); err == nil {
		for _, d := range defs {
			all = append(all, named{d.ID, catalog.TableName{DB: d.DB, Name: d.Name}})
		}
	}
	if broken, err := n.cat.BrokenTables(ctx); err == nil {
		for _, b := range broken {
			all = append(all, named{b.ID, catalog.TableName{DB: b.DB, Name: b.Name}})
		}
	}
	count := map[string]int{}
	for _, t := range all {
		count[t.name.DB+"."+t.name.Name]++
	}
	labels := make(labelSet, len(all))
	used := map[string]bool{}
	for _, t := range all {
		if full := t.name.DB + "." + t.name.Name; count[full] == 1 {
			labels[t.id], used[full] = full, true
		}
	}
	for _, t := range all {
		if _, ok := labels[t.id]; ok {
			continue
		}
		v := t.name.String()
		if used[v] {
			v += "#" + strconv.FormatInt(t.id, 10)
		}
		labels[t.id], used[v] = v, true
	}
	return labels
}

var (
	descCacheBytes  = prometheus.NewDesc("lakestream_cache_bytes", "Bytes of decoded log columns held by the read cache (--cache).", nil, nil)
	descCacheHits   = prometheus.NewDesc("lakestream_cache_hits_total", "Decoded columns read from the cache.", nil, nil)
	descCacheMisses = prometheus.NewDesc("lakestream_cache_misses_total", "Decoded columns not in the cache, decompressed.", nil, nil)
)

// cacheCollector reports the decoded-column cache.
type cacheCollector struct{ n *Node }

func (c *cacheCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descCacheBytes
	ch <- descCacheHits
	ch <- descCacheMisses
}

func (c *cacheCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.n.store.CacheStats()
	ch <- prometheus.MustNewConstMetric(descCacheBytes, prometheus.GaugeValue, float64(st.Bytes))
	ch <- prometheus.MustNewConstMetric(descCacheHits, prometheus.CounterValue, float64(st.Hits))
	ch <- prometheus.MustNewConstMetric(descCacheMisses, prometheus.CounterValue, float64(st.Misses))
}

var (
	descStreamBudget   = prometheus.NewDesc("lakestream_stream_memory_budget_bytes", "Memory budget of the result streams (--stream-memory).", nil, nil)
	descStreamUsed     = prometheus.NewDesc("lakestream_stream_memory_used_bytes", "Bytes charged to the stream memory budget: read-ahead and windows of running streams, and what gRPC holds of ended ones.", nil, nil)
	descStreamPeak     = prometheus.NewDesc("lakestream_stream_memory_peak_bytes", "The most bytes charged to the stream memory budget at once since start.", nil, nil)
	descStreamProduced = prometheus.NewDesc("lakestream_stream_produced_bytes", "Bytes of results produced and not yet written to their connections.", nil, nil)
	descStreams        = prometheus.NewDesc("lakestream_streams", "Result streams being served.", nil, nil)
	descStreamsWaiting = prometheus.NewDesc("lakestream_streams_waiting", "Result streams waiting for their client or for the stream memory budget.", nil, nil)
	descStreamsCut     = prometheus.NewDesc("lakestream_streams_cut_total", "Result streams ended by the stall timeout: their client read nothing (stalled) or they waited for the budget (refused).", []string{"reason"}, nil)
)

// streamCollector reports the result streams and their memory budget.
type streamCollector struct{ n *Node }

func (c *streamCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descStreamBudget, descStreamUsed, descStreamPeak, descStreamProduced, descStreams, descStreamsWaiting, descStreamsCut} {
		ch <- d
	}
}

func (c *streamCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.n.flight.StreamStats()
	gauge := func(d *prometheus.Desc, v int64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v))
	}
	gauge(descStreamBudget, st.Budget)
	gauge(descStreamUsed, st.Used)
	gauge(descStreamPeak, st.Peak)
	gauge(descStreamProduced, st.Produced)
	gauge(descStreams, st.Streams)
	gauge(descStreamsWaiting, st.Waiting)
	ch <- prometheus.MustNewConstMetric(descStreamsCut, prometheus.CounterValue, float64(st.Stalled), "stalled")
	ch <- prometheus.MustNewConstMetric(descStreamsCut, prometheus.CounterValue, float64(st.Refused), "refused")
}

type bucketRow struct {
	Table            string
	Bucket           int
	Start, Committed int64
	Bytes            int64
	Segments         int
}

func (n *Node) bucketRows(ctx context.Context) []bucketRow {
	defs, err := n.cat.AllTables(ctx)
	if err != nil {
		return nil
	}
	labels := n.tableLabels(ctx)
	var rows []bucketRow
	for _, d := range defs {
		t, err := n.store.ByID(ctx, d.ID)
		if err != nil {
			continue
		}
		for b := 0; b < t.Log().Buckets(); b++ {
			st := t.Log().Bucket(b).Stats()
			rows = append(rows, bucketRow{labels.of(d.ID, d.FullName()), b, st.Start, st.Committed, st.Bytes, st.Segments})
		}
	}
	return rows
}
