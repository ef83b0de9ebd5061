package node

import (
	"context"
	"net/http"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

// scrape reads /metrics with the Prometheus text parser.
func scrape(t *testing.T, n *Node) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get("http://" + n.HTTPAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("/metrics does not parse: %v", err)
	}
	return fams
}

// value is the sum of the samples of a family (counter, gauge, or a
// histogram's count) whose labels include want.
func value(fams map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	f := fams[name]
	if f == nil {
		return 0
	}
	sum := 0.0
next:
	for _, m := range f.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if labels[k] != v {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			sum += m.GetCounter().GetValue()
		case m.Gauge != nil:
			sum += m.GetGauge().GetValue()
		case m.Histogram != nil:
			sum += float64(m.GetHistogram().GetSampleCount())
		}
	}
	return sum
}

// /metrics parses with the Prometheus text parser; the request, ingest,
// scan, query, fsync and size metrics are there with their types, follow
// the naming conventions, and move after an ingest and a query.
func TestMetricsParseAndMove(t *testing.T) {
	n, stop, done := startNodeWith(t, Config{DataDir: t.TempDir(), Listen: "127.0.0.1:0", HTTP: "127.0.0.1:0", Tiering: TieringManual,
		Logger: quietConfig("").Logger})
	defer func() { stop(); <-done }()
	cl := client(t, n.Addr())
	mustExec(t, cl, "CREATE TABLE m (id BIGINT, v VARCHAR)")
	before := scrape(t, n)

	mustExec(t, cl, "INSERT INTO m SELECT range, 'x' FROM range(500)")
	if got := queryInt64(t, cl, "SELECT count(*)::BIGINT FROM m WHERE id >= 0"); got != 500 {
		t.Fatalf("count %d", got)
	}
	ctx := context.Background()
	info, err := cl.Execute(ctx, "SELECT * FROM m") // a plain scan: the stored batches as they are
	if err != nil {
		t.Fatal(err)
	}
	var scanned int64
	for _, ep := range info.Endpoint {
		rdr, err := cl.DoGet(ctx, ep.Ticket)
		if err != nil {
			t.Fatal(err)
		}
		for rdr.Next() {
			scanned += rdr.RecordBatch().NumRows()
		}
		rdr.Release()
	}
	if scanned != 500 {
		t.Fatalf("plain scan read %d rows", scanned)
	}
	if _, err := cl.Execute(ctx, "SELECT * FROM no_such_table"); err == nil {
		t.Fatal("query of a missing table succeeded")
	}
	tbl, err := n.Tables().Get(ctx, "", "m")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := n.Lake().Round(ctx, tbl.Def().ID); err != nil {
		t.Fatal(err)
	}
	after := scrape(t, n)

	types := map[string]dto.MetricType{
		"lakestream_requests_total":               dto.MetricType_COUNTER,
		"lakestream_request_duration_seconds":     dto.MetricType_HISTOGRAM,
		"lakestream_ingest_rows_total":            dto.MetricType_COUNTER,
		"lakestream_ingest_bytes_total":           dto.MetricType_COUNTER,
		"lakestream_scan_rows_total":              dto.MetricType_COUNTER,
		"lakestream_scan_bytes_total":             dto.MetricType_COUNTER,
		"lakestream_queries_total":                dto.MetricType_COUNTER,
		"lakestream_query_duration_seconds":       dto.MetricType_HISTOGRAM,
		"lakestream_log_fsync_duration_seconds":   dto.MetricType_HISTOGRAM,
		"lakestream_lake_round_rows":              dto.MetricType_HISTOGRAM,
		"lakestream_lake_commit_duration_seconds": dto.MetricType_HISTOGRAM,
		"lakestream_prepared_statements":          dto.MetricType_GAUGE,
		"lakestream_table_rows":                   dto.MetricType_GAUGE,
		"lakestream_table_disk_bytes":             dto.MetricType_GAUGE,
		"lakestream_table_lake_bytes":             dto.MetricType_GAUGE,
		"lakestream_engine_memory_limit_bytes":    dto.MetricType_GAUGE,
		"lakestream_engine_memory_used_bytes":     dto.MetricType_GAUGE,
		"lakestream_cache_bytes":                  dto.MetricType_GAUGE,
		"lakestream_uptime_seconds":               dto.MetricType_GAUGE,
		"lakestream_log_committed_offset":         dto.MetricType_GAUGE,
		"go_memstats_heap_alloc_bytes":            dto.MetricType_GAUGE,
		"lakestream_stream_memory_used_bytes":     dto.MetricType_GAUGE,
		"lakestream_lake_rows_tiered_total":       dto.MetricType_COUNTER,
		"lakestream_streams_cut_total":            dto.MetricType_COUNTER,
		"lakestream_limit_hits_total":             dto.MetricType_COUNTER,
		"lakestream_build_info":                   dto.MetricType_GAUGE,
		"lakestream_stream_memory_budget_bytes":   dto.MetricType_GAUGE,
		"lakestream_lake_last_commit_seconds":     dto.MetricType_GAUGE,
		"lakestream_orphan_table_dirs":            dto.MetricType_GAUGE,
		"lakestream_cache_limit_bytes":            dto.MetricType_GAUGE,
		"lakestream_log_refusing_writes":          dto.MetricType_GAUGE,
		"lakestream_lake_lag_rows":                dto.MetricType_GAUGE,
		"lakestream_lake_lag_seconds":             dto.MetricType_GAUGE,
		"lakestream_log_bytes":                    dto.MetricType_GAUGE,
		"lakestream_cache_hits_total":             dto.MetricType_COUNTER,
		"lakestream_stream_memory_peak_bytes":     dto.MetricType_GAUGE,
		"lakestream_streams":                      dto.MetricType_GAUGE,
		"lakestream_streams_waiting":              dto.MetricType_GAUGE,
		"lakestream_stream_produced_bytes":        dto.MetricType_GAUGE,
		"lakestream_lake_tiered_offset":           dto.MetricType_GAUGE,
		"lakestream_log_start_offset":             dto.MetricType_GAUGE,
		"lakestream_log_segments":                 dto.MetricType_GAUGE,
		"lakestream_lake_rounds_total":            dto.MetricType_COUNTER,
		"lakestream_lake_log_end_offset":          dto.MetricType_GAUGE,
		"lakestream_cache_misses_total":           dto.MetricType_COUNTER,
		"lakestream_lake_round_failing":           dto.MetricType_GAUGE,
		"process_resident_memory_bytes":           dto.MetricType_GAUGE,
		"go_goroutines":                           dto.MetricType_GAUGE,
	}
	for name, typ := range types {
		f := after[name]
		if f == nil {
			t.Errorf("%s missing", name)
			continue
		}
		if f.GetType() != typ {
			t.Errorf("%s is a %s, want %s", name, f.GetType(), typ)
		}
	}
	for name, f := range after {
		if !strings.HasPrefix(name, "lakestream_") {
			continue
		}
		switch f.GetType() {
		case dto.MetricType_COUNTER:
			if !strings.HasSuffix(name, "_total") {
				t.Errorf("counter %s does not end in _total", name)
			}
		case dto.MetricType_GAUGE, dto.MetricType_HISTOGRAM:
			if strings.HasSuffix(name, "_total") {
				t.Errorf("%s %s ends in _total", f.GetType(), name)
			}
		}
		if strings.Contains(name, "_ms") || strings.Contains(name, "millis") || strings.Contains(name, "_kb") {
			t.Errorf("%s: units are seconds and bytes", name)
		}
	}

	moved := []struct {
		name    string
		labels  map[string]string
		atLeast float64
	}{
		{"lakestream_ingest_rows_total", map[string]string{"table": "default.m"}, 500},
		{"lakestream_ingest_bytes_total", map[string]string{"table": "default.m"}, 1},
		{"lakestream_scan_rows_total", map[string]string{"table": "default.m"}, 1000}, // the query's 500 and the plain scan's
		{"lakestream_queries_total", map[string]string{"kind": "scan", "code": "OK"}, 1},
		{"lakestream_scan_bytes_total", map[string]string{"table": "default.m"}, 1},
		{"lakestream_queries_total", map[string]string{"kind": "query", "code": "OK"}, 1},
		{"lakestream_query_duration_seconds", map[string]string{"kind": "query"}, 1},
		{"lakestream_requests_total", map[string]string{"rpc": "DoGet", "code": "OK"}, 1},
		{"lakestream_requests_total", map[string]string{"rpc": "GetFlightInfo", "code": "NotFound"}, 1},
		{"lakestream_request_duration_seconds", map[string]string{"rpc": "DoPut"}, 1},
		{"lakestream_log_fsync_duration_seconds", map[string]string{"file": "segment"}, 1},
		{"lakestream_log_fsync_duration_seconds", map[string]string{"file": "commit"}, 1},
		{"lakestream_lake_round_rows", nil, 1},
		{"lakestream_table_rows", map[string]string{"table": "default.m"}, 500},
		{"lakestream_table_disk_bytes", map[string]string{"table": "default.m"}, 1},
		{"lakestream_table_lake_bytes", map[string]string{"table": "default.m"}, 1},
	}
	for _, m := range moved {
		b, a := value(before, m.name, m.labels), value(after, m.name, m.labels)
		if a-b < m.atLeast {
			t.Errorf("%s%v went from %v to %v, want a rise of at least %v", m.name, m.labels, b, a, m.atLeast)
		}
	}
}

// Every call's request id reaches its client in a trailer, the same id as
// in the status page's list of recent errors for a failed call.
func TestRequestIDTrailer(t *testing.T) {
	n, stop, done := startNode(t, t.TempDir())
	defer func() { stop(); <-done }()
	cl := client(t, n.Addr())
	var trailer metadata.MD
	_, err := cl.Execute(context.Background(), "SELECT * FROM missing_table", grpc.Trailer(&trailer))
	if err == nil {
		t.Fatal("query of a missing table succeeded")
	}
	ids := trailer.Get("lakestream-request-id")
	if len(ids) != 1 || len(ids[0]) != 16 {
		t.Fatalf("trailer %v: want one lakestream-request-id of 16 hex digits", trailer)
	}
	st := n.status(context.Background())
	if len(st.Errors) == 0 || st.Errors[0].RequestID != ids[0] || st.Errors[0].Code != "NotFound" {
		t.Fatalf("recent errors %+v: want the failed call, request id %s", st.Errors, ids[0])
	}
}
