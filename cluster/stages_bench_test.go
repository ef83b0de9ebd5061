package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/lakestream/lakestream/columnarlog"
)

// BenchmarkReplicationStages is where a write's time goes on its way to
// being visible, on three real logs on disk (fsync on every commit) whose
// replicas talk over gRPC on loopback, a leader and two followers
// (min.insync.replicas 2, all three in sync), with the default fetch
// settings. One writer appends a 64-byte batch every 10 ms; watchers note
// when each node's durable end and visible end (its high watermark) first
// cover it. It reports the median and p99, from the append's start, of:
// the leader's durable end (its fsync), the first and the second follower
// durable (fetch answer, append, fsync), the leader's high watermark (the
// acknowledgement: the second follower's next fetch told the leader), and
// the first and the last follower to see the row (docs/benchmarks.md).
func BenchmarkReplicationStages(b *testing.B) {
	ids := []string{"a", "b", "c"}
	logs := map[string]*columnarlog.TableLog{}
	reps := map[string]*Replicas{}
	addrs := map[string]string{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, id := range ids {
		tl, err := columnarlog.OpenTable(filepath.Join(b.TempDir(), id), 1, columnarlog.Options{Replicated: true})
		if err != nil {
			b.Fatal(err)
		}
		tr := NewGRPCTransport()
		r, err := NewReplicas(Config{NodeID: id, Logger: slog.New(slog.DiscardHandler)}, tr, func(BucketRef) ISRChange { return nil })
		if err != nil {
			b.Fatal(err)
		}
		if err := r.Add(ref0, BucketLog(tl, 0)); err != nil {
			b.Fatal(err)
		}
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		srv := grpc.NewServer()
		Register(srv, r, nil)
		go srv.Serve(l)
		b.Cleanup(func() { srv.Stop(); r.Close(); tr.Close(); tl.Close() })
		logs[id], reps[id], addrs[id] = tl, r, l.Addr().String()
	}
	a := Assignment{Ref: ref0, Replicas: ids, Leader: "a", LeaderAddr: addrs["a"], Epoch: 1, ISR: ids, MinISR: 2, Version: 1}
	for _, id := range ids {
		if err := reps[id].Apply(a); err != nil {
			b.Fatal(err)
		}
	}
	const writes = 200
	type mark struct {
		name string
		at   func(end int64) time.Duration
	}
	var marks []mark
	start := time.Now()
	watch := func(name string, value func() int64, notify func() <-chan struct{}) {
		w := &watcher{}
		go w.run(ctx, start, value, notify)
		marks = append(marks, mark{name, w.reached})
	}
	leader := logs["a"].Bucket(0)
	watch("leader-durable", leader.Durable, leader.NotifyDurable)
	for _, id := range ids[1:] {
		l := logs[id].Bucket(0)
		watch(id+"-durable", l.Durable, l.NotifyDurable)
		watch(id+"-visible", l.Committed, l.Notify)
	}
	lat := map[string][]time.Duration{}
	b.ResetTimer()
	for range b.N {
		tick := time.NewTicker(10 * time.Millisecond)
		for i := range writes {
			<-tick.C
			if err := reps["a"].BeforeWrite(ref0); err != nil {
				b.Fatal(err)
			}
			batch, err := columnarlog.NewBatch(columnarlog.Header{SchemaID: 1, RecordCount: 4}, nil, nil, make([]byte, 64))
			if err != nil {
				b.Fatal(err)
			}
			began := time.Since(start)
			res, err := logs["a"].Append([][]columnarlog.Batch{{batch}})
			if err != nil {
				b.Fatal(err)
			}
			end := res[0][0].BaseOffset + 4
			wctx, cancelWait := context.WithTimeout(ctx, 10*time.Second)
			err = reps["a"].WaitAcked(wctx, ref0, end)
			cancelWait()
			if err != nil {
				b.Fatalf("write %d: %v", i, err)
			}
			acked := time.Since(start) - began
			// Every watcher reaches end: the followers' visible ends once
			// they learn the watermark, within the fetch wait at most.
			at := map[string]time.Duration{"ack": acked}
			for _, m := range marks {
				at[m.name] = m.at(end) - began
			}
			ds := []time.Duration{at["b-durable"], at["c-durable"]}
			vs := []time.Duration{at["b-visible"], at["c-visible"]}
			lat["1-leader-durable"] = append(lat["1-leader-durable"], at["leader-durable"])
			lat["2-follower1-durable"] = append(lat["2-follower1-durable"], min(ds[0], ds[1]))
			lat["3-follower2-durable"] = append(lat["3-follower2-durable"], max(ds[0], ds[1]))
			lat["4-acked"] = append(lat["4-acked"], acked)
			lat["5-follower1-visible"] = append(lat["5-follower1-visible"], min(vs[0], vs[1]))
			lat["6-follower2-visible"] = append(lat["6-follower2-visible"], max(vs[0], vs[1]))
		}
		tick.Stop()
	}
	b.StopTimer()
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range lat {
			if !yield(k) {
				return
			}
		}
	}) {
		l := lat[name]
		slices.Sort(l)
		b.ReportMetric(float64(l[len(l)/2].Microseconds())/1000, fmt.Sprintf("%s-p50-ms", name[2:]))
		b.ReportMetric(float64(l[len(l)*99/100].Microseconds())/1000, fmt.Sprintf("%s-p99-ms", name[2:]))
	}
}

// watcher notes when a node's end (durable or visible) first reaches each
// value, waking on the end's notification channel.
type watcher struct {
	mu   sync.Mutex
	seen []struct {
		end int64
		at  time.Duration
	}
	moved chan struct{}
}

func (w *watcher) run(ctx context.Context, start time.Time, value func() int64, notify func() <-chan struct{}) {
	var last int64
	for {
		ch := notify()
		if v := value(); v > last {
			w.mu.Lock()
			w.seen = append(w.seen, struct {
				end int64
				at  time.Duration
			}{v, time.Since(start)})
			if w.moved != nil {
				close(w.moved)
				w.moved = nil
			}
			w.mu.Unlock()
			last = v
		}
		select {
		case <-ctx.Done():
			return
		case <-ch:
		}
	}
}

// reached waits until the end reached end and returns when it first did.
func (w *watcher) reached(end int64) time.Duration {
	for {
		w.mu.Lock()
		for _, r := range w.seen {
			if r.end >= end {
				w.mu.Unlock()
				return r.at
			}
		}
		if w.moved == nil {
			w.moved = make(chan struct{})
		}
		moved := w.moved
		w.mu.Unlock()
		<-moved
	}
}
