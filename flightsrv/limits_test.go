package flightsrv_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc/codes"

	"github.com/lakestream/lakestream/audit"
	"github.com/lakestream/lakestream/auth"
	"github.com/lakestream/lakestream/flightsrv"
	"github.com/lakestream/lakestream/internal/flightlogin"
	"github.com/lakestream/lakestream/planner/duck"
)

// startLimitServer is startEngineServer with the engine's and the
// server's options given.
func startLimitServer(t *testing.T, eopts duck.Options, opts flightsrv.Options) *testServer {
	t.Helper()
	base := startServer(t, serverConfig{})
	e, err := duck.New(engineResolver{base.store}, eopts)
	if err != nil {
		t.Fatal(err)
	}
	opts.Mem = base.mem
	srv, err := flightsrv.New(base.store, e, opts)
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
	ts := &testServer{t: t, mem: base.mem, store: base.store, cat: base.cat, srv: srv, addr: lis.Addr().String()}
	ts.cl = dial(t, ts.addr)
	t.Cleanup(func() {
		ts.cl.Close()
		g.GracefulStop()
		if err := <-served; err != nil {
			t.Errorf("serve: %v", err)
		}
		if err := e.Close(); err != nil {
			t.Errorf("close engine: %v", err)
		}
	})
	return ts
}

// openQuery starts a query's DoGet and reads its first batch, so that
// it runs, holding its place, until cancel.
func openQuery(t *testing.T, cl *flightsql.Client, sql string) (cancel func(), err error) {
	t.Helper()
	ctx, stop := context.WithCancel(context.Background())
	info, err := cl.Execute(ctx, sql)
	if err != nil {
		stop()
		return nil, err
	}
	rdr, err := cl.DoGet(ctx, info.Endpoint[0].Ticket)
	if err == nil {
		if !rdr.Next() {
			err = rdr.Err()
			rdr.Release()
		}
	}
	if err != nil {
		stop()
		return nil, err
	}
	return func() { stop(); rdr.Release() }, nil
}

// TestQueriesPerUser: a client at its cap of running queries gets
// ResourceExhausted naming the cap and its flag; another client is not
// affected, and once one query ends the first client runs again.
func TestQueriesPerUser(t *testing.T) {
	ts := startLimitServer(t, duck.Options{Threads: 2}, flightsrv.Options{Limits: flightsrv.Limits{QueriesPerUser: 2}})
	const big = "SELECT range FROM range(1000000000)" // streams for as long as it is read
	var cancels []func()
	for range 2 {
		c, err := openQuery(t, ts.cl, big)
		if err != nil {
			t.Fatal(err)
		}
		cancels = append(cancels, c)
	}
	_, err := openQuery(t, ts.cl, "SELECT 1")
	expectCode(t, err, codes.ResourceExhausted, "too many concurrent queries", "already runs 2", "--max-queries-per-user")

	// Another connection (without authentication, the cap follows the
	// connection) runs.
	other := dial(t, ts.addr)
	defer other.Close()
	if c, err := openQuery(t, other, "SELECT 1"); err != nil {
		t.Fatalf("another client: %v", err)
	} else {
		c()
	}
	cancels[0]()
	waitFor(t, func() bool {
		c, err := openQuery(t, ts.cl, "SELECT 1")
		if err != nil {
			return false
		}
		c()
		return true
	})
	cancels[1]()
}

// TestPreparedPerSession: a connection holds at most the cap of prepared
// statements; closing one makes room, and another connection has its own.
func TestPreparedPerSession(t *testing.T) {
	ts := startLimitServer(t, duck.Options{Threads: 2}, flightsrv.Options{Limits: flightsrv.Limits{PreparedPerSession: 2}})
	ctx := testCtx(t)
	var held []*flightsql.PreparedStatement
	for range 2 {
		p, err := ts.cl.Prepare(ctx, "SELECT 1")
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, p)
	}
	_, err := ts.cl.Prepare(ctx, "SELECT 2")
	expectCode(t, err, codes.ResourceExhausted, "too many prepared statements", "--max-prepared-per-session")
	other := dial(t, ts.addr)
	defer other.Close()
	p, err := other.Prepare(ctx, "SELECT 3")
	if err != nil {
		t.Fatalf("another connection: %v", err)
	}
	p.Close(ctx)
	if err := held[0].Close(ctx); err != nil {
		t.Fatal(err)
	}
	p, err = ts.cl.Prepare(ctx, "SELECT 4")
	if err != nil {
		t.Fatalf("after a close: %v", err)
	}
	p.Close(ctx)
	held[1].Close(ctx)
}

// TestSubscriptionsPerSession: a connection follows at most the cap of
// change streams at once.
func TestSubscriptionsPerSession(t *testing.T) {
	ts := startLimitServer(t, duck.Options{Threads: 2}, flightsrv.Options{Limits: flightsrv.Limits{SubscriptionsPerSession: 1}})
	ts.mustExec("CREATE TABLE ev " + eventsCols)
	ts.mustIngest("ev", "append", events(t, 0, 3))
	s := subscribe(t, ts, "SELECT id, _bucket, _offset FROM changes('ev', 'earliest')")
	s.take(t, 3) // open and served
	info := ts.mustExec("SELECT id FROM changes('ev', 'earliest')")
	rdr, err := ts.cl.DoGet(testCtx(t), info.Endpoint[0].Ticket)
	if err == nil {
		_, err = rdr.Read()
	}
	expectCode(t, err, codes.ResourceExhausted, "too many subscriptions", "--max-subscriptions-per-session")
}

// TestEngineLimitsCodes: a query past the timeout is DeadlineExceeded and
// one over the query memory limit ResourceExhausted, each naming its flag;
// the server answers the next query.
func TestEngineLimitsCodes(t *testing.T) {
	ts := startLimitServer(t, duck.Options{Threads: 2, QueryTimeout: 3 * time.Second, MemoryLimit: "1GiB",
		QueryMemoryLimit: 64 << 20, MemoryCheckEvery: 20 * time.Millisecond}, flightsrv.Options{})
	_, err := ts.exec("WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT max(n) FROM r")
	if err == nil {
		_, err = ts.fetchErr("WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT max(n) FROM r")
	}
	expectCode(t, err, codes.DeadlineExceeded, "query timeout of 3s exceeded", "--query-timeout")
	_, err = ts.fetchErr("SELECT a.range, b.range FROM range(100000) a, range(100000) b ORDER BY a.range * b.range DESC")
	expectCode(t, err, codes.ResourceExhausted, "query memory limit of 64 MiB exceeded", "--query-memory-limit")
	sameRows(t, "after", ts.rows("SELECT 41 + 1"), []string{"42"})
}

// fetchErr runs sql and reads its result, returning the first error.
func (ts *testServer) fetchErr(sql string) (int, error) {
	ctx := testCtx(ts.t)
	info, err := ts.cl.Execute(ctx, sql)
	if err != nil {
		return 0, err
	}
	rdr, err := ts.cl.DoGet(ctx, info.Endpoint[0].Ticket)
	if err != nil {
		return 0, err
	}
	defer rdr.Release()
	n := 0
	for rdr.Next() {
		n += int(rdr.RecordBatch().NumRows())
	}
	return n, rdr.Err()
}

// TestDDLAudited: DDL, applied or refused, and user DDL are recorded
// with the caller and its address, passwords redacted.
func TestDDLAudited(t *testing.T) {
	log, err := audit.Open(audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	base := startServer(t, serverConfig{})
	svc, err := auth.NewService(auth.Config{Required: true, Users: base.cat, Key: make([]byte, auth.KeyBytes),
		Hash: auth.HashParams{Memory: 64, Time: 1, Threads: 1}, Audit: log})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Bootstrap(context.Background(), "admin-password"); err != nil {
		t.Fatal(err)
	}
	_, cl, _ := serve(t, base.store, flightsrv.Options{Auth: svc, Audit: log}, base.mem)
	ctx, err := flightlogin.Login(testCtx(t), cl.Client, "admin", "admin-password")
	if err != nil {
		t.Fatal(err)
	}
	for _, sql := range []string{"CREATE TABLE t (id BIGINT)", "DROP TABLE nope", "CREATE USER alice WITH PASSWORD 'alice-secret-1'"} {
		_, _ = cl.ExecuteUpdate(ctx, sql)
	}
	var got []string
	for _, e := range log.Events() {
		if strings.Contains(e.Statement, "alice-secret") {
			t.Fatalf("password in the audit log: %+v", e)
		}
		if e.Peer == "" || e.Time.IsZero() {
			t.Errorf("event without peer or time: %+v", e)
		}
		outcome := e.Outcome
		if outcome != audit.OutcomeOK {
			outcome = "error"
		}
		got = append(got, string(e.Kind)+" "+e.User+" "+e.Statement+" "+outcome)
	}
	sameRows(t, "audit events", got, []string{
		"login admin  ok",
		"ddl admin CREATE TABLE t (id BIGINT) ok",
		"ddl admin DROP TABLE nope error",
		"user admin CREATE USER alice WITH PASSWORD '***' ok",
	})
}

// TestLimitStats: refusals at the caps and stops at the engine's limits
// are counted, each once.
func TestLimitStats(t *testing.T) {
	ts := startLimitServer(t, duck.Options{Threads: 2, QueryTimeout: 300 * time.Millisecond},
		flightsrv.Options{Limits: flightsrv.Limits{PreparedPerSession: 1}})
	ctx := testCtx(t)
	p, err := ts.cl.Prepare(ctx, "SELECT 1")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(ctx)
	for range 2 {
		if _, err := ts.cl.Prepare(ctx, "SELECT 2"); err == nil {
			t.Fatal("a prepared statement over the cap")
		}
	}
	if _, err := ts.fetchErr("SELECT count(*) FROM range(1000000) a, range(10000000) b WHERE a.range + b.range > 0"); err == nil {
		t.Fatal("no timeout")
	}
	if got, want := ts.srv.LimitStats(), (flightsrv.LimitStats{PreparedPerSession: 2, QueryTimeout: 1}); got != want {
		t.Fatalf("LimitStats %+v, want %+v", got, want)
	}
}
