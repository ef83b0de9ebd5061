package node

import (
	"bufio"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// Environment of the client process of TestUnreadStreams.
const (
	envStallAddr    = "LAKESTREAM_TEST_STALL_ADDR"
	envStallTickets = "LAKESTREAM_TEST_STALL_TICKETS" // base64, comma-separated
	envStallCount   = "LAKESTREAM_TEST_STALL_COUNT"   // streams per ticket
)

// 60 clients of each kind of result stream (a plain scan, a query, a
// subscription) open a stream and read nothing. On main before the stream
// budget each held 3 to 13 MiB of the node's heap until its client went
// away (1.4 GiB for the 180; 60 per kind ran a node out of memory). Here
// the node stays within its stream memory budget, serves writes, plans and
// /healthz meanwhile, and cuts every one of them off after the stall
// timeout with ResourceExhausted naming the stall timeout or the budget;
// then a query answers. The clients run in a process of their own, so that
// the heap measured is the node's.
func TestUnreadStreams(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a client process with 180 connections")
	}
	const perKind = 60
	budget := int64(48 << 20)
	n, stop, done := startNodeWith(t, Config{DataDir: t.TempDir(), Listen: "127.0.0.1:0", HTTP: "127.0.0.1:0",
		StreamMemory: "48MiB", StreamWindow: "256KiB", StallTimeout: 5 * time.Second, Logger: slog.New(slog.DiscardHandler)})
	defer func() { stop(); <-done }()
	cl := client(t, n.Addr())
	ctx := context.Background()
	if _, err := cl.ExecuteUpdate(ctx, "CREATE TABLE t (id BIGINT NOT NULL, v VARCHAR) WITH ('bucket.num'='4', 'bucket.key'='id')"); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		sql := fmt.Sprintf("INSERT INTO t SELECT range, repeat('x', 40) || range FROM range(%d, %d)", i*100_000, (i+1)*100_000)
		if _, err := cl.ExecuteUpdate(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	var tickets []string
	for _, sql := range []string{"SELECT * FROM t", "SELECT id, v, id + 1 AS x FROM t", "SELECT * FROM changes('t', 'earliest')"} {
		info, err := cl.Execute(ctx, sql)
		if err != nil {
			t.Fatal(err)
		}
		tickets = append(tickets, base64.StdEncoding.EncodeToString(info.Endpoint[0].Ticket.Ticket))
	}
	before := liveHeap()

	start := time.Now()
	clientProc := startStallingClient(t, n.Addr(), tickets, perKind)
	total := int64(len(tickets) * perKind)
	waitUntil(t, func() bool {
		st := n.flight.StreamStats()
		return st.Streams == total && st.Waiting == total
	})
	t.Logf("all streams waiting after %v", time.Since(start).Round(time.Millisecond))
	during := liveHeap()
	st := n.flight.StreamStats()
	t.Logf("%d unread streams: the node's live heap %.1f MiB -> %.1f MiB (+%.1f MiB); budget %.0f MiB, %.1f MiB charged",
		total, mib(before), mib(during), mib(during-before), mib(budget), mib(st.Used))
	// Beyond the budget, each stream costs its connection's gRPC state and
	// its handler's: about 12 KiB of heap, measured with every stream but
	// one waiting to start. 64 KiB each are allowed.
	if limit := budget + total*64<<10; during-before > limit {
		t.Errorf("the node's heap grew by %.1f MiB with %d unread streams, more than the budget and their connections (%.1f MiB)",
			mib(during-before), total, mib(limit))
	}

	// Healthy meanwhile: writes, plans and the health check go on.
	if _, err := cl.ExecuteUpdate(ctx, "INSERT INTO t VALUES (-1, 'during')"); err != nil {
		t.Errorf("a write while streams stall: %v", err)
	}
	if _, err := cl.Execute(ctx, "SELECT count(*) FROM t"); err != nil {
		t.Errorf("planning a query while streams stall: %v", err)
	}
	if code, body := get(t, n, "/healthz"); code != 200 {
		t.Errorf("/healthz while streams stall: %d %q", code, body)
	}
	if _, metrics := get(t, n, "/metrics"); !strings.Contains(metrics, "lakestream_stream_memory_budget_bytes 5.0331648e+07") ||
		!strings.Contains(metrics, "lakestream_streams_waiting ") || !strings.Contains(metrics, `lakestream_streams_cut_total{reason="stalled"}`) {
		t.Errorf("/metrics lacks the stream budget, the waiting streams or the streams cut off")
	}

	waitUntil(t, func() bool { return n.flight.StreamStats().Streams == 0 })
	st = n.flight.StreamStats()
	if st.Stalled+st.Refused != total || st.Peak > budget {
		t.Errorf("stats %+v: want all %d streams cut off or refused, and a peak within the budget", st, total)
	}
	ends := clientProc.drain(t)
	if len(ends) != int(total) {
		t.Fatalf("the client process reported %d streams, want %d", len(ends), total)
	}
	for i, res := range ends {
		kind := []string{"scan", "query", "subscription"}[i/perKind]
		if res.code != "ResourceExhausted" || !strings.Contains(res.msg, "(the stall timeout)") {
			t.Errorf("%s stream %d ended with %s: %s", kind, i%perKind, res.code, res.msg)
		}
	}
	t.Logf("stats %+v", st)
	// The clients have read what gRPC held for them: nothing is charged.
	waitUntil(t, func() bool { return n.flight.StreamStats().Used == 0 })
	if got := queryInt64(t, cl, "SELECT count(*)::BIGINT FROM t"); got != 1_000_001 {
		t.Errorf("a query after the cut-offs counts %d rows", got)
	}
}

// liveHeap is the heap after a full collection: what is reachable.
func liveHeap() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }

// waitUntil waits until cond holds, failing the test after two minutes.
func waitUntil(t testing.TB, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in two minutes")
		}
		time.Sleep(5 * time.Millisecond) // polling the node's counters: no event to wait on
	}
}

// stallingClient is the client process of TestUnreadStreams.
type stallingClient struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Scanner
}

type streamEnd struct{ code, msg string }

// startStallingClient runs this test binary as the client process and
// returns once it has opened its streams.
func startStallingClient(t *testing.T, addr string, tickets []string, per int) *stallingClient {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestStallingClientProcess$")
	cmd.Env = append(os.Environ(), envStallAddr+"="+addr, envStallTickets+"="+strings.Join(tickets, ","), envStallCount+"="+strconv.Itoa(per))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		cmd.Process.Kill()
		cmd.Wait()
	})
	c := &stallingClient{cmd: cmd, stdin: stdin, out: bufio.NewScanner(stdout)}
	c.out.Buffer(nil, 1<<20)
	if !c.out.Scan() || c.out.Text() != "opened" {
		t.Fatalf("the client process did not open its streams: %q %v", c.out.Text(), c.out.Err())
	}
	return c
}

// drain has the client read every stream to its end and returns how each
// ended, in the order opened.
func (c *stallingClient) drain(t *testing.T) []streamEnd {
	t.Helper()
	if _, err := io.WriteString(c.stdin, "drain\n"); err != nil {
		t.Fatal(err)
	}
	var ends []streamEnd
	for c.out.Scan() {
		if end, ok := strings.CutPrefix(c.out.Text(), "end|"); ok {
			code, msg, _ := strings.Cut(end, "|")
			ends = append(ends, streamEnd{code, msg})
		}
	}
	if err := c.cmd.Wait(); err != nil {
		t.Fatalf("the client process: %v", err)
	}
	return ends
}

// TestStallingClientProcess is the client process of TestUnreadStreams: it
// opens its streams, each on a connection of its own with gRPC's smallest
// flow-control windows (64 KiB: the node feels a stall at once rather than
// after 16 MiB; only where a stall begins depends on it), reads nothing
// until told to on stdin, then reads each stream to its end and prints how
// it ended.
func TestStallingClientProcess(t *testing.T) {
	addr := os.Getenv(envStallAddr)
	if addr == "" {
		t.Skip("the client process of TestUnreadStreams")
	}
	per, err := strconv.Atoi(os.Getenv(envStallCount))
	if err != nil {
		t.Fatal(err)
	}
	var streams []flight.FlightService_DoGetClient
	for _, enc := range strings.Split(os.Getenv(envStallTickets), ",") {
		tk, err := base64.StdEncoding.DecodeString(enc)
		if err != nil {
			t.Fatal(err)
		}
		for range per {
			conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
				grpc.WithInitialWindowSize(64<<10), grpc.WithInitialConnWindowSize(64<<10),
				grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(256<<20)))
			if err != nil {
				t.Fatal(err)
			}
			s, err := flight.NewFlightServiceClient(conn).DoGet(context.Background(), &flight.Ticket{Ticket: tk})
			if err != nil {
				t.Fatal(err)
			}
			streams = append(streams, s)
		}
	}
	fmt.Println("opened")
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		return // the test went away
	}
	ends := make([]string, len(streams))
	var wg sync.WaitGroup
	for i, s := range streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			for err == nil {
				_, err = s.Recv()
			}
			st, _ := status.FromError(err)
			ends[i] = "end|" + st.Code().String() + "|" + st.Message()
		}()
	}
	wg.Wait()
	for _, e := range ends {
		fmt.Println(e)
	}
}
