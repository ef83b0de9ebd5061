package clustertest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lakestream/lakestream/cluster"
	"github.com/lakestream/lakestream/cluster/meta"
	"github.com/lakestream/lakestream/columnarlog"
)

// history is what the clients of a fault test did and saw.
type history struct {
	mu      sync.Mutex
	acked   map[int64]bool // ids of acknowledged calls
	seen    map[int64]bool // ids some read returned
	acks    int            // acknowledged calls
	retries int            // calls sent again after an error or no answer
	reads   int
	lastAck time.Time
	ackedBy map[int64]string // by writer id × 10⁸ + call: the node and time of its acknowledgement
	bad     []error          // answers no correct cluster gives
	// ackLog is every acknowledgement: which node gave it, when the call
	// was first sent and when its answer came. cutOff are the times a
	// leader was cut off from its followers or its disk failed: no call
	// first sent then may be acknowledged by it before the fault healed.
	// (A retry sent then may be: the call it repeats was replicated before
	// the fault, and the leader's in-sync set may since have shrunk to
	// the replicas that hold it.)
	ackLog     []ackRecord
	cutOff     []cutOff
	staleCalls int // calls sent to an isolated leader (staleWrites)
}

type ackRecord struct {
	node      string
	first, at time.Time
}

type cutOff struct {
	kind, node string
	from, to   time.Time
}

// cutOffAcks counts the acknowledgements that a node gave while it was
// cut off, of calls first sent after the fault began.
func (h *history) cutOffAcks() (n int, what []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range h.cutOff {
		for _, a := range h.ackLog {
			if a.node == c.node && a.first.After(c.from) && a.at.Before(c.to) {
				n++
				what = append(what, fmt.Sprintf("%s (%s) acknowledged a call first sent at %s at %s", c.node, c.kind,
					a.first.Format("15:04:05.000"), a.at.Format("15:04:05.000")))
			}
		}
	}
	return n, what
}

func newHistory() *history {
	return &history{acked: map[int64]bool{}, seen: map[int64]bool{}, ackedBy: map[int64]string{}}
}

func (h *history) ack(ids []int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.acks++
	for _, id := range ids {
		h.acked[id] = true
	}
}

func (h *history) ackCount() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.acks
}

// faultCounts are a fault test's figures.
type faultCounts struct {
	rounds   int
	faults   map[string]int
	failover []time.Duration // kill -9 of the leader → first acknowledged write after it
	election []time.Duration // kill -9 of the leader → a new leader stored (as the harness polls it)
}

// The kinds of fault, in the order rounds take them: every round of five
// kills a leader twice (the failover figures come from those rounds).
// $LAKESTREAM_FAULT_KINDS (comma-separated) keeps only the kinds it names,
// in this order.
var faultKinds = []string{
	"kill-leader", "kill-follower", "kill-leader", "kill-controller", "pause-leader",
	"kill-leader", "cut-follower", "isolate-leader", "kill-leader", "disk-fail-leader",
	"kill-leader", "kill-follower", "kill-leader", "kill-controller", "pause-leader",
	"kill-leader", "cut-follower", "isolate-leader-meta", "kill-leader", "disk-stall-leader",
}

// roundKinds is the rotation of kinds the rounds take.
func roundKinds(t *testing.T) []string {
	v := os.Getenv("LAKESTREAM_FAULT_KINDS")
	if v == "" {
		return faultKinds
	}
	keep := map[string]bool{}
	for _, k := range strings.Split(v, ",") {
		if !slices.Contains(faultKinds, k) {
			t.Fatalf("LAKESTREAM_FAULT_KINDS: unknown kind %q", k)
		}
		keep[k] = true
	}
	var out []string
	for _, k := range faultKinds {
		if keep[k] {
			out = append(out, k)
		}
	}
	return out
}

// TestFaultRounds runs a three-node cluster (processes, metadata in
// PostgreSQL) through fault rounds while two idempotent writers and a
// reader run: each round kills a bucket's leader, a follower or the
// controller with SIGKILL; freezes the leader (SIGSTOP) until another
// leads and then thaws it; cuts a follower's link to its leader; cuts the
// leader off from both followers (and, in one variant, from the metadata
// store); or makes the leader's fsyncs fail or stall. It heals the fault,
// restarts what it killed and waits until every replica is in sync again.
// Then every acknowledged row is there exactly once, no read returned a
// row that is not there at the end, no leader acknowledged a call sent to
// it while it was cut off or its disk failed, and the replicas hold the
// same bytes up to the high watermark. Rounds: $LAKESTREAM_FAULT_ROUNDS,
// default 50.
func TestFaultRounds(t *testing.T) {
	rounds := 50
	if v := os.Getenv("LAKESTREAM_FAULT_ROUNDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("LAKESTREAM_FAULT_ROUNDS=%q: want a positive number", v)
		}
		rounds = n
	}
	h := newHarness(t, "n1", "n2", "n3")
	h.createTable("t", "CREATE TABLE t (id BIGINT, v VARCHAR) WITH ('bucket.num' = '1')")
	ref := cluster.BucketRef{TableID: 1}
	hist := newHistory()
	ctx, stopClients := context.WithCancel(context.Background())
	var clients sync.WaitGroup
	for w := int64(1); w <= 2; w++ {
		clients.Add(1)
		go func() { defer clients.Done(); h.writeLoop(ctx, &writer{id: w}, ref, hist) }()
	}
	// A third writer sends each call to a random running node, which
	// forwards it to the leader unless it leads (docs/cluster.md).
	clients.Add(1)
	go func() { defer clients.Done(); h.writeLoopVia(ctx, &writer{id: 3}, h.anyClient, false, hist) }()
	clients.Add(1)
	go func() { defer clients.Done(); h.readLoop(ctx, hist) }()
	defer func() { stopClients(); clients.Wait() }()

	counts := faultCounts{faults: map[string]int{}}
	kinds := roundKinds(t)
	staleAcks := 0
	for round := range rounds {
		b := h.waitInSync(ref)
		kind := kinds[round%len(kinds)]
		before := hist.ackCount()
		progress := func(what string) {
			h.waitFor(fmt.Sprintf("round %d (%s): %s", round, kind, what), func() bool { return hist.ackCount() > before })
		}
		newLeader := func(old string) {
			h.waitFor(fmt.Sprintf("round %d (%s): a leader other than %s", round, kind, old), func() bool {
				l := h.bucket(ref).Leader
				return l != "" && l != old
			})
		}
		var victim string
		switch kind {
		case "kill-leader":
			victim = b.Leader
			killed := time.Now()
			h.kill(victim)
			newLeader(victim)
			counts.election = append(counts.election, time.Since(killed))
			h.waitFor(fmt.Sprintf("round %d: a write acknowledged after the kill", round), func() bool {
				hist.mu.Lock()
				defer hist.mu.Unlock()
				return hist.lastAck.After(killed)
			})
			hist.mu.Lock()
			counts.failover = append(counts.failover, hist.lastAck.Sub(killed))
			hist.mu.Unlock()
			t.Logf("round %d: %s killed at %s; elected after %s, first acknowledgement after %s", round, victim,
				killed.Format("15:04:05.000"), counts.election[len(counts.election)-1].Round(time.Millisecond),
				counts.failover[len(counts.failover)-1].Round(time.Millisecond))
			h.start(victim)
		case "kill-follower":
			for _, id := range b.Replicas {
				if id != b.Leader {
					victim = id
					break
				}
			}
			h.kill(victim)
			progress("a write acknowledged without the follower")
			h.start(victim)
		case "kill-controller":
			victim = h.controller()
			if victim == "" {
				victim = b.Leader
			}
			h.kill(victim)
			h.waitFor(fmt.Sprintf("round %d: a controller other than %s", round, victim), func() bool {
				c := h.controller()
				return c != "" && c != victim
			})
			if victim == b.Leader {
				newLeader(victim)
			}
			progress("a write acknowledged after the controller's death")
			h.start(victim)
		case "pause-leader":
			victim = b.Leader
			h.pause(victim)
			newLeader(victim)
			progress("a write acknowledged by the new leader")
			h.resume(victim) // the former leader thaws, still believing it leads
		case "cut-follower":
			victim = otherThan(b.Replicas, b.Leader)
			cut := h.repl[[2]string{victim, b.Leader}]
			cut.set([]linkMode{drop, blackhole}[counts.faults[kind]%2])
			h.waitFor(fmt.Sprintf("round %d: %s out of the in-sync set", round, victim), func() bool {
				return !slices.Contains(h.bucket(ref).ISR, victim)
			})
			before = hist.ackCount()
			progress("a write acknowledged without the cut-off follower")
			cut.set(pass)
		case "isolate-leader", "isolate-leader-meta":
			// Cut off from both followers, the leader goes on taking
			// writes (the writers, and stale calls sent to it): none may be
			// acknowledged. With its link to the metadata store cut too,
			// its node lease lapses and another replica is elected;
			// without, it keeps its lease and gossip sees it alive, so it
			// stays the leader and drops both followers from its in-sync
			// set, refusing writes until the links heal.
			victim = b.Leader
			mode := []linkMode{blackhole, drop}[counts.faults[kind]%2]
			links := h.linksOf(victim, kind == "isolate-leader-meta")
			for _, l := range links {
				l.set(mode)
			}
			from := time.Now()
			staleAcks += h.staleWrites(victim, hist, 3)
			if kind == "isolate-leader-meta" {
				newLeader(victim)
				progress("a write acknowledged by the new leader")
			} else {
				h.waitFor(fmt.Sprintf("round %d: %s alone in its in-sync set", round, victim), func() bool {
					return slices.Equal(h.bucket(ref).ISR, []string{victim})
				})
			}
			hist.mu.Lock()
			hist.cutOff = append(hist.cutOff, cutOff{kind, victim, from, time.Now()})
			hist.mu.Unlock()
			for _, l := range links {
				l.set(pass)
			}
			progress("a write acknowledged after the links healed")
		case "disk-fail-leader", "disk-stall-leader":
			// The leader's fsyncs fail (EIO) or hang until the writers
			// have seen calls fail or time out; then the disk recovers.
			victim = b.Leader
			mode, failures := "fail", 3
			if kind == "disk-stall-leader" {
				mode, failures = "stall", 1 // a call times out after 3 s
			}
			hist.mu.Lock()
			retries := hist.retries
			hist.mu.Unlock()
			h.setDisk(victim, mode)
			from := time.Now()
			h.waitFor(fmt.Sprintf("round %d: calls failing on %s's disk", round, victim), func() bool {
				hist.mu.Lock()
				defer hist.mu.Unlock()
				return hist.retries >= retries+failures
			})
			hist.mu.Lock()
			hist.cutOff = append(hist.cutOff, cutOff{kind, victim, from, time.Now()})
			hist.mu.Unlock()
			h.setDisk(victim, "")
			before = hist.ackCount()
			progress("a write acknowledged after the disk recovered")
		}
		counts.faults[kind]++
		counts.rounds++
		h.waitMembers()
		t.Logf("round %d: %s of %s; %d acks so far", round, kind, victim, hist.ackCount())
		hist.mu.Lock()
		bad := slices.Clone(hist.bad)
		hist.mu.Unlock()
		if len(bad) > 0 {
			t.Fatalf("round %d: %v", round, errors.Join(bad...))
		}
	}
	h.waitInSync(ref)
	stopClients()
	clients.Wait()

	// Every acknowledged row once; every row read still there.
	leader := h.nodes[h.waitInSync(ref).Leader]
	var final []int64
	h.waitFor("the leader's rows", func() bool {
		ids, err := queryInts(context.Background(), leader.cl, "SELECT id FROM t")
		final = ids
		return err == nil
	})
	have := make(map[int64]int, len(final))
	dup := 0
	for _, id := range final {
		if have[id]++; have[id] == 2 {
			dup++
			if dup <= 3 {
				t.Logf("stored twice: id %d (writer %d call %d), acknowledged by %s", id, id/1_000_000_000, id%1_000_000_000/10, hist.ackedBy[id/10])
			}
		}
	}
	lost, vanished := 0, 0
	for id := range hist.acked {
		if have[id] == 0 {
			if lost++; lost <= 3 {
				t.Logf("lost: id %d (writer %d call %d), acknowledged by %s", id, id/1_000_000_000, id%1_000_000_000/10, hist.ackedBy[id/10])
			}
		}
	}
	for id := range hist.seen {
		if have[id] == 0 {
			vanished++
		}
	}
	var faults []string
	for _, k := range faultKinds {
		if n := counts.faults[k]; n > 0 && !slices.Contains(faults, fmt.Sprintf("%s %d", k, n)) {
			faults = append(faults, fmt.Sprintf("%s %d", k, n))
		}
	}
	cutAcks, what := hist.cutOffAcks()
	t.Logf("fault rounds: %d (%s); acknowledged calls %d (%d rows), retried sends %d, reads %d; lost %d, duplicated %d, read then vanished %d; "+
		"acknowledged by a cut-off or failing leader: %d of the writers' calls, %d of %d stale calls",
		counts.rounds, strings.Join(faults, ", "), hist.acks, len(hist.acked), hist.retries, hist.reads, lost, dup, vanished,
		cutAcks, staleAcks, hist.staleCalls)
	for _, w := range what {
		t.Error(w)
	}
	if staleAcks > 0 {
		t.Errorf("an isolated leader acknowledged %d stale calls", staleAcks)
	}
	if len(counts.failover) > 0 {
		slices.Sort(counts.failover)
		t.Logf("failover (kill -9 of the leader → first acknowledged write), %d trials: p50 %s, p99 %s, max %s", len(counts.failover),
			counts.failover[len(counts.failover)/2].Round(time.Millisecond), counts.failover[(len(counts.failover)*99-1)/100].Round(time.Millisecond),
			counts.failover[len(counts.failover)-1].Round(time.Millisecond))
		slices.Sort(counts.election)
		t.Logf("of which to the election: p50 %s, max %s", counts.election[len(counts.election)/2].Round(time.Millisecond),
			counts.election[len(counts.election)-1].Round(time.Millisecond))
	}
	if lost+dup+vanished > 0 {
		t.Errorf("lost %d acknowledged rows, %d rows stored twice, %d rows read and then gone", lost, dup, vanished)
	}
	if hist.acks == 0 || len(hist.seen) == 0 {
		t.Fatalf("the clients did nothing: %d acks, %d rows seen", hist.acks, len(hist.seen))
	}

	// The replicas hold the same bytes up to the least high watermark.
	h.stopAll()
	h.sameBytes(1, 0)
}

// waitInSync waits until the bucket has a leader and every replica is in
// sync, and returns it.
func (h *harness) waitInSync(ref cluster.BucketRef) (b meta.Bucket) {
	h.t.Helper()
	h.waitFor(fmt.Sprintf("%s in sync", ref), func() bool {
		b = h.bucket(ref)
		return b.Leader != "" && len(b.ISR) == len(b.Replicas)
	})
	return b
}

// leaderClient is the bucket's leader's client, nil while it has none.
func (h *harness) leaderClient(ref cluster.BucketRef) *proc {
	b, err := h.store.Bucket(context.Background(), ref)
	if err != nil || b.Leader == "" {
		return nil
	}
	return h.nodes[b.Leader]
}

// writeLoop sends the writer's calls to the bucket's leader, each until it
// is acknowledged, sending it again (to whichever node leads then) after
// an error or when no answer came in 3 s.
func (h *harness) writeLoop(ctx context.Context, w *writer, ref cluster.BucketRef, hist *history) {
	h.writeLoopVia(ctx, w, func() *proc { return h.leaderClient(ref) }, true, hist)
}

// anyClient is a random running node's client, nil when none runs.
func (h *harness) anyClient() *proc {
	h.mu.Lock()
	defer h.mu.Unlock()
	var live []*proc
	for _, id := range h.order {
		if p := h.nodes[id]; p.cmd != nil && !p.paused {
			live = append(live, p)
		}
	}
	if len(live) == 0 {
		return nil
	}
	return live[rand.IntN(len(live))]
}

// writeLoopVia is writeLoop sending each call to the node pick returns.
// The acknowledgements of a writer that sends to the leader are logged
// (leaderAcks) for the check that no cut-off leader acknowledged a call;
// a node that forwards a call acknowledges it once its leader did.
func (h *harness) writeLoopVia(ctx context.Context, w *writer, pick func() *proc, leaderAcks bool, hist *history) {
	var first time.Time // when the current call was first sent
	for ctx.Err() == nil {
		p := pick()
		if p == nil {
			time.Sleep(5 * time.Millisecond) // no leader now: the controller elects one
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		if first.IsZero() {
			first = time.Now()
		}
		err := w.call(cctx, p.cl, "t")
		cancel()
		if err == nil {
			hist.ack(w.ids())
			hist.mu.Lock()
			hist.lastAck = time.Now()
			if leaderAcks {
				hist.ackLog = append(hist.ackLog, ackRecord{p.id, first, hist.lastAck})
			}
			first = time.Time{}
			hist.ackedBy[w.ids()[0]/10] = p.id + " at " + hist.lastAck.Format("15:04:05.000")
			hist.mu.Unlock()
			w.seq++
			continue
		}
		if ctx.Err() != nil {
			return
		}
		// A leader whose log failed an fsync (a disk-fail round) answers
		// Unavailable too: the write is not stored, and the log repairs
		// itself before the next one.
		switch status.Code(err) {
		case codes.Unavailable, codes.DeadlineExceeded, codes.Canceled:
			hist.mu.Lock()
			hist.retries++
			hist.mu.Unlock()
			time.Sleep(5 * time.Millisecond) // a failed node or a leader change: ask again
		default:
			hist.mu.Lock()
			hist.bad = append(hist.bad, fmt.Errorf("writer %d call %d on %s: %w", w.id, w.seq, p.id, err))
			hist.mu.Unlock()
			return
		}
	}
}

// readLoop reads every row from a random running node, now and then.
func (h *harness) readLoop(ctx context.Context, hist *history) {
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		var live []*proc
		h.mu.Lock()
		for _, id := range h.order {
			if p := h.nodes[id]; p.cmd != nil && !p.paused {
				live = append(live, p)
			}
		}
		h.mu.Unlock()
		if len(live) == 0 {
			continue
		}
		p := live[rand.IntN(len(live))]
		cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		ids, err := queryInts(cctx, p.cl, "SELECT id FROM t")
		cancel()
		if err != nil {
			continue // a node that is going or coming back
		}
		hist.mu.Lock()
		hist.reads++
		for _, id := range ids {
			hist.seen[id] = true
		}
		hist.mu.Unlock()
	}
}

// sameBytes opens bucket b of table id on every node's disk (the nodes
// stopped) and checks that they hold the same bytes at the same offsets
// up to the least high watermark.
func (h *harness) sameBytes(id int64, b int) {
	h.t.Helper()
	type replica struct {
		node string
		log  cluster.Log
	}
	var reps []replica
	hw := int64(-1)
	for _, node := range h.order {
		tl, err := columnarlog.OpenTable(filepath.Join(h.nodes[node].dir, "tables", strconv.FormatInt(id, 10)), 1, columnarlog.Options{Replicated: true})
		if err != nil {
			h.t.Fatalf("%s: open its log: %v", node, err)
		}
		defer tl.Close()
		l := cluster.BucketLog(tl, b)
		reps = append(reps, replica{node, l})
		if w := l.HighWatermark(); hw < 0 || w < hw {
			hw = w
		}
	}
	var want []byte
	for _, r := range reps {
		var got []byte
		for from := int64(0); from < hw; {
			chunk, err := r.log.Read(from, 1<<20)
			if err != nil || len(chunk) == 0 {
				h.t.Fatalf("%s: read from %d below the watermark %d: %v", r.node, from, hw, err)
			}
			// Whole batches below the watermark only: above it the
			// replicas may differ (a tail not yet acknowledged).
			for rest := chunk; len(rest) > 0 && from < hw; {
				batch := columnarlog.Batch(rest)
				got = append(got, rest[:batch.Size()]...)
				from, rest = batch.NextOffset(), rest[batch.Size():]
			}
		}
		if want == nil {
			want = got
			// Each idempotent call's batch once in the log.
			type call struct {
				writer int64
				seq    int32
			}
			at := map[call]string{}
			for rest := got; len(rest) > 0; {
				batch := columnarlog.Batch(rest)
				c := call{batch.WriterID(), batch.WriterSeq()}
				where := fmt.Sprintf("offset %d epoch %d", batch.BaseOffset(), batch.LeaderEpoch())
				if first, ok := at[c]; ok && c.writer != 0 {
					h.t.Errorf("%s: the batch of writer %d call %d is stored twice: at %s and at %s", r.node, c.writer, c.seq, first, where)
				}
				at[c] = where
				rest = rest[batch.Size():]
			}
			continue
		}
		if !bytes.Equal(got, want) {
			h.t.Fatalf("replicas %s and %s differ below the high watermark %d: %s", reps[0].node, r.node, hw, firstDifference(want, got))
		}
	}
	h.t.Logf("replicas byte-identical up to the high watermark %d (%d bytes each)", hw, len(want))
}

// firstDifference describes the first batch at which two replicas' bytes
// differ.
func firstDifference(a, b []byte) string {
	for len(a) > 0 && len(b) > 0 {
		x, y := columnarlog.Batch(a), columnarlog.Batch(b)
		if !bytes.Equal(a[:x.Size()], b[:min(y.Size(), len(b))]) {
			return fmt.Sprintf("at offset %d: a batch of epoch %d, %d rows, writer %d call %d against one at offset %d of epoch %d, %d rows, writer %d call %d",
				x.BaseOffset(), x.LeaderEpoch(), x.RecordCount(), x.WriterID(), x.WriterSeq(), y.BaseOffset(), y.LeaderEpoch(), y.RecordCount(), y.WriterID(), y.WriterSeq())
		}
		a, b = a[x.Size():], b[y.Size():]
	}
	return fmt.Sprintf("one holds %d more bytes", len(a)+len(b))
}
