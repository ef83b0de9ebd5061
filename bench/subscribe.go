package bench

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// The subscription workload: end-to-end latency from an ingest call
// returning (the rows are durable and acknowledged) to a subscriber of
// SELECT id, _bucket, _offset FROM changes(t, 'latest') decoding them.
//
// Writers send batches of Config.SubscribeBatchRows rows on a fixed
// schedule (Config.Rate rows/s), up to Config.Writers calls in flight, each
// call on its own connection; the subscriber has a connection of its own.
// Each row's latency is its receipt time minus its batch's ack time; the
// receipt can precede the ack (the commit notification races the reply),
// which counts as 0. Latencies go into an HDR histogram (µs, 3 significant
// digits).
//
// The Kafka baseline (kafka.go) is measured the same way, run by run beside
// Lakestream at each measured rate: producers send each batch's rows with
// ProduceSync (acks=all), which returns once all are acknowledged; a direct
// consumer of the topic notes each row as PollFetches returns it. The
// Fluss baseline (fluss_driver.go) runs the same schedule in its Java
// driver and hands back the raw times, from which latencies computes the
// same percentiles.
//
// A rate is sustainable when the writers kept the schedule (the rows went
// out at >= 95% of the rate) and the subscriber had every row within 1 s of
// the last ack. The highest sustainable rate is searched by doubling from
// Config.Rate (each step half of Config.Duration), then one step halfway
// to the first failing rate; then Config.Runs runs measure both the target
// and that rate for Config.Duration each.

const (
	subscribeDrain   = time.Second      // a sustainable rate delivers every row within this of the last ack
	subscribeTimeout = 30 * time.Second // beyond this, rows never received are an error
	minAchieved      = 0.95
)

// rateResult is one measurement at one rate.
type rateResult struct {
	rate      int
	rows      int64
	achieved  float64 // rows/s acknowledged over the schedule
	drain     time.Duration
	beforeAck int64 // rows received before their ack
	// Percentiles in ms of ack → receipt (the workload's figure) and of
	// call start → receipt (the ingest latency included).
	ack, call percentiles
}

type percentiles struct{ p50, p99, p999, max float64 }

// latencySeries are the percentile figures, as (metric, pick).
var latencySeries = []struct {
	metric string
	pick   func(*rateResult) float64
}{
	{"p50", func(r *rateResult) float64 { return r.ack.p50 }},
	{"p99", func(r *rateResult) float64 { return r.ack.p99 }},
	{"p99.9", func(r *rateResult) float64 { return r.ack.p999 }},
	{"max", func(r *rateResult) float64 { return r.ack.max }},
	{"p50 from call", func(r *rateResult) float64 { return r.call.p50 }},
	{"p99 from call", func(r *rateResult) float64 { return r.call.p99 }},
	{"p99.9 from call", func(r *rateResult) float64 { return r.call.p999 }},
}

func (r *rateResult) sustainable() bool {
	return r.achieved >= minAchieved*float64(r.rate) && r.drain <= subscribeDrain
}

func runSubscribe(ctx context.Context, e *env) (*WorkloadReport, error) {
	cfg := e.cfg
	w := &WorkloadReport{Name: "subscribe", About: fmt.Sprintf(
		"end-to-end latency, ingest call returns → row decoded by a changes('t', 'latest') subscriber "+
			"(\"from call\": from the ingest call's start); %d-row batches, up to %d calls in flight",
		cfg.SubscribeBatchRows, cfg.Writers)}
	cls, closeCls, err := dialN(e.nodeAddr, cfg.Writers+1)
	if err != nil {
		return nil, err
	}
	defer closeCls()
	lake := &lakeFeed{e: e, cls: cls}
	feeds := []subscribeSide{lake}
	if k := e.base.kafka; k != nil {
		prods, closeProds, err := k.producers(cfg.Writers)
		if err != nil {
			return nil, err
		}
		defer closeProds()
		feeds = append(feeds, &kafkaFeed{k: k, prods: prods})
		w.About += fmt.Sprintf("; Kafka %s: ProduceSync (acks=all) returns → record polled by a direct consumer, same rows, rate and batches", k.version)
	}
	if fl := e.base.fluss; fl != nil {
		feeds = append(feeds, &flussFeed{f: fl})
		w.About += fmt.Sprintf("; Fluss %s: append + flush (acks=all) returns → row polled by a log scanner, same rows, rate and batches, timed in the Java driver", fl.version)
	}
	best, err := searchRate(ctx, e, lake, w)
	if err != nil {
		return nil, err
	}
	rates := []int{cfg.Rate}
	if best > cfg.Rate {
		rates = append(rates, best)
	}
	for i, rate := range rates {
		group := fmt.Sprintf("%s rows/s", human(float64(rate)))
		if i == 1 {
			group = fmt.Sprintf("highest sustainable, %s rows/s", human(float64(rate)))
		}
		if err := measureRuns(ctx, e, feeds, w, rate, group); err != nil {
			return nil, err
		}
	}
	for _, f := range w.Figures {
		if f.Group == human(float64(cfg.Rate))+" rows/s" && f.Metric == "p99" && f.System == "lakestream" {
			w.Notes = append(w.Notes, fmt.Sprintf("target (issue 5): p99 <= 10 ms at 10k rows/s; measured %s ms at %s rows/s", trim(f.Median), human(float64(cfg.Rate))))
		}
	}
	e.base.reportMissing(w, "kafka", "fluss")
	return w, nil
}

// latencyRatios are the percentiles compared with each baseline. p50 from
// the ack is often 0 (most rows arrive before their ack) on both sides:
// where the baseline's is 0 in every run there is no ratio, and a note
// says so.
var latencyRatios = []string{"p50", "p99", "p99.9", "p50 from call", "p99 from call"}

// measureRuns measures rate Config.Runs times on every feed, rotating
// which goes first, and adds their figures and the ratios of Lakestream's
// latencies to each baseline's.
func measureRuns(ctx context.Context, e *env, feeds []subscribeSide, w *WorkloadReport, rate int, group string) error {
	cfg := e.cfg
	series := make([][][]float64, len(feeds)) // feed, latencySeries, run
	achieved := make([][]float64, len(feeds))
	before, rows := make([]int64, len(feeds)), make([]int64, len(feeds))
	for fi := range feeds {
		series[fi] = make([][]float64, len(latencySeries))
	}
	for run := 1; run <= cfg.Runs; run++ {
		for j := range feeds {
			fi := (run - 1 + j) % len(feeds)
			f := feeds[fi]
			r, err := measureSide(ctx, e, f, rate, cfg.Duration, fmt.Sprintf("run %d/%d", run, cfg.Runs))
			if err != nil {
				return fmt.Errorf("%s: %w", f.system(), err)
			}
			if !r.sustainable() {
				w.Notes = append(w.Notes, fmt.Sprintf("%s run %d at %s rows/s was not sustained: %s rows/s achieved, last row %s after the last ack",
					f.system(), run, human(float64(rate)), human(r.achieved), r.drain.Round(time.Millisecond)))
			}
			for i, s := range latencySeries {
				series[fi][i] = append(series[fi][i], s.pick(r))
			}
			achieved[fi] = append(achieved[fi], r.achieved)
			before[fi], rows[fi] = before[fi]+r.beforeAck, rows[fi]+r.rows
		}
	}
	for fi, f := range feeds {
		for i, s := range latencySeries {
			w.figure(group, f.system(), s.metric, "ms", series[fi][i])
		}
		w.figure(group, f.system(), "achieved", "rows/s", achieved[fi])
		if before[fi] > 0 {
			w.Notes = append(w.Notes, fmt.Sprintf("%s at %s: %d of %d rows (%.0f%%) arrived before their ack (counted as 0 ms)",
				f.system(), group, before[fi], rows[fi], 100*float64(before[fi])/float64(rows[fi])))
		}
		e.prog.logf("subscribe %s %s: p50 %s ms, p99 %s ms, p99.9 %s ms (from the call's start: p99 %s ms)", f.system(), group,
			trim(summarize(series[fi][0]).Median), trim(summarize(series[fi][1]).Median), trim(summarize(series[fi][2]).Median),
			trim(summarize(series[fi][5]).Median))
	}
	for fi := 1; fi < len(feeds); fi++ {
		for i, s := range latencySeries {
			switch {
			case !slices.Contains(latencyRatios, s.metric):
			case len(ratios(series[0][i], series[fi][i])) == 0:
				w.Notes = append(w.Notes, fmt.Sprintf("at %s: no %s ratio to %s, whose %s is 0 ms in every run (lakestream: %s ms)",
					group, s.metric, feeds[fi].system(), s.metric, trim(summarize(series[0][i]).Median)))
			default:
				w.ratio(group, feeds[0].system(), feeds[fi].system(), s.metric, "lower is better; 1 = as fast as the baseline",
					series[0][i], series[fi][i], 0, 0)
			}
		}
	}
	return nil
}

// searchRate doubles the rate from cfg.Rate while it is sustainable, then
// tries halfway to the first failure; it returns the highest sustainable
// rate found (0 when even cfg.Rate is not) and reports it as a figure.
func searchRate(ctx context.Context, e *env, lake feed, w *WorkloadReport) (int, error) {
	cfg := e.cfg
	best, failed := 0, 0
	step := cfg.Duration / 2
	try := func(rate int) (bool, error) {
		r, err := measureRate(ctx, e, lake, rate, step, "search")
		if err != nil {
			return false, err
		}
		e.prog.logf("subscribe search: %s rows/s -> achieved %s rows/s, p99 %s ms, drain %s: sustainable=%v",
			human(float64(rate)), human(r.achieved), trim(r.ack.p99), r.drain.Round(time.Millisecond), r.sustainable())
		return r.sustainable(), nil
	}
	for rate := cfg.Rate; rate <= cfg.MaxRate; rate *= 2 {
		ok, err := try(rate)
		if err != nil {
			return 0, err
		}
		if !ok {
			failed = rate
			break
		}
		best = rate
	}
	if best > 0 && failed > 0 && failed-best >= 2*cfg.SubscribeBatchRows {
		mid := (best + failed) / 2
		ok, err := try(mid)
		if err != nil {
			return 0, err
		}
		if ok {
			best = mid
		}
	}
	if best == 0 {
		w.Notes = append(w.Notes, fmt.Sprintf("no sustainable rate: even %s rows/s was not", human(float64(cfg.Rate))))
		return 0, nil
	}
	if failed == 0 {
		w.Notes = append(w.Notes, fmt.Sprintf("the search stopped at the cap, %s rows/s (MaxRate): the highest sustainable rate may be higher", human(float64(cfg.MaxRate))))
	}
	w.figure("rate search", "lakestream", "highest sustainable", "rows/s", []float64{float64(best)})
	return best, nil
}

// measureRate writes at rate for d into a fresh stream of f with a
// subscriber, and measures every row's latency.
func measureRate(ctx context.Context, e *env, f feed, rate int, d time.Duration, label string) (*rateResult, error) {
	per := e.cfg.SubscribeBatchRows
	nb := max(1, int(float64(rate)*d.Seconds())/per)
	e.prog.step(int64(nb*per), "rows", "subscribe %s %s: %s rows/s for %s", f.system(), label, human(float64(rate)), d)
	sub := newSubscriber(nb*per, per)
	stream, err := f.open(ctx, sub)
	if err != nil {
		return nil, err
	}
	defer sub.stop()
	// One batch before the clock: the stream is up once it arrives.
	if err := f.send(ctx, 0, stream, events(-int64(per), per)); err != nil {
		return nil, err
	}
	if err := sub.waitWarm(ctx); err != nil {
		return nil, err
	}
	times, err := writeAtRate(ctx, f, stream, rate, nb, per, sub.start, e.prog)
	if err != nil {
		return nil, err
	}
	if err := sub.wait(ctx, subscribeTimeout); err != nil {
		return nil, fmt.Errorf("%s at %d rows/s: %w", stream, rate, err)
	}
	sub.stop()
	r := &rateResult{rate: rate, rows: int64(nb * per), achieved: float64(nb*per) / times.schedule.Seconds()}
	r.drain = max(0, time.Duration(sub.last.Load())-times.lastAck)
	if err := r.latencies(sub.recv, times, per); err != nil {
		return nil, err
	}
	return r, f.drop(ctx, stream)
}

// latencies fills the percentiles from receipt, call and ack times (ns
// since the subscriber's start).
func (r *rateResult) latencies(recv []int64, t *writeTimes, per int) error {
	hAck := hdrhistogram.New(1, int64(time.Minute/time.Microsecond), 3)
	hCall := hdrhistogram.New(1, int64(time.Minute/time.Microsecond), 3)
	for id, at := range recv {
		k := id / per
		lat := at - t.acks[k].Load()
		if lat < 0 {
			r.beforeAck++
			lat = 0
		}
		if err := hAck.RecordValue(lat / int64(time.Microsecond)); err != nil {
			return fmt.Errorf("latency %s: %w", time.Duration(lat), err)
		}
		if err := hCall.RecordValue(max(0, at-t.calls[k].Load()) / int64(time.Microsecond)); err != nil {
			return fmt.Errorf("latency %s: %w", time.Duration(at-t.calls[k].Load()), err)
		}
	}
	pct := func(h *hdrhistogram.Histogram) percentiles {
		q := func(p float64) float64 { return float64(h.ValueAtQuantile(p)) / 1000 }
		return percentiles{q(50), q(99), q(99.9), float64(h.Max()) / 1000}
	}
	r.ack, r.call = pct(hAck), pct(hCall)
	return nil
}

// writeTimes are what writeAtRate measured, in ns since the start.
type writeTimes struct {
	calls, acks []atomic.Int64 // per batch: the call's start, its return
	lastAck     time.Duration
	schedule    time.Duration // first due time to the last call, plus one interval
}

// writeAtRate sends nb batches of per rows (ids 0..nb*per-1), batch k due
// at k·per/rate seconds after the first, on up to f.writers() calls in
// flight.
// When every client is busy the schedule slips, which the achieved rate
// shows.
func writeAtRate(ctx context.Context, f feed, stream string, rate, nb, per int, start time.Time, prog *progress) (*writeTimes, error) {
	t := &writeTimes{calls: make([]atomic.Int64, nb), acks: make([]atomic.Int64, nb)}
	interval := time.Duration(float64(per) / float64(rate) * float64(time.Second))
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	work := make(chan int)
	var wg sync.WaitGroup
	for wi := range f.writers() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range work {
				rec := events(int64(k*per), per)
				t.calls[k].Store(int64(time.Since(start)))
				err := f.send(ctx, wi, stream, rec)
				t.acks[k].Store(int64(time.Since(start)))
				rec.Release()
				if err != nil {
					cancel(err)
					return
				}
				prog.add(int64(per))
			}
		}()
	}
	first := time.Now()
	var lastSend time.Time
	for k := 0; k < nb && ctx.Err() == nil; k++ {
		time.Sleep(time.Until(first.Add(time.Duration(k) * interval))) // pacing, not synchronisation
		select {
		case work <- k:
			lastSend = time.Now()
		case <-ctx.Done():
		}
	}
	close(work)
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return nil, err
	}
	for i := range t.acks {
		t.lastAck = max(t.lastAck, time.Duration(t.acks[i].Load()))
	}
	t.schedule = lastSend.Sub(first) + interval
	return t, nil
}

// subscriber notes when each row of a subscription arrives; a feed's
// reader goroutine (run) calls note.
type subscriber struct {
	start  time.Time
	recv   []int64       // per id: ns since start; written by the reader only
	got    atomic.Int64  // rows of ids >= 0 received
	last   atomic.Int64  // ns since start of the latest receipt
	warm   chan struct{} // closed once every row of the warm-up batch arrived
	warmup int           // rows of the warm-up batch still to come; the reader's only
	done   chan struct{}
	err    error // set before done closes
	cancel context.CancelFunc
	once   sync.Once
}

// newSubscriber expects rows rows of ids 0..rows-1 after a warm-up batch
// of warmup rows with negative ids. The stream is up once the whole
// warm-up batch arrived, not its first row: a Kafka consumer starts its
// partitions one by one, and rows of a partition that starts late would
// otherwise count as latency.
func newSubscriber(rows, warmup int) *subscriber {
	return &subscriber{start: time.Now(), recv: make([]int64, rows), warmup: warmup, warm: make(chan struct{}), done: make(chan struct{})}
}

// run starts read, the subscription's one reader goroutine, which calls
// note for every delivery and returns when the stream ends or its context
// is cancelled (stop).
func (s *subscriber) run(ctx context.Context, read func(ctx context.Context) error) {
	sctx, cancel := context.WithCancel(ctx)
	s.cancel = cancel
	go func() {
		defer close(s.done)
		err := read(sctx)
		if err != nil && (sctx.Err() == nil || s.got.Load() < int64(len(s.recv))) {
			s.err = err
		}
	}()
}

// note records the arrival of rows ids now; negative ids are the warm-up
// batch's.
func (s *subscriber) note(ids []int64) error {
	now := int64(time.Since(s.start))
	var n int64
	for _, id := range ids {
		switch {
		case id < 0:
			if s.warmup--; s.warmup == 0 {
				close(s.warm)
			}
		case id >= int64(len(s.recv)):
			return fmt.Errorf("unexpected id %d", id)
		case s.recv[id] != 0:
			return fmt.Errorf("id %d received twice", id)
		default:
			s.recv[id] = max(1, now)
			n++
		}
	}
	if n > 0 {
		s.last.Store(now)
		s.got.Add(n)
	}
	return nil
}

// waitWarm waits for every row of the warm-up batch.
func (s *subscriber) waitWarm(ctx context.Context) error {
	select {
	case <-s.warm:
		return nil
	case <-s.done:
		return fmt.Errorf("subscription ended before the warm-up batch: %v", s.err)
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(subscribeTimeout):
		return fmt.Errorf("warm-up batch not received in %s", subscribeTimeout)
	}
}

// wait waits until every row has arrived, polling the count every
// millisecond (the reader goroutine stays free of signalling).
func (s *subscriber) wait(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	t := time.NewTicker(time.Millisecond)
	defer t.Stop()
	for s.got.Load() < int64(len(s.recv)) {
		select {
		case <-s.done:
			if s.got.Load() == int64(len(s.recv)) {
				return nil
			}
			return fmt.Errorf("subscription ended after %d of %d rows: %v", s.got.Load(), len(s.recv), s.err)
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d rows received in %s", s.got.Load(), len(s.recv), timeout)
		}
	}
	return nil
}

// stop ends the subscription and waits for the reader; recv is then
// stable.
func (s *subscriber) stop() {
	s.once.Do(func() {
		if s.cancel == nil { // never started
			return
		}
		s.cancel()
		<-s.done
	})
}
