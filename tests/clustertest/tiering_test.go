package clustertest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"google.golang.org/grpc/metadata"

	"github.com/lakestream/lakestream/cluster"
	procs "github.com/lakestream/lakestream/internal/proc"
	"github.com/lakestream/lakestream/tiering"
)

// The tiering acceptance on a three-node cluster whose lake the nodes
// share — the Iceberg catalog in the PostgreSQL database of the metadata
// store, the warehouse on S3 (moto), both started by the test: writers
// load a table of three buckets through the nodes that lead them while
// every node's count is checked; the node holding the table's committer
// lease is killed with kill -9 while the lake lags the log; the lease moves
// to another node, which goes on from the lake's offsets; once the writers
// stop, every node — the killed one restarted too — reads exactly the rows
// acknowledged, in the union and in the lake, and the lake's snapshots
// tier every offset once. Log retention (1 s) runs on every node
// meanwhile: the followers delete only what the lake holds.
func TestTieringCommitterKill(t *testing.T) {
	s3 := startMoto(t)
	const warehouse = "s3://lake/wh"
	h := newHarnessWith(t, []harnessOption{withArgs(func(h *harness, id string) []string {
		return []string{"--catalog", h.meta, "--warehouse", warehouse, "--s3-endpoint", s3, "--s3-region", "us-east-1",
			"--s3-access-key-id", "moto-key", "--s3-secret-access-key", "moto-secret", "--s3-path-style", "--retention-check", "1s"}
	})}, "n1", "n2", "n3")
	h.createTable("tt", `CREATE TABLE tt (id BIGINT NOT NULL, s VARCHAR) WITH ('bucket.num'='3', 'datalake.freshness'='1s',
		'log.retention'='1s', 'log.segment.bytes'='1MiB', 'log.compression'='none')`)
	ctx := context.Background()
	tableID, err := queryInt(ctx, h.nodes["n1"].cl, "SELECT min(table_id) FROM lakestream.buckets WHERE table_name = 'default.tt'")
	if err != nil {
		t.Fatal(err)
	}
	lease := "tier/" + strconv.FormatInt(tableID, 10) // node.CommitterLease
	committer := func() string {
		l, err := h.store.Lease(ctx, lease)
		if err != nil {
			return ""
		}
		return l.Holder
	}
	h.waitFor("a committer", func() bool { return committer() != "" })
	first := committer()

	// A writer per node, each its own idempotent writer id, sending each
	// call to its node until it is acknowledged.
	load := &loader{h: h, table: "tt"}
	for i, id := range h.order {
		load.start(id, int64(i+1))
	}
	stopChecks := load.checkCounts(t)

	backlog := func() bool {
		lake, err1 := queryInt(ctx, h.nodes[first].cl, `SELECT count(*) FROM "tt$lake"`)
		union, err2 := queryInt(ctx, h.nodes[first].cl, "SELECT count(*) FROM tt")
		return err1 == nil && err2 == nil && lake > 20_000 && union > lake
	}
	h.waitFor("rounds committed and a backlog", backlog)

	// Exact counts while tiering runs: the writers pause (each once its
	// last call is acknowledged), and every node then reads exactly the
	// rows acknowledged, whatever its lake holds yet.
	load.stopAll()
	paused := load.acked.Load()
	var lakeWhilePaused []int64
	for _, id := range h.order {
		cl := h.nodes[id].cl
		h.waitFor(id+" reads every acknowledged row", func() bool {
			n, err := queryInt(ctx, cl, "SELECT count(*) FROM tt")
			return err == nil && n == paused
		})
		if n, err := queryInt(ctx, cl, "SELECT count(DISTINCT id) FROM tt"); err != nil || n != paused {
			t.Errorf("distinct ids on %s while tiering: %d, %v; want %d", id, n, err, paused)
		}
		lake, _ := queryInt(ctx, cl, `SELECT count(*) FROM "tt$lake"`)
		lakeWhilePaused = append(lakeWhilePaused, lake)
	}

	// New writers on the other nodes, then kill the committer once the lake
	// lags the log again. It writes nothing itself: no call is in doubt on
	// the node that dies.
	for i, id := range h.order {
		if id != first {
			load.start(id, int64(len(h.order)+i+1))
		}
	}
	h.waitFor("a backlog again", func() bool { return load.acked.Load() > paused+10_000 && backlog() })
	lakeAtKill, _ := queryInt(ctx, h.nodes[first].cl, `SELECT count(*) FROM "tt$lake"`)
	killed := time.Now()
	h.kill(first)
	h.waitFor("the lease on another node", func() bool { c := committer(); return c != "" && c != first })
	second := committer()
	takeover := time.Since(killed)
	h.waitFor("the new committer's rounds", func() bool {
		n, err := queryInt(ctx, h.nodes[second].cl, `SELECT count(*) FROM "tt$lake"`)
		return err == nil && n > lakeAtKill+20_000
	})
	caughtUp := time.Since(killed)
	load.stopAll()
	stopChecks()
	acked := load.acked.Load()

	// Every live node, then the restarted one, reads exactly the rows
	// acknowledged, in the union and, once the committer caught up, in the
	// lake; no id twice.
	h.start(first)
	for _, id := range h.order {
		cl := h.nodes[id].cl
		h.waitFor(id+" reads every row in its lake", func() bool {
			n, err := queryInt(ctx, cl, `SELECT count(*) FROM "tt$lake"`)
			return err == nil && n == acked
		})
		for _, q := range []string{"SELECT count(*) FROM tt", "SELECT count(DISTINCT id) FROM tt", `SELECT count(DISTINCT id) FROM "tt$lake"`} {
			if n, err := queryInt(ctx, cl, q); err != nil || n != acked {
				t.Errorf("%s on %s: %d, %v; want %d acknowledged", q, id, n, err, acked)
			}
		}
	}
	// The restarted node rejoins every bucket's in-sync set: where the
	// leader's retention deleted segments past its log's end while it was
	// down, it restarts its log at the leader's start (docs/cluster.md).
	for b := range int32(3) {
		ref := cluster.BucketRef{TableID: tableID, Bucket: b}
		h.waitFor(fmt.Sprintf("%s back in the in-sync set of %s", first, ref), func() bool {
			return slices.Contains(h.bucket(ref).ISR, first)
		})
	}
	// One node says it commits the table: the lease's holder.
	h.waitFor("lakestream.tiering naming the committer", func() bool {
		holder := committer()
		for _, id := range h.order {
			n, err := queryInt(ctx, h.nodes[id].cl, "SELECT count(*) FROM lakestream.tiering WHERE table_name = 'default.tt' AND committer")
			if err != nil || (id == holder) != (n == 3) || (id != holder && n != 0) {
				return false
			}
		}
		return holder != ""
	})
	// Retention deleted tiered segments on the followers too, never one
	// the lake lacks (the counts above are exact with them gone).
	var deleted []string
	for _, id := range h.order {
		if id == second {
			continue
		}
		n, err := queryInt(ctx, h.nodes[id].cl, "SELECT count(*) FROM lakestream.offsets WHERE table_name = 'default.tt' AND log_start_offset > 0")
		if err == nil && n > 0 {
			deleted = append(deleted, id)
		}
	}
	if len(deleted) == 0 {
		t.Error("no follower deleted a tiered segment")
	}
	snaps, token := checkLakeSnapshots(t, warehouse, s3, h.meta, acked)
	if token < 2 {
		t.Errorf("the lake's last commit was made under lease token %d: the lease never moved", token)
	}
	t.Logf("%d rows acknowledged (%d calls, %d sends retried); paused at %d rows, every node exact, their lakes at %v; committer %s killed with the lake at %d rows; lease on %s after %s, its rounds past the backlog %s after the kill; %d lake snapshots; followers that deleted tiered segments: %v; %d count checks during the load",
		acked, load.calls.Load(), load.retries.Load(), paused, lakeWhilePaused, first, lakeAtKill, second, takeover.Round(time.Millisecond), caughtUp.Round(time.Millisecond), snaps, deleted, load.checks.Load())
}

// loader is a set of idempotent writers, one per node, inserting rows of
// ids of their own.
type loader struct {
	h     *harness
	table string
	mu    sync.Mutex
	stops map[string]func()
	// acked counts the rows acknowledged; issued the rows of every call
	// sent (acknowledged or not yet).
	acked, issued, calls, retries, checks atomic.Int64
}

const rowsPerCall = 2000

// start runs a writer sending its calls to node id.
func (l *loader) start(id string, writerID int64) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	l.mu.Lock()
	if l.stops == nil {
		l.stops = map[string]func(){}
	}
	l.stops[id] = func() { cancel(); <-done }
	l.mu.Unlock()
	cl := l.h.nodes[id].cl
	go func() {
		defer close(done)
		for seq := int32(0); ctx.Err() == nil; seq++ {
			l.issued.Add(rowsPerCall)
			for {
				err := l.call(cl, writerID, seq)
				if err == nil {
					l.acked.Add(rowsPerCall)
					l.calls.Add(1)
					break
				}
				// A refusal (not the leader of a bucket, or no bucket led)
				// wrote nothing: the writer may stop there. Any other
				// failure leaves the call in doubt: it is sent again with
				// the same sequence number, which the node stores once.
				if ctx.Err() != nil && strings.Contains(err.Error(), "nothing was written") {
					l.issued.Add(-rowsPerCall)
					return
				}
				l.retries.Add(1)
				time.Sleep(50 * time.Millisecond) // the nodes are other processes: nothing to wait on
			}
		}
	}()
}

// call inserts the rows of the writer's call seq: ids writer × 10⁹ +
// seq × rowsPerCall + 0…rowsPerCall-1. A call in flight when the writer
// stops completes (its context is not the writer's).
func (l *loader) call(cl *flightsql.Client, writerID int64, seq int32) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ctx = metadata.AppendToOutgoingContext(ctx, "lakestream-writer-id", strconv.FormatInt(writerID, 10), "lakestream-writer-seq", strconv.Itoa(int(seq)))
	base := writerID*1_000_000_000 + int64(seq)*rowsPerCall
	_, err := cl.ExecuteUpdate(ctx, fmt.Sprintf("INSERT INTO %s SELECT range, md5(range::VARCHAR) FROM range(%d, %d)", l.table, base, base+rowsPerCall))
	return err
}

// stop stops node id's writer once its call in flight is acknowledged.
func (l *loader) stop(id string) {
	l.mu.Lock()
	stop := l.stops[id]
	delete(l.stops, id)
	l.mu.Unlock()
	if stop != nil {
		stop()
	}
}

func (l *loader) stopAll() {
	for _, id := range l.h.order {
		l.stop(id)
	}
}

// checkCounts checks, on every running node until the returned function
// is called, that the table holds no id twice (in the union and in its
// lake), and that a node's count never falls nor passes the rows sent.
func (l *loader) checkCounts(t *testing.T) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var failures []string
	go func() {
		defer close(done)
		last := map[string]int64{}
		for ctx.Err() == nil {
			for _, id := range l.h.running() {
				cl := l.h.nodes[id].cl
				qctx, qcancel := context.WithTimeout(ctx, 5*time.Second)
				dup, err1 := queryInt(qctx, cl, "SELECT count(*) - count(DISTINCT id) FROM "+l.table)
				lakeDup, err2 := queryInt(qctx, cl, fmt.Sprintf(`SELECT count(*) - count(DISTINCT id) FROM "%s$lake"`, l.table))
				n, err3 := queryInt(qctx, cl, "SELECT count(*) FROM "+l.table)
				qcancel()
				if err := errors.Join(err1, err2, err3); err != nil {
					continue // a node being killed or restarted
				}
				l.checks.Add(1)
				issued := l.issued.Load()
				switch {
				case dup != 0 || lakeDup != 0:
					failures = append(failures, fmt.Sprintf("%s: %d ids twice in the table, %d in its lake", id, dup, lakeDup))
				case n < last[id]:
					failures = append(failures, fmt.Sprintf("%s: %d rows after %d", id, n, last[id]))
				case n > issued:
					failures = append(failures, fmt.Sprintf("%s: %d rows, %d sent", id, n, issued))
				}
				last[id] = n
			}
		}
	}()
	return func() {
		cancel()
		<-done
		for _, f := range failures {
			t.Error("during the load: " + f)
		}
	}
}

// checkLakeSnapshots reads the lake table from the catalog as another
// engine would and walks its snapshots from the first: each carries the
// tiered offsets, which never fall, and adds exactly the rows between its
// parent's offsets and its own, so no offset is tiered twice; together
// they hold rows. It returns the snapshots and the committer lease token
// of the last commit.
func checkLakeSnapshots(t *testing.T, warehouse, s3, catalogURI string, rows int64) (int, int64) {
	t.Helper()
	return checkLakeSnapshotsOf(t, "tt", warehouse, s3, catalogURI, rows)
}

// checkLakeSnapshotsOf is checkLakeSnapshots of table name.
func checkLakeSnapshotsOf(t *testing.T, name, warehouse, s3, catalogURI string, rows int64) (int, int64) {
	t.Helper()
	ctx := context.Background()
	cat, err := tiering.OpenCatalog(ctx, tiering.StorageConfig{Catalog: catalogURI, Warehouse: warehouse,
		S3: tiering.S3Config{Endpoint: s3, Region: "us-east-1", AccessKeyID: "moto-key", SecretAccessKey: "moto-secret", PathStyle: true}})
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := cat.(catalog.Closer); ok {
		defer c.Close()
	}
	tbl, err := cat.LoadTable(ctx, table.Identifier{"default", name})
	if err != nil {
		t.Fatal(err)
	}
	var chain []table.Snapshot
	for s := tbl.CurrentSnapshot(); s != nil; {
		chain = append([]table.Snapshot{*s}, chain...)
		if s.ParentSnapshotID == nil {
			break
		}
		s = tbl.Metadata().SnapshotByID(*s.ParentSnapshotID)
	}
	prev := map[string]int64{}
	var total int64
	for _, s := range chain {
		offs := parseTiered(t, s.Summary.Properties["lakestream.tiered-offsets"])
		var delta int64
		for b, o := range offs {
			if o < prev[b] {
				t.Fatalf("snapshot %d: bucket %s tiered to %d, below its parent's %d", s.SnapshotID, b, o, prev[b])
			}
			delta += o - prev[b]
		}
		added, _ := strconv.ParseInt(s.Summary.Properties["added-records"], 10, 64)
		deleted, _ := strconv.ParseInt(s.Summary.Properties["deleted-records"], 10, 64)
		if s.Summary.Operation == table.OpAppend && added != delta {
			t.Errorf("snapshot %d adds %d rows for %d offsets", s.SnapshotID, added, delta)
		}
		total += added - deleted
		prev = offs
	}
	if total != rows {
		t.Errorf("the lake's snapshots hold %d rows, want %d", total, rows)
	}
	token, _ := strconv.ParseInt(tbl.Properties()["lakestream.committer-token"], 10, 64)
	return len(chain), token
}

// parseTiered reads "0:120,1:77".
func parseTiered(t *testing.T, s string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for len(s) > 0 {
		var kv string
		kv, s, _ = strings.Cut(s, ",")
		k, v, ok := strings.Cut(kv, ":")
		n, err := strconv.ParseInt(v, 10, 64)
		if !ok || err != nil {
			t.Fatalf("tiered offsets %q", s)
		}
		out[k] = n
	}
	return out
}

// startMoto starts moto's S3 server from the repository's .venv and
// creates the bucket "lake"; it returns the endpoint.
func startMoto(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(root, ".venv", "bin", "moto_server")
	if _, err := os.Stat(bin); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is missing and CI=true: run `make venv`", bin)
		}
		t.Skipf("%s is missing: run `make venv` to install moto", bin)
	}
	port, err := procs.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	p, err := procs.Start("moto", exec.Command(bin, "-H", "127.0.0.1", "-p", strconv.Itoa(port)), nil, syscall.SIGTERM)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Stop() })
	endpoint := "http://127.0.0.1:" + strconv.Itoa(port)
	if err := p.WaitReady(30*time.Second, func() error {
		rsp, err := http.Get(endpoint + "/")
		if err == nil {
			rsp.Body.Close()
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPut, endpoint+"/lake", nil)
	if err != nil {
		t.Fatal(err)
	}
	rsp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("create bucket: %v", err)
	}
	rsp.Body.Close()
	if rsp.StatusCode != http.StatusOK {
		t.Fatalf("create bucket: %s", rsp.Status)
	}
	return endpoint
}

// A table of one replica a bucket on three nodes sharing their lake: no
// node holds every bucket, and the committer reads the others' buckets
// from them. Every node's lake ends up holding exactly the rows written,
// and the lake's snapshots tier every offset once.
func TestTieringOneReplicaABucket(t *testing.T) {
	s3 := startMoto(t)
	const warehouse = "s3://lake/wh"
	h := newHarnessWith(t, []harnessOption{withArgs(func(h *harness, id string) []string {
		return []string{"--catalog", h.meta, "--warehouse", warehouse, "--s3-endpoint", s3, "--s3-region", "us-east-1",
			"--s3-access-key-id", "moto-key", "--s3-secret-access-key", "moto-secret", "--s3-path-style"}
	})}, "n1", "n2", "n3")
	h.createTable("one", `CREATE TABLE one (id BIGINT NOT NULL, s VARCHAR) WITH ('bucket.num'='3', 'bucket.replicas'='1',
		'datalake.freshness'='500ms')`)
	ctx := context.Background()
	tableID, err := queryInt(ctx, h.nodes["n1"].cl, "SELECT min(table_id) FROM lakestream.buckets WHERE table_name = 'default.one'")
	if err != nil {
		t.Fatal(err)
	}
	held := map[string]int{}
	for b := range int32(3) {
		for _, id := range h.bucket(cluster.BucketRef{TableID: tableID, Bucket: b}).Replicas {
			held[id]++
		}
	}
	for id, n := range held {
		if n == 3 {
			t.Fatalf("%s holds every bucket (%v): no bucket is read from another node", id, held)
		}
	}
	// Two loads, the second once the first is in the lake: the rounds go
	// on from the offsets the first ones read from the other nodes.
	const rows = 3000
	for phase := range 2 {
		for i := range 3 {
			sql := fmt.Sprintf("INSERT INTO one SELECT range + %d, 'r' FROM range(500)", phase*1500+i*500)
			if _, err := h.nodes[h.order[i]].cl.ExecuteUpdate(ctx, sql); err != nil {
				t.Fatalf("%s: %v", sql, err)
			}
		}
		h.waitFor("the load in the lake", func() bool {
			n, err := queryInt(ctx, h.nodes["n1"].cl, `SELECT count(*) FROM "one$lake"`)
			return err == nil && n == int64(phase+1)*1500
		})
	}
	lease, err := h.store.Lease(ctx, "tier/"+strconv.FormatInt(tableID, 10)) // node.CommitterLease
	if err != nil {
		t.Fatalf("the committer lease: %v", err)
	}
	for _, id := range h.order {
		cl := h.nodes[id].cl
		h.waitFor(id+" reads every row in the lake", func() bool {
			n, err := queryInt(ctx, cl, `SELECT count(*) FROM "one$lake"`)
			return err == nil && n == rows
		})
		for _, q := range []string{"SELECT count(*) FROM one", "SELECT count(DISTINCT id) FROM one", `SELECT count(DISTINCT id) FROM "one$lake"`} {
			if n, err := queryInt(ctx, cl, q); err != nil || n != rows {
				t.Errorf("%s on %s: %d, %v; want %d", q, id, n, err, rows)
			}
		}
	}
	snaps, _ := checkLakeSnapshotsOf(t, "one", warehouse, s3, h.meta, rows)
	if snaps < 2 {
		t.Errorf("%d lake snapshots for two loads tiered apart", snaps)
	}
	t.Logf("buckets per node %v; committer %s; %d rows in the lake in %d snapshots, every node exact", held, lease.Holder, rows, snaps)
}
