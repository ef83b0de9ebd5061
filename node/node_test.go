package node

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

func startNode(t *testing.T, dir string) (*Node, context.CancelFunc, chan error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	n, err := Start(ctx, Config{DataDir: dir, Listen: "127.0.0.1:0", HTTP: "127.0.0.1:0", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- n.Serve(ctx) }()
	return n, cancel, done
}

func client(t *testing.T, addr string) *flightsql.Client {
	t.Helper()
	cl, err := flightsql.NewClient(addr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}

// queryInt64 runs a one-value query.
func queryInt64(t *testing.T, cl *flightsql.Client, sql string) int64 {
	t.Helper()
	ctx := context.Background()
	info, err := cl.Execute(ctx, sql)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	var got int64
	for _, ep := range info.Endpoint {
		rdr, err := cl.DoGet(ctx, ep.Ticket)
		if err != nil {
			t.Fatal(err)
		}
		for rdr.Next() {
			got += rdr.RecordBatch().Column(0).(*array.Int64).Value(0)
		}
		rdr.Release()
	}
	return got
}

func TestNodeServesRestartsAndReports(t *testing.T) {
	dir := t.TempDir()
	n, stop, done := startNode(t, dir)
	cl := client(t, n.Addr())
	ctx := context.Background()
	if _, err := cl.ExecuteUpdate(ctx, "CREATE TABLE t (id BIGINT NOT NULL, v VARCHAR) WITH ('bucket.num'='2', 'bucket.key'='id')"); err != nil {
		t.Fatal(err)
	}
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "v", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	for i := range 1000 {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(1).(*array.StringBuilder).Append("x")
	}
	rec := b.NewRecordBatch()
	rdr, _ := array.NewRecordReader(schema, []arrow.RecordBatch{rec})
	if n, err := cl.ExecuteIngest(ctx, rdr, &flightsql.ExecuteIngestOpts{Table: "t", TableDefinitionOptions: &flightsql.TableDefinitionOptions{
		IfNotExist: flightsql.TableDefinitionOptionsTableNotExistOptionFail, IfExists: flightsql.TableDefinitionOptionsTableExistsOptionAppend}}); err != nil || n != 1000 {
		t.Fatalf("ingest: %d %v", n, err)
	}
	if got := queryInt64(t, cl, "SELECT count(*)::BIGINT FROM t"); got != 1000 {
		t.Fatalf("count %d", got)
	}
	for path, want := range map[string]string{
		"/healthz": "ok",
		"/metrics": `lakestream_log_committed_offset{bucket="1",table="default.t"}`,
		"/":        "default.t",
	} {
		resp, err := http.Get("http://" + n.HTTPAddr() + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(body), want) {
			t.Errorf("%s lacks %q:\n%.500s", path, want, body)
		}
	}
	stop()
	if err := <-done; err != nil {
		t.Fatalf("serve returned %v after a clean stop", err)
	}
	n, stop, done = startNode(t, dir)
	defer func() { stop(); <-done }()
	if got := queryInt64(t, client(t, n.Addr()), "SELECT sum(id)::BIGINT FROM t"); got != 999*1000/2 {
		t.Fatalf("after restart sum %d", got)
	}
}

func TestConfigValidate(t *testing.T) {
	c := Config{Listen: "nope", HTTP: "x", Sync: "sometimes", Catalog: "ftp://x", Warehouse: "s3://b", DefaultBuckets: 5000}
	c.EnsureDefaults()
	err := c.Validate()
	for _, want := range []string{"listen", "http", "sometimes", "catalog", "warehouse", "default buckets"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("validate error %v lacks %q", err, want)
		}
	}
}
