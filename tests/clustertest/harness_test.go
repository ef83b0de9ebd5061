// Package clustertest runs Lakestream clusters as separate processes on
// loopback ports, with the metadata store on a PostgreSQL server the test
// starts, and injects faults into them: kill -9 of a bucket's leader, a
// follower or the controller; a leader frozen (SIGSTOP) while the others
// elect a new one, then thawed; links between nodes, and between a node
// and the metadata store, cut by the harness's proxies (proxy_test.go);
// and a leader's disk whose fsyncs fail or stall. docs/cluster.md has what
// the tests check and their figures.
package clustertest

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc/metadata"

	"github.com/lakestream/lakestream/cluster"
	"github.com/lakestream/lakestream/cluster/meta"
	"github.com/lakestream/lakestream/internal/invariants"
	"github.com/lakestream/lakestream/internal/pgtest"
	procs "github.com/lakestream/lakestream/internal/proc"
)

// binary is the server under test, built with -tags faultinject (its
// --fault-dial and --fault-disk flags put the links and the disks in the
// harness's hands), and with -tags invariants when the test is, once into
// a temporary directory; $LAKESTREAM_FAULT_BIN
// names one built so already.
var binary = sync.OnceValues(func() (string, error) {
	if b := os.Getenv("LAKESTREAM_FAULT_BIN"); b != "" {
		return b, nil
	}
	dir, err := os.MkdirTemp("", "lakestream-bin")
	if err != nil {
		return "", err
	}
	out := filepath.Join(dir, "lakestream")
	tags := "faultinject"
	if invariants.Enabled {
		tags += ",invariants" // the nodes check what the test binary checks
	}
	cmd := exec.Command("go", "build", "-tags", tags, "-o", out, "github.com/lakestream/lakestream/cmd/lakestream")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, b)
	}
	return out, nil
})

// harness is a cluster of node processes sharing one metadata store.
// Every connection of one node to another's replication service, and of
// a node to the metadata store, goes through a link of the harness, which
// can cut it; gossip does not (docs/cluster.md says why). The nodes run
// with authentication on and mutual TLS between them (security_test.go).
type harness struct {
	t     *testing.T
	bin   string
	meta  string     // the metadata store's URL
	store meta.Store // the harness's own handle on it
	mu    sync.Mutex
	nodes map[string]*proc
	order []string
	// repl holds the replication links, by (from, to): from's fetches
	// from to when to leads. metaLink holds each node's link to the
	// metadata store (and the shared catalog in the same database).
	repl     map[[2]string]*link
	metaLink map[string]*link
	sec      *security // security_test.go: --auth on, mutual TLS between the nodes
	// args, when set, adds flags to every node's serve command.
	args func(h *harness, id string) []string
}

// harnessOption changes a harness before its nodes start.
type harnessOption func(*harness)

// withArgs adds the flags args returns to every node's serve command.
func withArgs(args func(h *harness, id string) []string) harnessOption {
	return func(h *harness) { h.args = args }
}

// proc is one node: its addresses stay the same across restarts.
type proc struct {
	id, dir        string
	flight, gossip string
	disk           string // the --fault-disk control file
	cmd            *exec.Cmd
	exited         chan struct{}
	paused         bool
	cl             *flightsql.Client
}

func newHarness(t *testing.T, ids ...string) *harness { return newHarnessWith(t, nil, ids...) }

func newHarnessWith(t *testing.T, opts []harnessOption, ids ...string) *harness {
	bin, err := binary()
	if err != nil {
		t.Fatal(err)
	}
	pg := pgtest.ForTest(t, pgtest.Options{})
	uri, err := pg.CreateDatabase(context.Background(), "cluster")
	if err != nil {
		t.Fatal(err)
	}
	store, err := meta.OpenPostgres(context.Background(), uri)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	h := &harness{t: t, bin: bin, meta: uri, store: store, nodes: map[string]*proc{},
		repl: map[[2]string]*link{}, metaLink: map[string]*link{}, sec: newSecurity(t)}
	for _, o := range opts {
		o(h)
	}
	pgAddr, err := url.Parse(uri)
	if err != nil {
		t.Fatal(err)
	}
	controls := t.TempDir()
	for _, id := range ids {
		h.nodes[id] = &proc{id: id, dir: t.TempDir(), flight: freeAddr(t), gossip: freeAddr(t), disk: filepath.Join(controls, id+".disk")}
		h.order = append(h.order, id)
		h.metaLink[id] = newLink(t, id+"->meta", pgAddr.Host)
	}
	for _, from := range ids {
		for _, to := range ids {
			if from != to {
				h.repl[[2]string{from, to}] = newLink(t, from+"->"+to, h.nodes[to].flight)
			}
		}
	}
	for i, id := range ids {
		h.start(id)
		if i == 0 {
			h.sec.useAPIKey(t, h.nodes[id].cl) // security_test.go
		}
	}
	t.Cleanup(func() {
		// A failed test keeps the nodes' logs (the data directories go),
		// as does any with LAKESTREAM_KEEP_LOGS=1.
		if !t.Failed() && os.Getenv("LAKESTREAM_KEEP_LOGS") != "1" {
			return
		}
		dir, err := os.MkdirTemp("", "lakestream-cluster-logs-")
		if err != nil {
			return
		}
		for _, id := range h.order {
			if b, err := os.ReadFile(filepath.Join(h.nodes[id].dir, "node.log")); err == nil {
				os.WriteFile(filepath.Join(dir, id+".log"), b, 0o644)
			}
		}
		t.Logf("the nodes' logs are in %s", dir)
	})
	t.Cleanup(h.stopAll)
	h.waitMembers()
	return h
}

// start starts (or restarts) node id and waits until it answers queries.
func (h *harness) start(id string) {
	h.t.Helper()
	p := h.nodes[id]
	var join []string
	for _, other := range h.order {
		if other != id {
			join = append(join, h.nodes[other].gossip)
		}
	}
	var dials []string
	for _, other := range h.order {
		if other != id {
			dials = append(dials, h.nodes[other].flight+"="+h.repl[[2]string{id, other}].addr())
		}
	}
	metaURL, _ := url.Parse(h.meta)
	metaURL.Host = h.metaLink[id].addr()
	args := []string{"serve", "--data-dir", p.dir, "--listen", p.flight, "--http", "off",
		"--node-id", id, "--gossip", p.gossip, "--gossip-timing", "local", "--meta", metaURL.String(), "--log-level", "info",
		"--fault-dial", strings.Join(dials, ","), "--fault-disk", p.disk}
	args = append(args, h.sec.nodeArgs(h.t, id)...)
	if len(h.running()) > 0 {
		args = append(args, "--join", strings.Join(join, ","))
	}
	if h.args != nil {
		args = append(args, h.args(h, id)...)
	}
	logf, err := os.OpenFile(filepath.Join(p.dir, "node.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		h.t.Fatal(err)
	}
	cmd := exec.Command(h.bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = h.sec.env()
	// The nodes die with the test, also when it is killed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		h.t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); logf.Close(); close(exited) }()
	h.mu.Lock()
	p.cmd, p.exited, p.paused = cmd, exited, false
	h.mu.Unlock()
	if p.cl == nil {
		cl, err := flightsql.NewClient(p.flight, nil, nil, h.sec.dialOptions()...)
		if err != nil {
			h.t.Fatal(err)
		}
		p.cl = cl
		h.t.Cleanup(func() { cl.Close() })
	}
	h.waitFor(fmt.Sprintf("%s answers", id), func() bool {
		select {
		case <-exited:
			h.t.Fatalf("node %s exited at start; its log:\n%s", id, tail(filepath.Join(p.dir, "node.log")))
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := p.cl.Execute(ctx, "SELECT 1")
		return err == nil
	})
}

// kill sends SIGKILL to node id and waits until it is gone.
func (h *harness) kill(id string) {
	p := h.nodes[id]
	h.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.cmd = nil
	h.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Signal(syscall.SIGCONT) // a frozen process dies too
	cmd.Process.Kill()
	<-exited
}

// pause freezes node id (SIGSTOP): it answers nothing, gossip declares it
// dead, and it learns of nothing until resume.
func (h *harness) pause(id string) {
	p := h.nodes[id]
	p.cmd.Process.Signal(syscall.SIGSTOP)
	p.paused = true
}

func (h *harness) resume(id string) {
	p := h.nodes[id]
	p.cmd.Process.Signal(syscall.SIGCONT)
	p.paused = false
}

// stopAll stops every node with SIGTERM (a graceful stop), or kills it
// after 30 s.
func (h *harness) stopAll() {
	for _, id := range h.order {
		p := h.nodes[id]
		h.mu.Lock()
		cmd, exited := p.cmd, p.exited
		p.cmd = nil
		h.mu.Unlock()
		if cmd == nil {
			continue
		}
		cmd.Process.Signal(syscall.SIGCONT)
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	}
}

// running lists the nodes whose process runs (paused ones included).
func (h *harness) running() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, id := range h.order {
		if h.nodes[id].cmd != nil {
			out = append(out, id)
		}
	}
	return out
}

// waitMembers waits until every running node lists every running node
// alive.
func (h *harness) waitMembers() {
	h.t.Helper()
	want := len(h.running())
	h.waitFor("membership", func() bool {
		for _, id := range h.running() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			n, err := queryInt(ctx, h.nodes[id].cl, "SELECT count(*) FROM lakestream.nodes WHERE state = 'alive'")
			cancel()
			if err != nil || n != int64(want) {
				return false
			}
		}
		return true
	})
}

// createTable runs a CREATE TABLE on the first node (the nodes share
// their catalog in the metadata database) and waits until every node
// serves the table and each bucket's leader has taken its role.
func (h *harness) createTable(name, sql string) {
	h.t.Helper()
	if _, err := h.nodes[h.order[0]].cl.ExecuteUpdate(context.Background(), sql); err != nil {
		h.t.Fatalf("%s: %v", sql, err)
	}
	h.waitFor("the table on every node", func() bool {
		for _, id := range h.order {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			_, err := queryInt(ctx, h.nodes[id].cl, "SELECT count(*) FROM "+name)
			cancel()
			if err != nil {
				return false
			}
		}
		return true
	})
}

// bucket is the stored state of a bucket.
func (h *harness) bucket(ref cluster.BucketRef) meta.Bucket {
	h.t.Helper()
	b, err := h.store.Bucket(context.Background(), ref)
	if err != nil {
		h.t.Fatal(err)
	}
	return b
}

// controller is the node holding the controller lease, "" when none.
func (h *harness) controller() string {
	l, err := h.store.Lease(context.Background(), cluster.ControllerLease)
	if err != nil {
		return ""
	}
	return l.Holder
}

// waitFor polls cond (the nodes are other processes: there is no event to
// wait on) for up to two minutes.
func (h *harness) waitFor(what string, cond func() bool) {
	h.t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			var logs strings.Builder
			for _, id := range h.order {
				fmt.Fprintf(&logs, "--- %s:\n%s\n", id, tail(filepath.Join(h.nodes[id].dir, "node.log")))
			}
			h.t.Fatalf("%s: not reached in two minutes\n%s", what, logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// tail is the end of a node's log, for failure messages.
func tail(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 20000 {
		b = b[len(b)-20000:]
	}
	return string(b)
}

func freeAddr(t *testing.T) string {
	t.Helper()
	addr, err := procs.FreeLoopbackAddr()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

// queryInt runs a one-value query.
func queryInt(ctx context.Context, cl *flightsql.Client, sql string) (int64, error) {
	vals, err := queryInts(ctx, cl, sql)
	if err != nil {
		return 0, err
	}
	if len(vals) != 1 {
		return 0, fmt.Errorf("%s: %d values", sql, len(vals))
	}
	return vals[0], nil
}

// queryInts runs a query of one BIGINT column and returns its values.
func queryInts(ctx context.Context, cl *flightsql.Client, sql string) ([]int64, error) {
	info, err := cl.Execute(ctx, sql)
	if err != nil {
		return nil, err
	}
	var out []int64
	for _, ep := range info.Endpoint {
		rdr, err := cl.DoGet(ctx, ep.Ticket)
		if err != nil {
			return nil, err
		}
		for rdr.Next() {
			col, ok := rdr.RecordBatch().Column(0).(*array.Int64)
			if !ok {
				rdr.Release()
				return nil, fmt.Errorf("%s: not a BIGINT column", sql)
			}
			out = append(out, col.Int64Values()...)
		}
		err = rdr.Err()
		rdr.Release()
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// writer is an idempotent writer: each call inserts rows of ids of its
// own, and is sent again (to whichever node leads now) until one answer
// acknowledges it.
type writer struct {
	id  int64
	seq int32
}

// call inserts the call's rows through cl; the ids are the writer's
// id × 10⁹ + seq × 10 + 0..9.
func (w *writer) call(ctx context.Context, cl *flightsql.Client, table string) error {
	ctx = metadata.AppendToOutgoingContext(ctx, "lakestream-writer-id", strconv.FormatInt(w.id, 10), "lakestream-writer-seq", strconv.Itoa(int(w.seq)))
	base := w.id*1_000_000_000 + int64(w.seq)*10
	_, err := cl.ExecuteUpdate(ctx, fmt.Sprintf("INSERT INTO %s SELECT range, 'w' FROM range(%d, %d)", table, base, base+10))
	return err
}

func (w *writer) ids() []int64 {
	base := w.id*1_000_000_000 + int64(w.seq)*10
	out := make([]int64, 10)
	for i := range out {
		out[i] = base + int64(i)
	}
	return out
}

var errNoLeader = errors.New("the bucket has no leader")
