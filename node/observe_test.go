package node

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// logLines parses a JSON log into its lines with message msg.
func logLines(t *testing.T, logs *syncBuffer, msg string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line is not JSON: %q", line)
		}
		if m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

// A failed call logs one line with its method, kind, table, code,
// message, duration, peer and request id, the id its client got in the
// trailer and in the error's details; a call over the slow-query threshold
// logs one with its SQL.
func TestFailedAndSlowRequestsAreLogged(t *testing.T) {
	var logs syncBuffer
	cfg := Config{DataDir: t.TempDir(), Listen: "127.0.0.1:0", HTTP: "off", SlowQuery: time.Nanosecond,
		Logger: slog.New(slog.NewJSONHandler(&logs, nil))}
	n, stop, done := startNodeWith(t, cfg)
	defer func() { stop(); <-done }()
	cl := client(t, n.Addr())
	ctx := context.Background()

	var trailer metadata.MD
	_, err := cl.Execute(ctx, "SELECT * FROM missing_table", grpc.Trailer(&trailer))
	if err == nil {
		t.Fatal("query of a missing table succeeded")
	}
	id := trailer.Get("lakestream-request-id")
	var detail string
	for _, d := range status.Convert(err).Details() {
		if ri, ok := d.(*errdetails.RequestInfo); ok {
			detail = ri.GetRequestId()
		}
	}
	if len(id) != 1 || detail != id[0] {
		t.Fatalf("request id: trailer %v, error details %q: want the same id in both", id, detail)
	}

	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	b.Field(0).(*array.Int64Builder).Append(1)
	rec := b.NewRecordBatch()
	rdr, _ := array.NewRecordReader(schema, []arrow.RecordBatch{rec})
	if _, err := cl.ExecuteIngest(ctx, rdr, &flightsql.ExecuteIngestOpts{Table: "nope", TableDefinitionOptions: &flightsql.TableDefinitionOptions{
		IfNotExist: flightsql.TableDefinitionOptionsTableNotExistOptionFail, IfExists: flightsql.TableDefinitionOptionsTableExistsOptionAppend}}); err == nil {
		t.Fatal("ingest into a missing table succeeded")
	}
	mustExec(t, cl, "CREATE TABLE s (id BIGINT)", "INSERT INTO s SELECT range FROM range(10)")
	if got := queryInt64(t, cl, "SELECT sum(id)::BIGINT FROM s"); got != 45 {
		t.Fatalf("sum %d", got)
	}

	failed := logLines(t, &logs, "request failed")
	byID := map[string]map[string]any{}
	for _, l := range failed {
		byID[l["request_id"].(string)] = l
	}
	q := byID[id[0]]
	if q == nil {
		t.Fatalf("no log line of request %s among %v", id[0], failed)
	}
	for k, want := range map[string]string{"rpc": "GetFlightInfo", "kind": "query", "code": "NotFound", "sql": "SELECT * FROM missing_table", "level": "WARN"} {
		if q[k] != want {
			t.Errorf("failed query's line: %s = %v, want %q (%v)", k, q[k], want, q)
		}
	}
	if !strings.Contains(q["error"].(string), "missing_table") || q["peer"] == "" || q["duration"] == nil {
		t.Errorf("failed query's line lacks the error, peer or duration: %v", q)
	}
	var ingest map[string]any
	for _, l := range failed {
		if l["rpc"] == "DoPut" {
			ingest = l
		}
	}
	if ingest == nil || ingest["kind"] != "ingest" || ingest["table"] != "default.nope" {
		t.Errorf("failed ingest's line %v: want rpc DoPut, kind ingest, table default.nope", ingest)
	}
	var slow bool
	for _, l := range logLines(t, &logs, "slow request") {
		if l["rpc"] == "DoGet" && l["kind"] == "query" && l["sql"] == "SELECT sum(id)::BIGINT FROM s" && l["code"] == "OK" {
			slow = true
		}
	}
	if !slow {
		t.Errorf("no slow-request line of the query's DoGet:\n%s", logs.String())
	}
	for _, l := range logLines(t, &logs, "table opened") {
		t.Errorf("a table was opened at start, none exists: %v", l)
	}
}

// Without a threshold (negative) nothing is logged as slow; a table opened
// at start-up is logged with its time.
func TestSlowQueryOffAndStartupLog(t *testing.T) {
	var logs syncBuffer
	dir := t.TempDir()
	cfg := Config{DataDir: dir, Listen: "127.0.0.1:0", HTTP: "off", SlowQuery: -1, Logger: slog.New(slog.NewJSONHandler(&logs, nil))}
	n, stop, done := startNodeWith(t, cfg)
	mustExec(t, client(t, n.Addr()), "CREATE TABLE s (id BIGINT)", "INSERT INTO s SELECT range FROM range(10)")
	stop()
	<-done
	if l := logLines(t, &logs, "slow request"); len(l) != 0 {
		t.Errorf("slow requests logged with the threshold off: %v", l)
	}
	n, stop, done = startNodeWith(t, cfg)
	defer func() { stop(); <-done }()
	opened := logLines(t, &logs, "table opened")
	if len(opened) != 1 || opened[0]["table"] != "default.s" || opened[0]["elapsed"] == nil {
		t.Errorf("table opened lines %v: want one for default.s with its time", opened)
	}
	for _, msg := range []string{"catalog opened", "lake opened", "lakestream serving"} {
		waitUntil(t, func() bool { return len(logLines(t, &logs, msg)) == 2 })
	}
}

// A subscription is counted while it is open and reports the rows it read
// and its lag, which falls to 0 once it has read every committed row.
func TestSubscriptionsAreReported(t *testing.T) {
	n, stop, done := startNode(t, t.TempDir())
	defer func() { stop(); <-done }()
	cl := client(t, n.Addr())
	mustExec(t, cl, "CREATE TABLE ev (id BIGINT) WITH ('bucket.num'='2', 'bucket.key'='id')", "INSERT INTO ev SELECT range FROM range(300)")
	ctx, cancel := context.WithCancel(context.Background())
	info, err := cl.Execute(ctx, "SELECT id FROM changes('ev', 'earliest')")
	if err != nil {
		t.Fatal(err)
	}
	read := make(chan struct{})
	go func() {
		defer close(read)
		for _, ep := range info.Endpoint {
			rdr, err := cl.DoGet(ctx, ep.Ticket)
			if err != nil {
				return
			}
			for rdr.Next() {
			}
			rdr.Release()
		}
	}()
	sub := func() (int, int64, int64) {
		st := n.status(context.Background())
		var read, lag int64
		for _, s := range st.Subscriptions {
			read += s.ReadRows
			lag += s.LagRows
		}
		return len(st.Subscriptions), read, lag
	}
	waitUntil(t, func() bool { c, r, l := sub(); return c == 1 && r == 300 && l == 0 })
	mustExec(t, cl, "INSERT INTO ev SELECT range FROM range(300, 350)")
	waitUntil(t, func() bool { c, r, l := sub(); return c == 1 && r == 350 && l == 0 })
	body := func() string { _, b := get(t, n, "/metrics"); return b }
	if m := body(); !strings.Contains(m, `lakestream_subscriptions{table="default.ev"} 1`) || !strings.Contains(m, `lakestream_subscription_lag_rows{table="default.ev"} 0`) {
		t.Errorf("/metrics lacks the subscription")
	}
	cancel()
	<-read
	waitUntil(t, func() bool { c, _, _ := sub(); return c == 0 })
}
