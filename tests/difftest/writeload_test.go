package difftest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lakestream/lakestream/tables"
)

// The corpus under write load: writers keep appending to a table no corpus
// query reads (noise) while the corpus runs, and a prober keeps checking
// that each write is visible whole or not at all. Every query must stay
// exact: a scan plans against committed offsets, so concurrent appends,
// segment growth and group commits must not leak into other tables or
// tear a write.
//
// The tiering issue can reuse this as is: start the tierer next to
// startWriteLoad (or in its place) and run the corpus with runCorpus; the
// data set, the reference and the comparer do not change.

const (
	noiseWriters  = 2
	noiseRowsEach = 300 // rows per write, spread over the 3 buckets
)

// noiseRun tells runs of the test apart (-count=N reuses the fixture).
var noiseRun atomic.Int64

type writeLoad struct {
	tbl    *tables.Table
	run    int64
	nextID atomic.Int64

	writes, rows atomic.Int64
	first        chan struct{} // closed after the first write
	firstOnce    sync.Once

	probes, torn atomic.Int64
	tornSample   atomic.Value // string: the first torn write seen

	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     struct {
		sync.Mutex
		errs []error
	}
}

// fail records an error; it also releases a test waiting for the first
// write, which may never come.
func (l *writeLoad) fail(err error) {
	l.mu.Lock()
	l.mu.errs = append(l.mu.errs, err)
	l.mu.Unlock()
	l.firstOnce.Do(func() { close(l.first) })
}

func TestCorpusUnderWriteLoad(t *testing.T) {
	f := getFixture(t)
	corpus := loadCorpus(t)
	ctx := context.Background()
	const ddl = `CREATE TABLE IF NOT EXISTS noise (id BIGINT NOT NULL, w BIGINT NOT NULL, k INTEGER, payload VARCHAR)
		WITH ('bucket.num'='3', 'bucket.key'='id')`
	if err := execDDL(ctx, f.store, ddl); err != nil {
		t.Fatal(err)
	}
	tbl, err := f.store.Get(ctx, "", "noise")
	if err != nil {
		t.Fatal(err)
	}
	before := noiseCounts(ctx, t, f)

	load := startWriteLoad(ctx, f, tbl)
	<-load.first // the first write landed, or a writer failed
	atStart := load.writes.Load()
	start := time.Now()
	passed := runCorpus(ctx, t, f, corpus, false)
	during := load.writes.Load() - atStart
	load.stop()

	for _, err := range load.mu.errs { // the load has stopped: no lock needed
		t.Errorf("write load: %v", err)
	}
	if during == 0 {
		t.Error("no write landed while the corpus ran: the test shows nothing")
	}
	if n := load.torn.Load(); n > 0 {
		t.Errorf("%d of %d probes saw a write partly: %v", n, load.probes.Load(), load.tornSample.Load())
	}
	after := noiseCounts(ctx, t, f)
	if want := [2]int64{before[0] + load.rows.Load(), before[1] + load.writes.Load()}; after != want {
		t.Errorf("noise after the load: %d rows in %d writes, want %d in %d", after[0], after[1], want[0], want[1])
	}
	t.Logf("corpus under write load: %d of %d queries pass (%s); %d writes (%d rows) during the corpus, %d in all; %d atomicity probes",
		passed, len(corpus)-countBugs(corpus), time.Since(start).Round(time.Millisecond),
		during, during*noiseRowsEach, load.writes.Load(), load.probes.Load())
}

func countBugs(corpus []corpusQuery) int {
	n := 0
	for _, q := range corpus {
		if q.bug != "" {
			n++
		}
	}
	return n
}

// noiseCounts is (rows, distinct writes) of the noise table.
func noiseCounts(ctx context.Context, t *testing.T, f *fixture) [2]int64 {
	t.Helper()
	r, err := lakeQuery(ctx, f.eng, "SELECT count(*), count(DISTINCT w) FROM noise", nil)
	if err != nil {
		t.Fatal(err)
	}
	var out [2]int64
	for i := range out {
		if _, err := fmt.Sscan(r.rows[0][i].text, &out[i]); err != nil {
			t.Fatalf("noise count %q: %v", r.rows[0][i].text, err)
		}
	}
	return out
}

// startWriteLoad starts the writers and the prober; stop ends them.
func startWriteLoad(ctx context.Context, f *fixture, tbl *tables.Table) *writeLoad {
	ctx, cancel := context.WithCancel(ctx)
	l := &writeLoad{tbl: tbl, run: noiseRun.Add(1), first: make(chan struct{}), cancel: cancel}
	l.nextID.Store(l.run << 40)
	for w := range noiseWriters {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			l.write(ctx, int64(w))
		}()
	}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		l.probe(ctx, f)
	}()
	return l
}

// stop cancels the load and waits for its goroutines.
func (l *writeLoad) stop() {
	l.cancel()
	l.wg.Wait()
	l.firstOnce.Do(func() { close(l.first) })
}

// write appends writes of noiseRowsEach rows until ctx ends. Every row of
// one write carries the same w.
func (l *writeLoad) write(ctx context.Context, writer int64) {
	for i := int64(0); ctx.Err() == nil; i++ {
		w := l.run<<32 | writer<<24 | i
		rows := make([][]any, noiseRowsEach)
		for k := range rows {
			rows[k] = []any{l.nextID.Add(1), w, int32(k), fmt.Sprintf("run %d writer %d write %d row %d", l.run, writer, i, k)}
		}
		rec, err := buildRecord(l.tbl.Schema(), rows)
		if err != nil {
			l.fail(err)
			return
		}
		// Not ctx: a write that has started completes, so that the
		// final count knows exactly what landed.
		if err := conformAndWrite(context.Background(), l.tbl, []arrow.RecordBatch{rec}); err != nil {
			l.fail(err)
			return
		}
		l.writes.Add(1)
		l.rows.Add(noiseRowsEach)
		l.firstOnce.Do(func() { close(l.first) })
	}
}

// probe checks, until ctx ends, that no write is visible in part.
func (l *writeLoad) probe(ctx context.Context, f *fixture) {
	q := fmt.Sprintf("SELECT w, count(*) AS n FROM noise GROUP BY w HAVING count(*) <> %d", noiseRowsEach)
	for ctx.Err() == nil {
		r, err := lakeQuery(ctx, f.eng, q, nil)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			l.fail(fmt.Errorf("probe: %w", err))
			return
		}
		l.probes.Add(1)
		if len(r.rows) > 0 {
			l.torn.Add(1)
			l.tornSample.CompareAndSwap(nil, rowText(r.rows[0]))
		}
	}
}
