package flightsrv_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/lakestream/lakestream/catalog"
	"github.com/lakestream/lakestream/columnarlog"
	"github.com/lakestream/lakestream/flightsrv"
	"github.com/lakestream/lakestream/internal/vfs"
	"github.com/lakestream/lakestream/tables"
)

// testServer is a Lakestream Flight SQL service on 127.0.0.1:0 over an
// in-memory filesystem, with a Flight SQL client connected to it.
type testServer struct {
	t     testing.TB
	addr  string
	srv   *flightsrv.Server
	mem   *memory.CheckedAllocator
	store *tables.Store
	cat   *catalog.Catalog
	cl    *flightsql.Client
	// tables numbers tables that tests create on the fly.
	tables atomic.Int64
}

type serverConfig struct {
	opts flightsrv.Options
	fs   vfs.FS // nil: in-memory
	dir  string // with fs == nil and dir != "": OS filesystem in dir
	// goMem serves with Go's allocator instead of a checked one (for
	// benchmarks: the checked allocator records a stack per allocation).
	goMem bool
}

func startServer(t testing.TB, cfg serverConfig) *testServer {
	t.Helper()
	ctx := context.Background()
	ts := &testServer{t: t, mem: memory.NewCheckedAllocator(memory.NewGoAllocator())}
	tmp := t.TempDir()
	cat, err := catalog.Open(ctx, filepath.Join(tmp, "catalog.db"), catalog.Config{})
	if err != nil {
		t.Fatal(err)
	}
	fs, dir := cfg.fs, "/data/tables"
	if fs == nil && cfg.dir == "" {
		fs = vfs.NewMem()
	}
	if cfg.dir != "" {
		dir = cfg.dir
	}
	var storeMem memory.Allocator = ts.mem
	if cfg.goMem {
		storeMem = memory.NewGoAllocator()
	}
	// No read cache: the tests check that streams leave the allocator at zero.
	store, err := tables.Open(ctx, cat, tables.Config{Dir: dir, Log: columnarlog.Options{FS: fs}, Mem: storeMem, CacheBytes: -1})
	if err != nil {
		cat.Close()
		t.Fatal(err)
	}
	ts.store, ts.cat = store, cat
	var mem memory.Allocator = ts.mem
	if cfg.goMem {
		mem = memory.NewGoAllocator()
	}
	ts.addr, ts.cl, ts.srv = serve(t, store, cfg.opts, mem)
	t.Cleanup(func() {
		if err := store.Close(); err != nil {
			t.Errorf("close store: %v", err)
		}
		if err := cat.Close(); err != nil {
			t.Errorf("close catalog: %v", err)
		}
		ts.mem.AssertSize(t, 0)
	})
	return ts
}

// startServerOver starts a second service over ts's store, with
// MaxEndpoints set.
func startServerOver(t testing.TB, ts *testServer, maxEndpoints int) *testServer {
	t.Helper()
	ts2 := &testServer{t: ts.t, mem: ts.mem, store: ts.store, cat: ts.cat}
	ts2.addr, ts2.cl, ts2.srv = serve(t, ts.store, flightsrv.Options{MaxEndpoints: maxEndpoints}, ts.mem)
	return ts2
}

// serve runs a service over store on 127.0.0.1:0 until the test ends and
// returns its address, a connected client and the service.
func serve(t testing.TB, store *tables.Store, opts flightsrv.Options, mem memory.Allocator) (string, *flightsql.Client, *flightsrv.Server) {
	t.Helper()
	opts.Mem = mem
	srv, err := flightsrv.New(store, nil, opts)
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := srv.GRPCServer()
	served := make(chan error, 1)
	go func() { served <- g.Serve(lis) }()
	cl := dial(t, lis.Addr().String())
	t.Cleanup(func() {
		cl.Close()
		// GracefulStop waits for every handler to return, so the
		// allocator check after it sees the server at rest.
		g.GracefulStop()
		if err := <-served; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return lis.Addr().String(), cl, srv
}

func dial(t testing.TB, addr string) *flightsql.Client {
	t.Helper()
	cl, err := flightsql.NewClient(addr, nil, nil,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(256<<20), grpc.MaxCallSendMsgSize(256<<20)))
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func (ts *testServer) exec(sql string) (*flight.FlightInfo, error) {
	return ts.cl.Execute(testCtx(ts.t), sql)
}

func (ts *testServer) mustExec(sql string) *flight.FlightInfo {
	ts.t.Helper()
	info, err := ts.exec(sql)
	if err != nil {
		ts.t.Fatalf("%s: %v", sql, err)
	}
	return info
}

// The ADBC ingest modes.
var modes = map[string]*flightsql.TableDefinitionOptions{
	"create":        {IfNotExist: flightsql.TableDefinitionOptionsTableNotExistOptionCreate, IfExists: flightsql.TableDefinitionOptionsTableExistsOptionFail},
	"append":        {IfNotExist: flightsql.TableDefinitionOptionsTableNotExistOptionFail, IfExists: flightsql.TableDefinitionOptionsTableExistsOptionAppend},
	"replace":       {IfNotExist: flightsql.TableDefinitionOptionsTableNotExistOptionCreate, IfExists: flightsql.TableDefinitionOptionsTableExistsOptionReplace},
	"create_append": {IfNotExist: flightsql.TableDefinitionOptionsTableNotExistOptionCreate, IfExists: flightsql.TableDefinitionOptionsTableExistsOptionAppend},
}

// ingest sends recs (which it releases) with ADBC bulk ingest.
func (ts *testServer) ingest(table, mode string, recs ...arrow.RecordBatch) (int64, error) {
	ts.t.Helper()
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	rdr, err := array.NewRecordReader(recs[0].Schema(), recs)
	if err != nil {
		ts.t.Fatal(err)
	}
	defer rdr.Release()
	return ts.cl.ExecuteIngest(testCtx(ts.t), rdr, &flightsql.ExecuteIngestOpts{
		Table:                  table,
		TableDefinitionOptions: modes[mode],
	})
}

func (ts *testServer) mustIngest(table, mode string, recs ...arrow.RecordBatch) int64 {
	ts.t.Helper()
	n, err := ts.ingest(table, mode, recs...)
	if err != nil {
		ts.t.Fatalf("ingest into %s (%s): %v", table, mode, err)
	}
	return n
}

// fetch reads every endpoint of info, one DoGet each, checks that each
// stream's schema is info's, and returns the rows.
func (ts *testServer) fetch(info *flight.FlightInfo) []string {
	ts.t.Helper()
	want, err := flight.DeserializeSchema(info.GetSchema(), memory.DefaultAllocator)
	if err != nil {
		ts.t.Fatalf("FlightInfo schema: %v", err)
	}
	var rows []string
	for i, ep := range info.GetEndpoint() {
		rdr, err := ts.cl.DoGet(testCtx(ts.t), ep.GetTicket())
		if err != nil {
			ts.t.Fatalf("DoGet endpoint %d: %v", i, err)
		}
		if !rdr.Schema().Equal(want) {
			ts.t.Errorf("endpoint %d: stream schema %v, FlightInfo schema %v", i, rdr.Schema(), want)
		}
		for rdr.Next() {
			// Validate before rendering: a corrupt batch must fail the
			// test, not crash it.
			if err := array.ValidateRecordFull(rdr.RecordBatch()); err != nil {
				ts.t.Errorf("endpoint %d: the server sent an invalid record: %v", i, err)
				continue
			}
			rows = append(rows, rowStrings(rdr.RecordBatch())...)
		}
		if err := rdr.Err(); err != nil {
			ts.t.Fatalf("endpoint %d: %v", i, err)
		}
		rdr.Release()
	}
	return rows
}

// count runs SELECT * FROM table and counts the rows it returns.
func (ts *testServer) count(table string) int {
	ts.t.Helper()
	info := ts.mustExec("SELECT * FROM " + table)
	var rows int64
	for i, ep := range info.GetEndpoint() {
		rdr, err := ts.cl.DoGet(testCtx(ts.t), ep.GetTicket())
		if err != nil {
			ts.t.Fatalf("DoGet endpoint %d: %v", i, err)
		}
		for rdr.Next() {
			rows += rdr.RecordBatch().NumRows()
		}
		if err := rdr.Err(); err != nil {
			ts.t.Fatalf("endpoint %d: %v", i, err)
		}
		rdr.Release()
	}
	if rows != info.GetTotalRecords() {
		ts.t.Errorf("SELECT * FROM %s: %d rows, FlightInfo says %d", table, rows, info.GetTotalRecords())
	}
	return int(rows)
}

// expectCode checks err's gRPC code and that its message contains every
// word.
func expectCode(t testing.TB, err error, code codes.Code, words ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want %v", code)
	}
	st, ok := status.FromError(err)
	if !ok {
		t.Fatalf("error %v is not a gRPC status, want %v", err, code)
	}
	if st.Code() != code {
		t.Errorf("code %v (%s), want %v", st.Code(), st.Message(), code)
	}
	for _, w := range words {
		if !strings.Contains(st.Message(), w) {
			t.Errorf("message %q does not mention %q", st.Message(), w)
		}
	}
}

// col is one column of a record under construction; nil values are nulls.
type col struct {
	f    arrow.Field
	vals []any
}

func i64(name string, nullable bool, v ...any) col {
	return col{arrow.Field{Name: name, Type: arrow.PrimitiveTypes.Int64, Nullable: nullable}, v}
}

func f64(name string, v ...any) col {
	return col{arrow.Field{Name: name, Type: arrow.PrimitiveTypes.Float64, Nullable: true}, v}
}

func str(name string, v ...any) col {
	return col{arrow.Field{Name: name, Type: arrow.BinaryTypes.String, Nullable: true}, v}
}

var tsType = &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}

func tstz(name string, v ...any) col {
	return col{arrow.Field{Name: name, Type: tsType, Nullable: true}, v}
}

func record(t testing.TB, mem memory.Allocator, cols ...col) arrow.RecordBatch {
	t.Helper()
	fields := make([]arrow.Field, len(cols))
	for i, c := range cols {
		fields[i] = c.f
	}
	b := array.NewRecordBuilder(mem, arrow.NewSchema(fields, nil))
	defer b.Release()
	for i, c := range cols {
		for _, v := range c.vals {
			appendValue(t, b.Field(i), v)
		}
	}
	return b.NewRecordBatch()
}

func appendValue(t testing.TB, fb array.Builder, v any) {
	if v == nil {
		fb.AppendNull()
		return
	}
	switch b := fb.(type) {
	case *array.Int64Builder:
		b.Append(int64(v.(int)))
	case *array.Int32Builder:
		b.Append(int32(v.(int)))
	case *array.Float64Builder:
		b.Append(v.(float64))
	case *array.StringBuilder:
		b.Append(v.(string))
	case *array.TimestampBuilder:
		b.Append(arrow.Timestamp(int64(v.(int))))
	default:
		t.Fatalf("appendValue: unsupported builder %T", fb)
	}
}

// eventsCols is the table most tests use; events builds its rows.
const eventsCols = "(id BIGINT NOT NULL, amount DOUBLE, kind VARCHAR, ts TIMESTAMPTZ)"

func events(t testing.TB, from, n int) arrow.RecordBatch {
	ids, amounts, kinds, tss := make([]any, n), make([]any, n), make([]any, n), make([]any, n)
	for i := range n {
		id := from + i
		ids[i] = id
		amounts[i] = float64(id) / 8
		kinds[i] = []string{"click", "view", "buy", "refund"}[id%4]
		if id%11 == 5 {
			kinds[i] = nil
		}
		tss[i] = 1_700_000_000_000_000 + id*1000
	}
	return record(t, memory.DefaultAllocator, i64("id", false, ids...), f64("amount", amounts...), str("kind", kinds...), tstz("ts", tss...))
}

func eventsSchema() *arrow.Schema {
	return arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "amount", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "kind", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "ts", Type: tsType, Nullable: true},
	}, nil)
}

func rowStrings(rec arrow.RecordBatch) []string {
	out := make([]string, rec.NumRows())
	for i := range out {
		vals := make([]string, rec.NumCols())
		for j, c := range rec.Columns() {
			vals[j] = c.ValueStr(i)
		}
		out[i] = strings.Join(vals, "|")
	}
	return out
}

// eventRows renders events(from, n) projected on cols.
func eventRows(t testing.TB, from, n int, cols ...int) []string {
	rec := events(t, from, n)
	defer rec.Release()
	rows := rowStrings(rec)
	if cols == nil {
		return rows
	}
	return project(rows, cols)
}

func sameRows(t testing.TB, what string, got, want []string) {
	t.Helper()
	got, want = slices.Clone(got), slices.Clone(want)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("%s: got %d rows, want %d\n got: %s\nwant: %s", what, len(got), len(want), clip(got), clip(want))
	}
}

func clip(rows []string) string {
	if len(rows) > 8 {
		return fmt.Sprint(rows[:8]) + fmt.Sprintf(" ... (%d more)", len(rows)-8)
	}
	return fmt.Sprint(rows)
}

// readAll drains a DoGet stream of a metadata command and returns its
// records (retained) and schema.
func readStream(t testing.TB, rdr *flight.Reader) []arrow.RecordBatch {
	t.Helper()
	defer rdr.Release()
	var recs []arrow.RecordBatch
	for rdr.Next() {
		rec := rdr.RecordBatch()
		rec.Retain()
		recs = append(recs, rec)
	}
	if err := rdr.Err(); err != nil && !errors.Is(err, io.EOF) {
		t.Fatal(err)
	}
	return recs
}

// runConcurrently runs fn n times at once and waits for all.
func runConcurrently(n int, fn func(i int)) {
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(i)
		}()
	}
	wg.Wait()
}

// project keeps the given columns of "a|b|c" rows.
func project(rows []string, cols []int) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		parts := strings.Split(r, "|")
		kept := make([]string, len(cols))
		for j, c := range cols {
			kept[j] = parts[c]
		}
		out[i] = strings.Join(kept, "|")
	}
	return out
}

// addColumn returns rec with c appended; it releases rec.
func addColumn(t testing.TB, rec arrow.RecordBatch, c col) arrow.RecordBatch {
	t.Helper()
	defer rec.Release()
	extra := record(t, memory.DefaultAllocator, c)
	defer extra.Release()
	fields := append(slices.Clone(rec.Schema().Fields()), extra.Schema().Field(0))
	cols := append(slices.Clone(rec.Columns()), extra.Column(0))
	return array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, rec.NumRows())
}

// waitFor waits until cond holds, failing the test after 20s.
func waitFor(t testing.TB, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 20s")
		}
		time.Sleep(time.Millisecond) // polling a condition that has no event to wait on
	}
}
