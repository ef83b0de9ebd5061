package flightsrv_test

import (
	"context"
	"fmt"
	"runtime"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"google.golang.org/grpc/codes"

	"github.com/lakestream/lakestream/flightsrv"
)

// subscriber reads a changes() stream in the background and hands over
// each record's (id, bucket, offset) rows.
type subscriber struct {
	rows   chan [3]int64
	cancel context.CancelFunc
	done   chan error
}

func subscribe(t *testing.T, ts *testServer, sql string) *subscriber {
	t.Helper()
	info := ts.mustExec(sql)
	if len(info.Endpoint) != 1 {
		t.Fatalf("%s: %d endpoints, want 1", sql, len(info.Endpoint))
	}
	ctx, cancel := context.WithCancel(context.Background())
	rdr, err := ts.cl.DoGet(ctx, info.Endpoint[0].Ticket)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	s := &subscriber{rows: make(chan [3]int64, 1<<16), cancel: cancel, done: make(chan error, 1)}
	go func() {
		defer rdr.Release()
		for rdr.Next() {
			rec := rdr.RecordBatch()
			ids := rec.Column(0).(*array.Int64)
			bks := rec.Column(1).(*array.Int32)
			offs := rec.Column(2).(*array.Int64)
			for i := 0; i < int(rec.NumRows()); i++ {
				s.rows <- [3]int64{ids.Value(i), int64(bks.Value(i)), offs.Value(i)}
			}
		}
		s.done <- rdr.Err()
	}()
	t.Cleanup(func() {
		cancel()
		<-s.done
		// The server ends its side of the stream after the client has
		// gone; wait for its handlers to return, and so release what
		// they held, before the allocator is checked. (The allocator
		// alone can read zero while a follower still decodes a batch.)
		deadline := time.Now().Add(10 * time.Second)
		for ts.srv.StreamStats().Streams != 0 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond) // polling: no event to wait on
		}
	})
	return s
}

// take waits for n rows.
func (s *subscriber) take(t *testing.T, n int) [][3]int64 {
	t.Helper()
	out := make([][3]int64, 0, n)
	timeout := time.After(30 * time.Second)
	for len(out) < n {
		select {
		case r := <-s.rows:
			out = append(out, r)
		case err := <-s.done:
			t.Fatalf("stream ended after %d of %d rows: %v", len(out), n, err)
		case <-timeout:
			t.Fatalf("got %d of %d rows in 30 s", len(out), n)
		}
	}
	return out
}

func ids(rows [][3]int64) []int64 {
	out := make([]int64, len(rows))
	for i, r := range rows {
		out[i] = r[0]
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func wantRange(t *testing.T, got []int64, from, to int64) {
	t.Helper()
	if len(got) != int(to-from) {
		t.Fatalf("got %d rows, want %d", len(got), to-from)
	}
	for i, id := range got {
		if id != from+int64(i) {
			t.Fatalf("row %d is id %d, want %d", i, id, from+int64(i))
		}
	}
}

func TestChangesLatestEarliestAndResume(t *testing.T) {
	ts := startServer(t, serverConfig{})
	ts.mustExec("CREATE TABLE ev (id BIGINT NOT NULL, amount DOUBLE, kind VARCHAR, ts TIMESTAMPTZ) WITH ('bucket.num'='3', 'bucket.key'='id')")
	ts.mustIngest("ev", "append", events(t, 0, 100))
	latest := subscribe(t, ts, "SELECT id, _bucket, _offset FROM changes('ev', 'latest')")
	earliest := subscribe(t, ts, "SELECT id, _bucket, _offset FROM changes('ev', 'earliest')")
	for i := 1; i < 5; i++ {
		ts.mustIngest("ev", "append", events(t, i*100, 100))
	}
	wantRange(t, ids(latest.take(t, 400)), 100, 500)
	all := earliest.take(t, 500)
	wantRange(t, ids(all), 0, 500)
	// Offsets are dense per bucket.
	last := map[int64]int64{}
	perBucket := map[int64][]int64{}
	for _, r := range all {
		perBucket[r[1]] = append(perBucket[r[1]], r[2])
		last[r[1]] = max(last[r[1]], r[2])
	}
	for b, offs := range perBucket {
		sort.Slice(offs, func(i, j int) bool { return offs[i] < offs[j] })
		for i, o := range offs {
			if o != int64(i) {
				t.Fatalf("bucket %d offsets not dense: %v", b, offs[:min(len(offs), 10)])
			}
		}
	}
	// Resume from the saved positions (last offset + 1): exactly the later rows.
	ts.mustIngest("ev", "append", events(t, 500, 50))
	pos := ""
	for b := int64(0); b < 3; b++ {
		pos += fmt.Sprintf("%d:%d,", b, last[b]+1)
	}
	resumed := subscribe(t, ts, fmt.Sprintf("SELECT id, _bucket, _offset FROM changes('ev', '%s')", pos[:len(pos)-1]))
	wantRange(t, ids(resumed.take(t, 50)), 500, 550)
	select {
	case r := <-resumed.rows:
		t.Fatalf("resumed stream delivered an extra row %v", r)
	default:
	}
}

func TestChangesFromTimestamp(t *testing.T) {
	ts := startServer(t, serverConfig{})
	ts.mustExec("CREATE TABLE ev (id BIGINT NOT NULL, amount DOUBLE, kind VARCHAR, ts TIMESTAMPTZ)")
	ts.mustIngest("ev", "append", events(t, 0, 10))
	time.Sleep(2 * time.Millisecond) // commit timestamps are microseconds: make the next one later
	cut := time.Now().UTC()
	ts.mustIngest("ev", "append", events(t, 10, 10))
	s := subscribe(t, ts, fmt.Sprintf("SELECT id, _bucket, _offset FROM changes('ev', TIMESTAMP '%s')", cut.Format("2006-01-02 15:04:05.999999Z07:00")))
	wantRange(t, ids(s.take(t, 10)), 10, 20)
}

func TestChangesRefusals(t *testing.T) {
	ts := startServer(t, serverConfig{})
	ts.mustExec("CREATE TABLE ev (id BIGINT NOT NULL, amount DOUBLE, kind VARCHAR, ts TIMESTAMPTZ) WITH ('bucket.num'='2')")
	for sql, code := range map[string]codes.Code{
		"SELECT count(*) FROM changes('ev', 'latest')":                     codes.InvalidArgument,
		"SELECT * FROM changes('ev', 'latest') ORDER BY id":                codes.InvalidArgument,
		"SELECT * FROM changes('ev', 'latest') a JOIN ev b ON a.id = b.id": codes.InvalidArgument,
		"SELECT * FROM changes('nope', 'latest')":                          codes.NotFound,
		"SELECT nope FROM changes('ev', 'latest')":                         codes.InvalidArgument,
		"SELECT * FROM changes('ev', '7:0')":                               codes.InvalidArgument,
		"SELECT * FROM changes('ev', 'soon')":                              codes.InvalidArgument,
		"SELECT * FROM changes('ev', '0:5')":                               codes.OutOfRange,
		"SELECT * FROM changes('ev', TIMESTAMP 'yesterday')":               codes.InvalidArgument,
		"SELECT * FROM changes('ev', 'latest', 0)":                         codes.InvalidArgument,
	} {
		_, err := ts.exec(sql)
		expectCode(t, err, code)
	}
}

// TestChangesFanOutAndSlowConsumer: 100 subscribers each receive every row,
// while one subscriber that reads nothing neither blocks the writer nor the
// others; closed streams release their goroutines.
func TestChangesFanOutAndSlowConsumer(t *testing.T) {
	// Each subscription of the two buckets is charged 10 MiB (their
	// read-ahead and its window): room for 101 and more.
	// One connection fans out to 101 streams: past the default cap per
	// connection (limits.go), lifted here.
	ts := startServer(t, serverConfig{opts: flightsrv.Options{StreamMemory: 2 << 30, Limits: flightsrv.Limits{SubscriptionsPerSession: -1}}})
	ts.mustExec("CREATE TABLE ev (id BIGINT NOT NULL, amount DOUBLE, kind VARCHAR, ts TIMESTAMPTZ) WITH ('bucket.num'='2', 'bucket.key'='id')")
	before := runtime.NumGoroutine()
	info := ts.mustExec("SELECT id, _bucket, _offset FROM changes('ev', 'latest')")
	// The stalled one: opened, never read.
	stallCtx, stall := context.WithCancel(context.Background())
	stalled, err := ts.cl.DoGet(stallCtx, info.Endpoint[0].Ticket)
	if err != nil {
		t.Fatal(err)
	}
	const subs, batches, per = 100, 20, 500
	var wg sync.WaitGroup
	counts := make([]int, subs)
	// A deadline, so that a lost row fails the test instead of hanging it.
	subsCtx, stopSubs := context.WithTimeout(context.Background(), time.Minute)
	defer stopSubs()
	for i := range subs {
		rdr, err := ts.cl.DoGet(subsCtx, info.Endpoint[0].Ticket)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer rdr.Release()
			for counts[i] < batches*per && rdr.Next() {
				counts[i] += int(rdr.RecordBatch().NumRows())
			}
		}()
	}
	for b := range batches {
		ts.mustIngest("ev", "append", events(t, b*per, per))
	}
	wg.Wait()
	if err := subsCtx.Err(); err != nil {
		t.Fatalf("subscribers did not get every row within a minute: %v (counts %v)", err, counts[:10])
	}
	for i, c := range counts {
		if c != batches*per {
			t.Fatalf("subscriber %d got %d rows, want %d", i, c, batches*per)
		}
	}
	stall()
	stalled.Release()
	stopSubs()
	// Every follower goroutine ends once its stream is gone.
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before+10 && time.Now().Before(deadline) {
		runtime.Gosched()
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before+10 {
		t.Fatalf("%d goroutines after all subscribers left, %d before", n, before)
	}
}
