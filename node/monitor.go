package node

import (
	"context"
	"github.com/lakestream/lakestream/planner/duck"
	"sort"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/util"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/codes"

	"github.com/lakestream/lakestream/flightsrv"
	"github.com/lakestream/lakestream/internal/scan"
	"github.com/lakestream/lakestream/tiering"
)

// monitor is what the node counts of its own work: the Prometheus
// counters and histograms of requests, ingest, scans, queries, fsyncs and
// tiering rounds (metrics.go), and, for the status page (status.go), the
// same totals kept as plain numbers, a ring of samples of them for the
// charts, and the last failed requests.
type monitor struct {
	started time.Time

	requests    *prometheus.CounterVec   // rpc, code
	latency     *prometheus.HistogramVec // rpc
	ingestRows  *prometheus.CounterVec   // table
	ingestBytes *prometheus.CounterVec   // table
	scanRows    *prometheus.CounterVec   // table
	scanBytes   *prometheus.CounterVec   // table
	queries     *prometheus.CounterVec   // kind, code
	queryTime   *prometheus.HistogramVec // kind
	fsync       *prometheus.HistogramVec // file
	roundRows   prometheus.Histogram
	roundCommit prometheus.Histogram

	mu struct {
		sync.Mutex
		totals  totals
		tables  map[string]*tableTotals
		errors  []recentError // the last maxRecentErrors, oldest first
		samples []sample      // the last maxSamples, oldest first
	}
}

// totals are the node's counts since start.
type totals struct {
	IngestRows, IngestBytes int64
	ScanRows, ScanBytes     int64
	Queries, Requests       int64
	Errors                  int64
}

// tableTotals are one table's counts since start.
type tableTotals struct{ IngestRows, IngestBytes, ScanRows, ScanBytes int64 }

// sample is the totals at one instant, for the rates of the charts.
type sample struct {
	At     time.Time
	Totals totals
	Tables map[string]tableTotals
}

// recentError is a failed request, as the status page lists it.
type recentError struct {
	Time      time.Time `json:"time"`
	RPC       string    `json:"rpc"`
	Kind      string    `json:"kind,omitempty"`
	Table     string    `json:"table,omitempty"`
	Code      string    `json:"code"`
	Message   string    `json:"message"`
	RequestID string    `json:"request_id"`
	Peer      string    `json:"peer"`
	Seconds   float64   `json:"duration_seconds"`
}

const (
	maxRecentErrors = 20
	// maxSamples at sampleEvery keep the last five minutes for the charts.
	maxSamples  = 150
	sampleEvery = 2 * time.Second
)

// Latency buckets: from a cached metadata call (100 µs) to a long query
// (a minute).
var latencyBuckets = prometheus.ExponentialBucketsRange(100e-6, 60, 16)

func newMonitor() *monitor {
	m := &monitor{
		started: time.Now(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "lakestream_requests_total",
			Help: "Flight SQL calls finished, by method and gRPC status code."}, []string{"rpc", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "lakestream_request_duration_seconds",
			Help: "Duration of Flight SQL calls by method, from the request to the last message sent (a DoGet's whole result stream).", Buckets: latencyBuckets}, []string{"rpc"}),
		ingestRows: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "lakestream_ingest_rows_total",
			Help: "Rows written to the table's log (ingest, INSERT, PATH DoPut) since start."}, []string{"table"}),
		ingestBytes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "lakestream_ingest_bytes_total",
			Help: "Bytes of the encoded (compressed) batches written to the table's log since start."}, []string{"table"}),
		scanRows: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "lakestream_scan_rows_total",
			Help: "Rows read from the table: sent by plain scans, or read by the query engine, since start."}, []string{"table"}),
		scanBytes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "lakestream_scan_bytes_total",
			Help: "Bytes read from the table: of the Arrow messages plain scans sent, or of the Arrow buffers the query engine read, since start."}, []string{"table"}),
		queries: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "lakestream_queries_total",
			Help: "Result streams served (DoGet), by kind (query: run by the engine; prepared: a prepared statement; scan: a plain scan) and gRPC status code."}, []string{"kind", "code"}),
		queryTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "lakestream_query_duration_seconds",
			Help: "Duration of result streams (DoGet) by kind, until their last row was sent.", Buckets: latencyBuckets}, []string{"kind"}),
		fsync: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "lakestream_log_fsync_duration_seconds",
			Help:    "Duration of the fsyncs of the write path: a bucket's segment (file=segment), the table's commit record (file=commit).",
			Buckets: prometheus.ExponentialBucketsRange(10e-6, 2, 16)}, []string{"file"}),
		roundRows: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "lakestream_lake_round_rows",
			Help: "Rows committed to the lake by each tiering round that had rows to commit.", Buckets: prometheus.ExponentialBuckets(1, 4, 14)}),
		roundCommit: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "lakestream_lake_commit_duration_seconds",
			Help: "Duration of the Iceberg commit of each tiering round that had rows to commit.", Buckets: prometheus.ExponentialBucketsRange(1e-3, 60, 14)}),
	}
	m.mu.tables = map[string]*tableTotals{}
	return m
}

// collectors are the monitor's metrics, to register.
func (m *monitor) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.requests, m.latency, m.ingestRows, m.ingestBytes, m.scanRows, m.scanBytes,
		m.queries, m.queryTime, m.fsync, m.roundRows, m.roundCommit}
}

func (m *monitor) tableLocked(name string) *tableTotals {
	t := m.mu.tables[name]
	if t == nil {
		t = &tableTotals{}
		m.mu.tables[name] = t
	}
	return t
}

// Call counts a finished Flight call (flightsrv.Observer).
func (m *monitor) Call(c flightsrv.Call) {
	code := c.Code.String()
	m.requests.WithLabelValues(c.RPC, code).Inc()
	m.latency.WithLabelValues(c.RPC).Observe(c.Took.Seconds())
	isQuery := c.RPC == "DoGet" && (c.Kind == "query" || c.Kind == "prepared" || c.Kind == "scan")
	if isQuery {
		m.queries.WithLabelValues(c.Kind, code).Inc()
		m.queryTime.WithLabelValues(c.Kind).Observe(c.Took.Seconds())
	}
	plainScan := c.RPC == "DoGet" && c.Kind == "scan" && c.Table != ""
	if plainScan {
		m.scanRows.WithLabelValues(c.Table).Add(float64(c.Rows))
		m.scanBytes.WithLabelValues(c.Table).Add(float64(c.Bytes))
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.mu.totals.Requests++
	if isQuery {
		m.mu.totals.Queries++
	}
	if plainScan {
		m.mu.totals.ScanRows += c.Rows
		m.mu.totals.ScanBytes += c.Bytes
		t := m.tableLocked(c.Table)
		t.ScanRows += c.Rows
		t.ScanBytes += c.Bytes
	}
	if c.Code != codes.OK {
		m.mu.totals.Errors++
		m.mu.errors = append(m.mu.errors, recentError{Time: c.End, RPC: c.RPC, Kind: c.Kind, Table: c.Table, Code: code,
			Message: c.Message, RequestID: c.ID, Peer: c.Peer, Seconds: c.Took.Seconds()})
		if n := len(m.mu.errors); n > maxRecentErrors {
			m.mu.errors = append(m.mu.errors[:0], m.mu.errors[n-maxRecentErrors:]...)
		}
	}
}

// wrote counts a write stored in a table's log (tables.Config.OnWrite).
func (m *monitor) wrote(table string, rows, bytes int64) {
	m.ingestRows.WithLabelValues(table).Add(float64(rows))
	m.ingestBytes.WithLabelValues(table).Add(float64(bytes))
	m.mu.Lock()
	defer m.mu.Unlock()
	m.mu.totals.IngestRows += rows
	m.mu.totals.IngestBytes += bytes
	t := m.tableLocked(table)
	t.IngestRows += rows
	t.IngestBytes += bytes
}

// read counts what the query engine read of a table.
func (m *monitor) read(table string, rows, bytes int64) {
	m.scanRows.WithLabelValues(table).Add(float64(rows))
	m.scanBytes.WithLabelValues(table).Add(float64(bytes))
	m.mu.Lock()
	defer m.mu.Unlock()
	m.mu.totals.ScanRows += rows
	m.mu.totals.ScanBytes += bytes
	t := m.tableLocked(table)
	t.ScanRows += rows
	t.ScanBytes += bytes
}

// synced observes an fsync of the write path (columnarlog.Options.OnSync).
func (m *monitor) synced(file string, took time.Duration) {
	m.fsync.WithLabelValues(file).Observe(took.Seconds())
}

// round observes a tiering round (tiering.Config.OnRound).
func (m *monitor) round(_ string, res tiering.RoundResult) {
	m.roundRows.Observe(float64(res.Rows))
	m.roundCommit.Observe(res.Commit.Seconds())
}

// sample records the totals now, keeping the last maxSamples.
func (m *monitor) sample(now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := sample{At: now, Totals: m.mu.totals, Tables: make(map[string]tableTotals, len(m.mu.tables))}
	for name, t := range m.mu.tables {
		s.Tables[name] = *t
	}
	m.mu.samples = append(m.mu.samples, s)
	if n := len(m.mu.samples); n > maxSamples {
		m.mu.samples = append(m.mu.samples[:0], m.mu.samples[n-maxSamples:]...)
	}
}

// run samples every sampleEvery until ctx ends.
func (m *monitor) run(ctx context.Context) {
	m.sample(time.Now())
	t := time.NewTicker(sampleEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			m.sample(now)
		}
	}
}

// snapshot copies the totals, the samples and the recent errors, newest
// error first.
func (m *monitor) snapshot() (totals, map[string]tableTotals, []sample, []recentError) {
	m.mu.Lock()
	defer m.mu.Unlock()
	tables := make(map[string]tableTotals, len(m.mu.tables))
	for name, t := range m.mu.tables {
		tables[name] = *t
	}
	errs := make([]recentError, len(m.mu.errors))
	for i, e := range m.mu.errors {
		errs[len(errs)-1-i] = e
	}
	return m.mu.totals, tables, append([]sample(nil), m.mu.samples...), errs
}

// tableNames is the sorted names of a map's tables.
func tableNames[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for name := range m {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// countingResolver counts what the query engine reads of each table. It
// wraps the node's resolver, views included (duck.Views): the engine finds
// the views through the resolver it is given.
type countingResolver struct {
	viewResolver
	m *monitor
}

type viewResolver interface {
	scan.Resolver
	duck.Views
}

func (r countingResolver) Table(ctx context.Context, db, name string) (scan.Table, error) {
	t, err := r.viewResolver.Table(ctx, db, name)
	if err != nil {
		return nil, err
	}
	return countingTable{t, r.m}, nil
}

type countingTable struct {
	scan.Table
	m *monitor
}

func (t countingTable) Plan(ctx context.Context, req scan.Request) (scan.Plan, error) {
	p, err := t.Table.Plan(ctx, req)
	if err != nil {
		return nil, err
	}
	parts := p.Parts()
	wrapped := make([]scan.Part, len(parts))
	for i, part := range parts {
		wrapped[i] = countingPart{part, t.Name(), t.m}
	}
	return scan.NewPlan(p.Schema(), wrapped), nil
}

type countingPart struct {
	scan.Part
	table string
	m     *monitor
}

func (p countingPart) Open(ctx context.Context) (scan.RecordStream, error) {
	s, err := p.Part.Open(ctx)
	if err != nil {
		return nil, err
	}
	return &countingStream{RecordStream: s, table: p.table, m: p.m}, nil
}

// countingStream counts the records of one part as they are read, and
// reports them when the part is closed.
type countingStream struct {
	scan.RecordStream
	table       string
	m           *monitor
	rows, bytes int64
}

func (s *countingStream) Next() (arrow.RecordBatch, error) {
	rec, err := s.RecordStream.Next()
	if rec != nil {
		s.rows += rec.NumRows()
		s.bytes += util.TotalRecordSize(rec)
	}
	return rec, err
}

func (s *countingStream) Close() error {
	if s.rows > 0 {
		s.m.read(s.table, s.rows, s.bytes)
	}
	s.rows, s.bytes = 0, 0
	return s.RecordStream.Close()
}
