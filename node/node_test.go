package node

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go/table"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/lakestream/lakestream/internal/scan"
	"github.com/lakestream/lakestream/internal/vfs"
	"github.com/lakestream/lakestream/tiering"
)

func startNode(t *testing.T, dir string) (*Node, context.CancelFunc, chan error) {
	t.Helper()
	return startNodeWith(t, Config{DataDir: dir, Listen: "127.0.0.1:0", HTTP: "127.0.0.1:0", Logger: slog.New(slog.DiscardHandler)})
}

// startNodeWith starts a node of cfg and serves it until the returned
// cancel; done receives Serve's result.
func startNodeWith(t testing.TB, cfg Config) (*Node, context.CancelFunc, chan error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	n, err := Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- n.Serve(ctx) }()
	return n, cancel, done
}

func client(t testing.TB, addr string) *flightsql.Client {
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
	c := Config{Listen: "nope", HTTP: "x", Sync: "sometimes", Catalog: "ftp://x", Warehouse: "s3://b", DefaultBuckets: 5000, Tiering: "later", WriterExpiry: -time.Hour}
	c.EnsureDefaults()
	err := c.Validate()
	for _, want := range []string{"listen", "http", "sometimes", "catalog", "warehouse", "default buckets", `tiering "later"`, "writer expiry"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("validate error %v lacks %q", err, want)
		}
	}
}

// Tiering defaults to the background loop; with manual tiering a
// maintenance schedule, which only the loop would follow, is refused.
func TestConfigTiering(t *testing.T) {
	var c Config
	c.EnsureDefaults()
	if c.Tiering != TieringBackground {
		t.Fatalf("default tiering %q, want %q", c.Tiering, TieringBackground)
	}
	for _, tc := range []struct {
		tiering string
		m       tiering.Maintenance
		wantErr string
	}{
		{TieringBackground, tiering.Maintenance{EveryRounds: 5, OrphanEveryRounds: 20}, ""},
		{TieringManual, tiering.Maintenance{RetainSnapshots: 3, SnapshotAge: -1}, ""},
		{TieringManual, tiering.Maintenance{EveryRounds: 5}, "lake maintenance every 5 rounds"},
		{TieringManual, tiering.Maintenance{OrphanEveryRounds: 20}, "orphans every 20 rounds"},
	} {
		c := Config{Tiering: tc.tiering, LakeMaintenance: tc.m}
		c.EnsureDefaults()
		err := c.Validate()
		if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("tiering %s, maintenance %+v: validate = %v, want %q", tc.tiering, tc.m, err, tc.wantErr)
		}
	}
}

// With Tiering manual the node runs no tiering loop: rows reach the lake
// only through Lake().Round, and maintenance runs, with the configured
// policy, only through Lake().Maintain. The accessors reach the node's own
// parts: the lake's Iceberg catalog, and the resolver of the union reads.
func TestManualTiering(t *testing.T) {
	cfg := Config{DataDir: t.TempDir(), Listen: "127.0.0.1:0", HTTP: "off", Tiering: TieringManual,
		LakeMaintenance: tiering.Maintenance{RetainSnapshots: 1, SnapshotAge: -1}, Logger: slog.New(slog.DiscardHandler)}
	n, stop, done := startNodeWith(t, cfg)
	cl := client(t, n.Addr())
	ctx := context.Background()
	// A freshness of 1ms: a background loop would tier at once.
	if _, err := cl.ExecuteUpdate(ctx, `CREATE TABLE t (id BIGINT) WITH ('bucket.num'='2', 'bucket.key'='id', 'datalake.freshness'='1ms')`); err != nil {
		t.Fatal(err)
	}
	tbl, err := n.Tables().Get(ctx, "", "t")
	if err != nil {
		t.Fatal(err)
	}
	id := tbl.Def().ID
	insert := func(from, to int) {
		t.Helper()
		if _, err := cl.ExecuteUpdate(ctx, fmt.Sprintf("INSERT INTO t SELECT range FROM range(%d, %d)", from, to)); err != nil {
			t.Fatal(err)
		}
	}
	for r := range 3 {
		insert(r*100, r*100+100)
		res, err := n.Lake().Round(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if res.Rows != 100 {
			t.Fatalf("round %d tiered %d rows, want the 100 inserted before it", r+1, res.Rows)
		}
	}
	m, err := n.Lake().Maintain(ctx, id, false)
	if err != nil {
		t.Fatal(err)
	}
	if m.SnapshotsExpired == 0 {
		t.Fatalf("maintenance expired no snapshot of 3 with RetainSnapshots 1: %+v", m)
	}
	ice, err := n.LakeCatalog().LoadTable(ctx, table.Identifier{"default", "t"})
	if err != nil {
		t.Fatal(err)
	}
	if got := len(ice.Metadata().Snapshots()); got != 1 {
		t.Fatalf("the Iceberg table keeps %d snapshots, want 1", got)
	}
	insert(300, 350) // the log tail, not tiered
	if got := resolvedRows(t, n, "t"); got != 350 {
		t.Fatalf("Resolver reads %d rows of the union, want 350", got)
	}
	if got := resolvedRows(t, n, "t$lake"); got != 300 {
		t.Fatalf("Resolver reads %d rows of the lake, want 300", got)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// After a restart the table has a backlog: a background loop would
	// start a round of it with Serve, at once, while this test first runs
	// a query over Flight SQL.
	n, stop, done = startNodeWith(t, cfg)
	defer func() { stop(); <-done }()
	cl = client(t, n.Addr())
	if got := queryInt64(t, cl, `SELECT count(*)::BIGINT FROM "t$lake"`); got != 300 {
		t.Fatalf("after restart the lake holds %d rows, want 300 (a round ran that no caller asked for)", got)
	}
	res, err := n.Lake().Round(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if res.Rows != 50 {
		t.Fatalf("after restart the round tiered %d rows, want the 50 of the backlog", res.Rows)
	}
}

// resolvedRows reads every row of table name through the node's Resolver.
func resolvedRows(t *testing.T, n *Node, name string) int64 {
	t.Helper()
	ctx := context.Background()
	st, err := n.Resolver().Table(ctx, "", name)
	if err != nil {
		t.Fatal(err)
	}
	p, err := st.Plan(ctx, scan.Request{})
	if err != nil {
		t.Fatal(err)
	}
	var rows int64
	for _, part := range p.Parts() {
		rs, err := part.Open(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for {
			rec, err := rs.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			rows += rec.NumRows()
			rec.Release()
		}
		if err := rs.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return rows
}

// A node tiers a table on its own: the lake catches up with the log, the
// lag shows in lakestream.tiering and on /metrics, and after a restart the
// union still holds every row once.
func TestNodeTiersAndReportsLag(t *testing.T) {
	dir := t.TempDir()
	n, stop, done := startNode(t, dir)
	cl := client(t, n.Addr())
	ctx := context.Background()
	if _, err := cl.ExecuteUpdate(ctx, `CREATE TABLE t (id BIGINT) WITH ('bucket.num'='2', 'bucket.key'='id', 'datalake.freshness'='200ms')`); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.ExecuteUpdate(ctx, "INSERT INTO t SELECT range FROM range(1000)"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for queryInt64(t, cl, `SELECT count(*)::BIGINT FROM "t$lake"`) != 1000 {
		if time.Now().After(deadline) {
			t.Fatal("the lake did not catch up in a minute")
		}
		time.Sleep(50 * time.Millisecond) // polling a query: no event to wait on
	}
	if got := queryInt64(t, cl, "SELECT sum(tiered_offset)::BIGINT FROM lakestream.tiering WHERE table_name = 'default.t'"); got != 1000 {
		t.Fatalf("lakestream.tiering tiered offsets sum to %d, want 1000", got)
	}
	if got := queryInt64(t, cl, "SELECT sum(lag_rows)::BIGINT FROM lakestream.tiering"); got != 0 {
		t.Fatalf("lag %d rows after catching up", got)
	}
	resp, err := http.Get("http://" + n.HTTPAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`lakestream_lake_tiered_offset{bucket="0",table="default.t"}`,
		`lakestream_lake_lag_rows{bucket="1",table="default.t"} 0`,
		`lakestream_lake_lag_seconds{bucket="0",table="default.t"} 0`,
		`lakestream_lake_rows_tiered_total{table="default.t"} 1000`,
		`lakestream_cache_hits_total`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	page, err := http.Get("http://" + n.HTTPAddr() + "/")
	if err != nil {
		t.Fatal(err)
	}
	html, _ := io.ReadAll(page.Body)
	page.Body.Close()
	if !strings.Contains(string(html), "<h2>Lake</h2>") || !strings.Contains(string(html), `{"table":"default.t","bucket":1,`) {
		t.Errorf("the status page lacks the lake table:\n%s", html)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	n, stop, done = startNode(t, dir)
	defer func() { stop(); <-done }()
	cl = client(t, n.Addr())
	if got := queryInt64(t, cl, "SELECT (count(*) * 1000000 + count(DISTINCT id))::BIGINT FROM t"); got != 1000*1000000+1000 {
		t.Fatalf("after restart count*1e6+distinct = %d", got)
	}
	// A plain scan (SELECT cols FROM t, served without the engine while
	// the log holds every row) of a tiered table reads the lake too.
	info, err := cl.Execute(ctx, "SELECT id FROM t")
	if err != nil {
		t.Fatal(err)
	}
	var rows, sum int64
	for _, ep := range info.Endpoint {
		rdr, err := cl.DoGet(ctx, ep.Ticket)
		if err != nil {
			t.Fatal(err)
		}
		for rdr.Next() {
			ids := rdr.RecordBatch().Column(0).(*array.Int64)
			for i := 0; i < ids.Len(); i++ {
				rows, sum = rows+1, sum+ids.Value(i)
			}
		}
		rdr.Release()
	}
	if rows != 1000 || sum != 999*1000/2 {
		t.Fatalf("plain scan: %d rows, sum %d", rows, sum)
	}
}

// A plain scan of a tiered table reads the lake's data files themselves
// (no engine), pinned to one snapshot with the log above its offsets:
// every row once while rounds run; a ticket naming a file outside that
// snapshot is refused.
func TestPlainScanOfTieredTableReadsLakeFiles(t *testing.T) {
	n, stop, done := startNode(t, t.TempDir())
	defer func() { stop(); <-done }()
	cl := client(t, n.Addr())
	ctx := context.Background()
	if _, err := cl.ExecuteUpdate(ctx, `CREATE TABLE t (id BIGINT NOT NULL, v DOUBLE) WITH ('bucket.num'='2', 'bucket.key'='id', 'datalake.freshness'='100ms')`); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.ExecuteUpdate(ctx, "INSERT INTO t SELECT range, range / 2 FROM range(1000)"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for queryInt64(t, cl, `SELECT count(*)::BIGINT FROM "t$lake"`) != 1000 {
		if time.Now().After(deadline) {
			t.Fatal("the lake did not catch up in a minute")
		}
		time.Sleep(50 * time.Millisecond) // polling a query: no event to wait on
	}
	var lakeTicket []byte
	for round := 0; round < 5; round++ {
		from := 1000 + round*200
		if _, err := cl.ExecuteUpdate(ctx, fmt.Sprintf("INSERT INTO t SELECT range, range / 2 FROM range(%d, %d)", from, from+200)); err != nil {
			t.Fatal(err)
		}
		info, err := cl.Execute(ctx, "SELECT * FROM t")
		if err != nil {
			t.Fatal(err)
		}
		want := int64(from + 200)
		if info.TotalRecords != want {
			t.Fatalf("plan says %d rows, want %d", info.TotalRecords, want)
		}
		seen := make(map[int64]bool, want)
		for _, ep := range info.Endpoint {
			if strings.Contains(string(ep.Ticket.Ticket), `"files"`) {
				lakeTicket = ep.Ticket.Ticket
			}
			rdr, err := cl.DoGet(ctx, ep.Ticket)
			if err != nil {
				t.Fatal(err)
			}
			if f := rdr.Schema().Field(0); f.Nullable {
				t.Fatalf("id announced nullable: %v", rdr.Schema())
			}
			for rdr.Next() {
				ids := rdr.RecordBatch().Column(0).(*array.Int64)
				for i := 0; i < ids.Len(); i++ {
					if seen[ids.Value(i)] {
						t.Fatalf("id %d read twice", ids.Value(i))
					}
					seen[ids.Value(i)] = true
				}
			}
			if err := rdr.Err(); err != nil {
				t.Fatal(err)
			}
			rdr.Release()
		}
		if int64(len(seen)) != want {
			t.Fatalf("round %d: read %d distinct ids, want %d", round, len(seen), want)
		}
	}
	if lakeTicket == nil {
		t.Fatal("no endpoint read lake files")
	}
	// "t$lake" alone: the same file reader, no log range; as many rows as
	// the engine counts there (rounds go on: one snapshot pins both).
	info, err := cl.Execute(ctx, `SELECT id FROM "t$lake"`)
	if err != nil {
		t.Fatal(err)
	}
	var lakeRows int64
	for _, ep := range info.Endpoint {
		if strings.Contains(string(ep.Ticket.Ticket), `"ranges"`) || !strings.Contains(string(ep.Ticket.Ticket), `"files"`) {
			t.Fatalf("a lake-only ticket: %s", ep.Ticket.Ticket)
		}
		rdr, err := cl.DoGet(ctx, ep.Ticket)
		if err != nil {
			t.Fatal(err)
		}
		for rdr.Next() {
			lakeRows += rdr.RecordBatch().NumRows()
		}
		rdr.Release()
	}
	if lakeRows != info.TotalRecords || lakeRows < 1000 {
		t.Fatalf(`"t$lake" read %d rows, planned %d`, lakeRows, info.TotalRecords)
	}
	forged := regexp.MustCompile(`"files":\["[^"]*"`).ReplaceAll(lakeTicket, []byte(`"files":["/etc/passwd"`))
	rdr, err := cl.DoGet(ctx, &flight.Ticket{Ticket: forged})
	if err == nil {
		for rdr.Next() {
		}
		err = rdr.Err()
		rdr.Release()
	}
	// Tickets are signed: the altered one is refused before its files are
	// looked at.
	if err == nil || !strings.Contains(err.Error(), "not issued by this node, or was altered") {
		t.Fatalf("a ticket naming /etc/passwd: %v", err)
	}
}

// /healthz is 503 while a table's log refuses writes after a failed write
// (a full disk), naming the table and why; the node still answers reads,
// of that table too, and the other tables still take writes. Once the disk
// has room, a repair brings it back without a restart.
func TestHealthzReportsRefusedWrites(t *testing.T) {
	fs := vfs.NewMem()
	n, stop, done := startNodeWith(t, Config{DataDir: t.TempDir(), Listen: "127.0.0.1:0", HTTP: "127.0.0.1:0", LogFS: fs,
		Logger: slog.New(slog.DiscardHandler)})
	defer func() { stop(); <-done }()
	cl := client(t, n.Addr())
	ctx := context.Background()
	for _, sql := range []string{
		"CREATE TABLE filled (id BIGINT) WITH ('bucket.num'='2', 'bucket.key'='id')",
		"CREATE TABLE fine (id BIGINT)",
		"INSERT INTO filled SELECT range FROM range(100)",
		"INSERT INTO fine SELECT range FROM range(100)",
	} {
		if _, err := cl.ExecuteUpdate(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	if code, body := get(t, n, "/healthz"); code != http.StatusOK || body != "ok\n" {
		t.Fatalf("/healthz before: %d %q", code, body)
	}
	filled, err := n.Tables().Get(ctx, "", "filled")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(n.cfg.DataDir, "tables", strconv.FormatInt(filled.Def().ID, 10))
	fs.InjectError(func(op vfs.Op, name string) error {
		if op == vfs.OpWrite && strings.HasPrefix(name, dir) {
			return syscall.ENOSPC
		}
		return nil
	})
	if _, err := cl.ExecuteUpdate(ctx, "INSERT INTO filled SELECT range FROM range(100, 200)"); err == nil {
		t.Fatal("an insert into a full disk succeeded")
	} else if status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), "no space left on device") {
		t.Fatalf("an insert into a full disk: %v, want Unavailable naming the cause (the same call may be sent again)", err)
	}
	fs.InjectError(nil) // the disk has room again; the log refuses writes until it is repaired
	code, body := get(t, n, "/healthz")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "default.filled: ") ||
		!strings.Contains(body, "no space left on device") || strings.Contains(body, "default.fine") {
		t.Fatalf("/healthz with a refusing log: %d %q", code, body)
	}
	if _, metrics := get(t, n, "/metrics"); !strings.Contains(metrics, `lakestream_log_refusing_writes{table="default.filled"} 1`) ||
		!strings.Contains(metrics, `lakestream_log_refusing_writes{table="default.fine"} 0`) {
		t.Errorf("/metrics lacks the refusing-writes gauges")
	}
	if got := queryInt64(t, cl, "SELECT count(*)::BIGINT FROM filled"); got != 100 {
		t.Errorf("filled serves %d rows, want the 100 acknowledged", got)
	}
	if _, err := cl.ExecuteUpdate(ctx, "INSERT INTO fine SELECT range FROM range(5)"); err != nil {
		t.Errorf("a write to another table: %v", err)
	}
	// The repair the node runs every --retention-check clears it without a
	// write (a write would repair the log first, too).
	if failing := n.Tables().RepairLogs(); failing != 0 {
		t.Fatalf("%d logs still refuse writes after the repair", failing)
	}
	if code, body := get(t, n, "/healthz"); code != http.StatusOK || body != "ok\n" {
		t.Fatalf("/healthz after the repair: %d %q", code, body)
	}
	if _, err := cl.ExecuteUpdate(ctx, "INSERT INTO filled SELECT range FROM range(200, 205)"); err != nil {
		t.Fatalf("a write after the repair: %v", err)
	}
	if got := queryInt64(t, cl, "SELECT count(*)::BIGINT FROM filled"); got != 105 {
		t.Errorf("filled serves %d rows, want the 105 acknowledged", got)
	}
}

func get(t *testing.T, n *Node, path string) (int, string) {
	t.Helper()
	resp, err := http.Get("http://" + n.HTTPAddr() + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

// The memory limits and timeouts of queries and result streams: defaults,
// sizes or percentages of the memory available, and every bad value
// reported at once.
func TestConfigLimits(t *testing.T) {
	var c Config
	c.EnsureDefaults()
	if c.EngineMemory != "25%" || c.StreamMemory != "20%" || c.StreamWindow != "4MiB" || c.QueryTimeout != 30*time.Minute || c.StallTimeout != 5*time.Minute {
		t.Fatalf("defaults %q %q %q %s %s", c.EngineMemory, c.StreamMemory, c.StreamWindow, c.QueryTimeout, c.StallTimeout)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	if total := availableMemory(); total < 64<<20 {
		t.Fatalf("available memory %d", total)
	}
	for _, tc := range []struct {
		v    string
		want int64
	}{{"25%", 250 << 20}, {"12.5 %", 125 << 20}, {"512MiB", 512 << 20}, {"1GB", 1_000_000_000}, {"100%", 1000 << 20}} {
		if got, err := parseMemory(tc.v, 1000<<20); err != nil || got != tc.want {
			t.Errorf("parseMemory(%q) = %d, %v; want %d", tc.v, got, err, tc.want)
		}
	}
	for _, v := range []string{"0%", "101%", "-5%", "NaN%", "%", "lots", "0", "-1MiB"} {
		if _, err := parseMemory(v, 1000<<20); err == nil {
			t.Errorf("parseMemory(%q): no error", v)
		}
	}
	bad := Config{EngineMemory: "1MiB", StreamMemory: "lots", StreamWindow: "1KiB", QueryTimeout: -time.Second, StallTimeout: -time.Second}
	bad.EnsureDefaults()
	err := bad.Validate()
	for _, want := range []string{`engine memory "1MiB"`, `stream memory "lots"`, `stream window "1KiB"`, "query timeout -1s", "stall timeout -1s"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("validate error %v lacks %q", err, want)
		}
	}
	wide := Config{StreamMemory: "1MiB", StreamWindow: "2MiB"}
	wide.EnsureDefaults()
	if err := wide.Validate(); err == nil || !strings.Contains(err.Error(), "at most the stream memory") {
		t.Errorf("a window wider than the stream memory: %v", err)
	}
}

// The engine runs with the configured memory limit, and a query past the
// query timeout fails with DeadlineExceeded naming it; the node goes on.
func TestEngineLimits(t *testing.T) {
	n, stop, done := startNodeWith(t, Config{DataDir: t.TempDir(), Listen: "127.0.0.1:0", HTTP: "off",
		EngineMemory: "256MiB", QueryTimeout: 300 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	defer func() { stop(); <-done }()
	cl := client(t, n.Addr())
	ctx := context.Background()
	info, err := cl.Execute(ctx, "SELECT current_setting('memory_limit') AS m, current_setting('temp_directory') AS t")
	if err != nil {
		t.Fatal(err)
	}
	rdr, err := cl.DoGet(ctx, info.Endpoint[0].Ticket)
	if err != nil {
		t.Fatal(err)
	}
	if !rdr.Next() {
		t.Fatal(rdr.Err())
	}
	if got := rdr.RecordBatch().Column(0).ValueStr(0) + "|" + rdr.RecordBatch().Column(1).ValueStr(0); got != "256.0 MiB|" {
		t.Errorf("memory limit and temp directory %q, want 256.0 MiB and none", got)
	}
	rdr.Release()
	info, err = cl.Execute(ctx, "SELECT count(*) FROM range(1000000) a, range(10000000) b WHERE a.range + b.range > 0")
	if err != nil {
		t.Fatal(err)
	}
	rdr, err = cl.DoGet(ctx, info.Endpoint[0].Ticket)
	if err == nil {
		for rdr.Next() {
		}
		err = rdr.Err()
		rdr.Release()
	}
	if status.Code(err) != codes.DeadlineExceeded || !strings.Contains(err.Error(), "query timeout of 300ms exceeded") {
		t.Fatalf("a query past the timeout: %v, want DeadlineExceeded naming the timeout", err)
	}
	if got := queryInt64(t, cl, "SELECT count(*)::BIGINT FROM range(1000)"); got != 1000 {
		t.Fatalf("a query after the timeout: %d", got)
	}
}
