package node

import (
	"context"
	"encoding/json"
	"net/http"
	"runtime/metrics"
	"time"

	"github.com/lakestream/lakestream/tiering"
)

// Status is what /status.json answers and the status page and
// `lakestream status` show: the node, its tables, the rates of the last
// minutes, subscriptions, recent errors and what start-up could not open.
// Sizes are bytes, durations seconds, rates per second.
type Status struct {
	Version       string    `json:"version"`
	Started       time.Time `json:"started"`
	UptimeSeconds float64   `json:"uptime_seconds"`
	Flight        string    `json:"flight"`
	HTTP          string    `json:"http"`
	DataDir       string    `json:"data_dir"`

	Totals        StatusTotals         `json:"totals"`
	Memory        StatusMemory         `json:"memory"`
	Series        StatusSeries         `json:"series"`
	Tables        []StatusTable        `json:"tables"`
	Lake          []StatusLakeBucket   `json:"lake"`
	Subscriptions []StatusSubscription `json:"subscriptions"`
	Errors        []StatusError        `json:"errors"`
	Quarantined   []StatusQuarantined  `json:"quarantined"`
	Orphans       []string             `json:"orphans"`
	// Cluster is absent on a single node (status_cluster.go).
	Cluster *StatusCluster `json:"cluster,omitempty"`
}

// StatusTotals are the node's counts since start and its current rates
// (over the last RateWindowSeconds).
type StatusTotals struct {
	Tables              int     `json:"tables"`
	Rows                int64   `json:"rows"`
	DiskBytes           int64   `json:"disk_bytes"`
	LakeBytes           int64   `json:"lake_bytes"`
	IngestRows          int64   `json:"ingest_rows"`
	IngestBytes         int64   `json:"ingest_bytes"`
	ScanRows            int64   `json:"scan_rows"`
	Queries             int64   `json:"queries"`
	Requests            int64   `json:"requests"`
	Errors              int64   `json:"errors"`
	IngestRowsPerSecond float64 `json:"ingest_rows_per_second"`
	IngestBytesPerSec   float64 `json:"ingest_bytes_per_second"`
	ScanRowsPerSecond   float64 `json:"scan_rows_per_second"`
	QueriesPerSecond    float64 `json:"queries_per_second"`
	RateWindowSeconds   float64 `json:"rate_window_seconds"`
	Subscriptions       int     `json:"subscriptions"`
	PreparedStatements  int     `json:"prepared_statements"`
}

// StatusMemory is the node's memory: the Go heap, the decoded-column
// cache and the budgets of the query engine and the result streams.
type StatusMemory struct {
	GoHeapBytes       int64 `json:"go_heap_bytes"`
	GoTotalBytes      int64 `json:"go_total_bytes"`
	CacheBytes        int64 `json:"cache_bytes"`
	CacheLimitBytes   int64 `json:"cache_limit_bytes"`
	EngineLimitBytes  int64 `json:"engine_limit_bytes"`
	StreamUsedBytes   int64 `json:"stream_used_bytes"`
	StreamBudgetBytes int64 `json:"stream_budget_bytes"`
}

// StatusSeries are the node's rates over the last minutes, one point per
// IntervalSeconds, oldest first: At[i] is the end of point i (unix
// seconds).
type StatusSeries struct {
	IntervalSeconds float64   `json:"interval_seconds"`
	At              []float64 `json:"at"`
	IngestRows      []float64 `json:"ingest_rows"`
	IngestBytes     []float64 `json:"ingest_bytes"`
	ScanRows        []float64 `json:"scan_rows"`
	Queries         []float64 `json:"queries"`
	Errors          []float64 `json:"errors"`
}

// StatusTable is one table.
type StatusTable struct {
	Name      string `json:"name"`
	Buckets   int    `json:"buckets"`
	Rows      int64  `json:"rows"`
	DiskBytes int64  `json:"disk_bytes"`
	Datalake  bool   `json:"datalake"`
	LakeBytes int64  `json:"lake_bytes"`
	LakeRows  int64  `json:"lake_rows"`
	// LagRows and FreshnessLagSeconds are the rows not yet in the lake
	// and the age of the oldest of them.
	LagRows             int64     `json:"lag_rows"`
	FreshnessLagSeconds float64   `json:"freshness_lag_seconds"`
	IngestRowsPerSecond float64   `json:"ingest_rows_per_second"`
	ScanRowsPerSecond   float64   `json:"scan_rows_per_second"`
	IngestSeries        []float64 `json:"ingest_series"` // rows/s, as Series.At
	Subscriptions       int       `json:"subscriptions"`
	RefusingWrites      string    `json:"refusing_writes,omitempty"`
}

// StatusLakeBucket is one tiered bucket.
type StatusLakeBucket struct {
	Table        string  `json:"table"`
	Bucket       int     `json:"bucket"`
	TieredOffset int64   `json:"tiered_offset"`
	LogEnd       int64   `json:"log_end"`
	LagRows      int64   `json:"lag_rows"`
	LagSeconds   float64 `json:"lag_seconds"`
	Rounds       int64   `json:"rounds"`
	LastError    string  `json:"last_error,omitempty"`
}

// StatusSubscription is one change stream being served.
type StatusSubscription struct {
	Table      string  `json:"table"`
	Buckets    []int   `json:"buckets"`
	ReadRows   int64   `json:"read_rows"`
	LagRows    int64   `json:"lag_rows"`
	AgeSeconds float64 `json:"age_seconds"`
}

// StatusError is a failed request (the last 20, newest first).
type StatusError = recentError

// StatusQuarantined is a table start-up could not open.
type StatusQuarantined struct {
	Table  string `json:"table"`
	Part   string `json:"part"`
	Reason string `json:"reason"`
}

// rateWindow is how far back the current rates look.
const rateWindow = 10 * time.Second

func (n *Node) uptime() time.Duration { return time.Since(n.mon.started) }

// status gathers the Status now.
func (n *Node) status(ctx context.Context) Status {
	now := time.Now()
	st := Status{Version: n.cfg.Version, Started: n.mon.started, UptimeSeconds: now.Sub(n.mon.started).Seconds(),
		Flight: n.Addr(), HTTP: n.HTTPAddr(), DataDir: n.cfg.DataDir,
		Tables: []StatusTable{}, Lake: []StatusLakeBucket{}, Subscriptions: []StatusSubscription{},
		Quarantined: []StatusQuarantined{}, Orphans: []string{}}
	tot, perTable, samples, errs := n.mon.snapshot()
	// The samples end with the totals now, so the rates are current.
	samples = append(samples, sample{At: now, Totals: tot, Tables: perTable})
	st.Errors = errs
	st.Series = series(samples)
	old := samples[0]
	for _, s := range samples {
		if now.Sub(s.At) <= rateWindow {
			old = s
			break
		}
	}
	secs := now.Sub(old.At).Seconds()
	rate := func(a, b int64) float64 {
		if secs <= 0 {
			return 0
		}
		return float64(a-b) / secs
	}
	st.Totals = StatusTotals{IngestRows: tot.IngestRows, IngestBytes: tot.IngestBytes, ScanRows: tot.ScanRows, Queries: tot.Queries,
		Requests: tot.Requests, Errors: tot.Errors, RateWindowSeconds: secs,
		IngestRowsPerSecond: rate(tot.IngestRows, old.Totals.IngestRows), IngestBytesPerSec: rate(tot.IngestBytes, old.Totals.IngestBytes),
		ScanRowsPerSecond: rate(tot.ScanRows, old.Totals.ScanRows), QueriesPerSecond: rate(tot.Queries, old.Totals.Queries),
		PreparedStatements: n.flight.PreparedOpen()}
	subsOf := map[string]int{}
	for _, s := range n.flight.Subscriptions() {
		subsOf[s.Table]++
		st.Subscriptions = append(st.Subscriptions, StatusSubscription{Table: s.Table, Buckets: s.Buckets, ReadRows: s.Read,
			LagRows: s.LagRows, AgeSeconds: now.Sub(s.Started).Seconds()})
	}
	st.Totals.Subscriptions = len(st.Subscriptions)
	lake := n.lakeStatus()
	for _, t := range n.tableSizes(ctx, lake) {
		cur, was := perTable[t.Name], old.Tables[t.Name]
		row := StatusTable{Name: t.Name, Buckets: t.Buckets, Rows: t.Rows, DiskBytes: t.DiskBytes, Datalake: t.Datalake,
			LakeBytes: t.LakeBytes, LakeRows: t.LakeRows, LagRows: t.LagRows, FreshnessLagSeconds: t.LagSecs,
			IngestRowsPerSecond: rate(cur.IngestRows, was.IngestRows), ScanRowsPerSecond: rate(cur.ScanRows, was.ScanRows),
			IngestSeries: tableSeries(samples, t.Name), Subscriptions: subsOf[t.Name], RefusingWrites: t.Refusing}
		st.Tables = append(st.Tables, row)
		st.Totals.Tables++
		st.Totals.Rows += t.Rows
		st.Totals.DiskBytes += t.DiskBytes
		st.Totals.LakeBytes += t.LakeBytes
	}
	n.statusHealth(ctx, &st, lake)
	st.Memory = n.memory()
	st.Cluster = n.clusterStatus(ctx)
	if see := n.visibleTables(ctx); see != nil {
		filterStatus(&st, see) // status_privileges.go
	}
	return st
}

// statusHealth fills in the tiered buckets (lake) and what start-up could
// not open.
func (n *Node) statusHealth(ctx context.Context, st *Status, lake []tiering.BucketStatus) {
	labels := n.tableLabels(ctx)
	for _, b := range lake {
		st.Lake = append(st.Lake, StatusLakeBucket{Table: labels.of(b.TableID, b.Table), Bucket: b.Bucket, TieredOffset: b.TieredOffset,
			LogEnd: b.LogEnd, LagRows: b.LagRows, LagSeconds: b.Lag.Seconds(), Rounds: b.Rounds, LastError: b.LastError})
	}
	for _, q := range n.store.Quarantined() {
		st.Quarantined = append(st.Quarantined, StatusQuarantined{Table: labels.of(q.ID, q.Table), Part: string(q.Part), Reason: q.Err.Error()})
	}
	for _, o := range n.store.Orphans() {
		st.Orphans = append(st.Orphans, o.Dir)
	}
}

// series turns consecutive samples into rates.
func series(samples []sample) StatusSeries {
	s := StatusSeries{IntervalSeconds: sampleEvery.Seconds(), At: []float64{}, IngestRows: []float64{}, IngestBytes: []float64{},
		ScanRows: []float64{}, Queries: []float64{}, Errors: []float64{}}
	for i := 1; i < len(samples); i++ {
		a, b := samples[i-1], samples[i]
		secs := b.At.Sub(a.At).Seconds()
		if secs <= 0 {
			continue
		}
		per := func(x, y int64) float64 { return float64(y-x) / secs }
		s.At = append(s.At, float64(b.At.UnixMilli())/1000)
		s.IngestRows = append(s.IngestRows, per(a.Totals.IngestRows, b.Totals.IngestRows))
		s.IngestBytes = append(s.IngestBytes, per(a.Totals.IngestBytes, b.Totals.IngestBytes))
		s.ScanRows = append(s.ScanRows, per(a.Totals.ScanRows, b.Totals.ScanRows))
		s.Queries = append(s.Queries, per(a.Totals.Queries, b.Totals.Queries))
		s.Errors = append(s.Errors, per(a.Totals.Errors, b.Totals.Errors))
	}
	return s
}

// tableSeries is a table's ingest rate at the points of series.
func tableSeries(samples []sample, name string) []float64 {
	out := []float64{}
	for i := 1; i < len(samples); i++ {
		a, b := samples[i-1], samples[i]
		if secs := b.At.Sub(a.At).Seconds(); secs > 0 {
			out = append(out, float64(b.Tables[name].IngestRows-a.Tables[name].IngestRows)/secs)
		}
	}
	return out
}

// memory reads the Go runtime's memory and the node's budgets.
func (n *Node) memory() StatusMemory {
	sm := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/total:bytes"}}
	metrics.Read(sm)
	var m StatusMemory
	if sm[0].Value.Kind() == metrics.KindUint64 {
		m.GoHeapBytes = int64(sm[0].Value.Uint64())
	}
	if sm[1].Value.Kind() == metrics.KindUint64 {
		m.GoTotalBytes = int64(sm[1].Value.Uint64())
	}
	m.CacheBytes = n.store.CacheStats().Bytes
	if c, _ := n.cfg.cacheBytes(); c > 0 {
		m.CacheLimitBytes = c
	}
	m.EngineLimitBytes, _ = n.cfg.engineMemory()
	ss := n.flight.StreamStats()
	m.StreamUsedBytes, m.StreamBudgetBytes = ss.Used, ss.Budget
	return m
}

// statusJSON answers /status.json.
func (n *Node) statusJSON(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	if err := json.NewEncoder(w).Encode(n.status(r.Context())); err != nil {
		n.cfg.Logger.Debug("status.json", "error", err)
	}
}
