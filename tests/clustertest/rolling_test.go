package clustertest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lakestream/lakestream/cluster"
)

// TestRollingRestart restarts each node of a three-node cluster in turn
// with SIGTERM while idempotent writers write to two tables: each
// stopping node hands its
// leaderships off first (docs/cluster.md, "Rolling restart"), so the
// writers see only the refusals the docs describe — UNAVAILABLE naming
// the new leader, which they retry there — and no call waits for a failed
// node's timeout. At the end every acknowledged row is there exactly once
// and the replicas hold the same bytes.
func TestRollingRestart(t *testing.T) {
	h := newHarness(t, "n1", "n2", "n3")
	tables := []string{"t", "u"}
	refs := []cluster.BucketRef{{TableID: 1}, {TableID: 2}}
	for _, name := range tables {
		h.createTable(name, "CREATE TABLE "+name+" (id BIGINT, v VARCHAR) WITH ('bucket.num' = '1')")
	}
	for _, ref := range refs {
		h.waitInSync(ref)
	}
	hist := newHistory()
	var errs rollingErrors
	ctx, stopClients := context.WithCancel(context.Background())
	var clients sync.WaitGroup
	for i, name := range tables {
		for w := int64(1); w <= 2; w++ {
			clients.Add(1)
			go func() {
				defer clients.Done()
				h.rollingWriteLoop(ctx, &writer{id: int64(i)*10 + w}, name, refs[i], hist, &errs)
			}()
		}
	}
	defer func() { stopClients(); clients.Wait() }()
	h.waitFor("writes before the restarts", func() bool { return hist.ackCount() > 20 })

	start := time.Now()
	handOffs := 0
	for _, id := range h.order {
		led := h.leads(id, refs)
		handOffs += len(led)
		before := hist.ackCount()
		moved := h.watchHandOff(id, refs)
		took := h.stop(id)
		handed := moved()
		for _, ref := range refs {
			if b := h.bucket(ref); b.Leader == id {
				t.Fatalf("%s stopped while leading %s: %+v", id, ref, b)
			}
		}
		for _, ref := range led {
			if !slices.Contains(handed, ref) {
				t.Errorf("%s: the leadership of %s did not move while %s still held its node lease (handed off: %v)", id, ref, id, handed)
			}
		}
		t.Logf("%s (leading %v) stopped gracefully in %s; %d calls acknowledged meanwhile", id, led, took.Round(time.Millisecond), hist.ackCount()-before)
		h.waitFor(fmt.Sprintf("writes acknowledged while %s is down", id), func() bool { return hist.ackCount() > before+5 })
		h.start(id)
		h.waitMembers()
		for _, ref := range refs {
			h.waitInSync(ref)
		}
	}
	elapsed := time.Since(start)
	if handOffs == 0 {
		t.Fatal("no node led a bucket when it stopped: nothing was handed off")
	}
	h.waitFor("writes after the restarts", func() bool { return hist.ackCount() > 0 })
	stopClients()
	clients.Wait()

	lost, dup := 0, 0
	for i, ref := range refs {
		leader := h.nodes[h.waitInSync(ref).Leader]
		var rows []int64
		h.waitFor("the leader's rows of "+tables[i], func() bool {
			ids, err := queryInts(context.Background(), leader.cl, "SELECT id FROM "+tables[i])
			rows = ids
			return err == nil
		})
		have := map[int64]int{}
		for _, id := range rows {
			if have[id]++; have[id] == 2 {
				dup++
			}
		}
		for id := range hist.acked {
			if id/1_000_000_000/10 == int64(i) && have[id] == 0 {
				lost++
			}
		}
	}
	errs.mu.Lock()
	t.Logf("rolling restart of 3 nodes in %s: %d calls acknowledged (%d rows), %d sends refused and retried (%s), longest wait between acknowledgements %s; lost %d, duplicated %d",
		elapsed.Round(time.Millisecond), hist.acks, len(hist.acked), hist.retries, errs.summary(), errs.longestGapLocked().Round(time.Millisecond), lost, dup)
	if len(errs.other) > 0 {
		t.Errorf("writes failed other than as the docs describe: %s", strings.Join(errs.other[:min(5, len(errs.other))], "; "))
	}
	errs.mu.Unlock()
	if lost+dup > 0 {
		t.Errorf("lost %d acknowledged rows, stored %d twice", lost, dup)
	}
	h.stopAll()
	h.sameBytes(1, 0)
	h.sameBytes(2, 0)
}

// rollingErrors are the refusals the writers of a rolling restart saw.
type rollingErrors struct {
	mu        sync.Mutex
	notLeader int      // UNAVAILABLE naming another leader: the hand-off
	unavail   int      // other UNAVAILABLE: a node going or coming back
	other     []string // anything else, a call that timed out included
	ackTimes  []time.Time
}

func (e *rollingErrors) summary() string {
	return fmt.Sprintf("%d UNAVAILABLE not the leader, %d other UNAVAILABLE", e.notLeader, e.unavail)
}

// rollingWriteLoop sends the writer's calls to the bucket's leader (as the
// metadata store names it), each until it is acknowledged, and sends it
// again after UNAVAILABLE — the refusal of a node that no longer leads,
// or one going down. A call that gets no answer in 3 s is an error here:
// with the leadership handed off, no call waits on a node that stopped.
func (h *harness) rollingWriteLoop(ctx context.Context, w *writer, table string, ref cluster.BucketRef, hist *history, errs *rollingErrors) {
	for ctx.Err() == nil {
		p := h.leaderClient(ref)
		if p == nil {
			time.Sleep(5 * time.Millisecond) // no leader now: the controller elects one
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		err := w.call(cctx, p.cl, table)
		cancel()
		if err == nil {
			hist.ack(w.ids())
			errs.mu.Lock()
			errs.ackTimes = append(errs.ackTimes, time.Now())
			errs.mu.Unlock()
			w.seq++
			continue
		}
		if ctx.Err() != nil {
			return
		}
		hist.mu.Lock()
		hist.retries++
		hist.mu.Unlock()
		errs.mu.Lock()
		switch {
		case status.Code(err) == codes.Unavailable && strings.Contains(err.Error(), cluster.ErrNotLeader.Error()):
			errs.notLeader++
		case status.Code(err) == codes.Unavailable:
			errs.unavail++
		default:
			errs.other = append(errs.other, fmt.Sprintf("writer %d call %d on %s: %v", w.id, w.seq, p.id, err))
		}
		errs.mu.Unlock()
		time.Sleep(5 * time.Millisecond)
	}
}

// stop stops node id with SIGTERM (a graceful stop: it hands its
// leaderships off, then leaves) and returns how long it took.
func (h *harness) stop(id string) time.Duration {
	h.t.Helper()
	p := h.nodes[id]
	h.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.cmd = nil
	h.mu.Unlock()
	start := time.Now()
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(time.Minute):
		h.t.Fatalf("%s did not stop within a minute of SIGTERM", id)
	}
	return time.Since(start)
}

// watchHandOff watches the buckets of refs that node id leads as it stops;
// the returned function ends the watch and lists those whose leadership
// moved to another node while id still held its node lease — handed off
// by a live node, not taken from a gone one.
func (h *harness) watchHandOff(id string, refs []cluster.BucketRef) func() []string {
	led := h.leads(id, refs)
	var (
		mu     sync.Mutex
		handed []string
	)
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			for _, ref := range refs {
				b, err := h.store.Bucket(ctx, ref)
				if err != nil || b.Leader == id || b.Leader == "" || !slices.Contains(led, ref.String()) {
					continue
				}
				// The lease is read after the bucket: it was held when
				// the bucket already had its new leader.
				if l, err := h.store.Lease(ctx, "node/"+id); err == nil && l.Holder == id {
					mu.Lock()
					if !slices.Contains(handed, ref.String()) {
						handed = append(handed, ref.String())
					}
					mu.Unlock()
				}
			}
			cancel()
		}
	}()
	return func() []string {
		close(done)
		<-stopped
		mu.Lock()
		defer mu.Unlock()
		return handed
	}
}

// leads lists the buckets of refs that node id leads.
func (h *harness) leads(id string, refs []cluster.BucketRef) []string {
	var out []string
	for _, ref := range refs {
		if h.bucket(ref).Leader == id {
			out = append(out, ref.String())
		}
	}
	return out
}

// longestGapLocked is the longest time between two acknowledgements.
func (e *rollingErrors) longestGapLocked() time.Duration {
	ts := slices.Clone(e.ackTimes)
	slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
	var gap time.Duration
	for i := 1; i < len(ts); i++ {
		gap = max(gap, ts[i].Sub(ts[i-1]))
	}
	return gap
}
