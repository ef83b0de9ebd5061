package tables_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lakestream/lakestream/columnarlog"
	"github.com/lakestream/lakestream/internal/vfs"
	"github.com/lakestream/lakestream/tables"
)

// writeAs writes recs (which the caller keeps) as one call of writer w.
func writeAs(tbl *tables.Table, w tables.Writer, recs ...arrow.RecordBatch) (n int64, dup bool, err error) {
	ctx := context.Background()
	a := tbl.NewAppender()
	defer a.Release()
	a.SetWriter(w)
	for _, r := range recs {
		if err := a.Add(ctx, r); err != nil {
			return a.Written(), a.Duplicate(), err
		}
	}
	err = a.Flush(ctx)
	return a.Written(), a.Duplicate(), err
}

// mustWriteAs writes a call and checks whether it was a duplicate.
func mustWriteAs(t *testing.T, tbl *tables.Table, w tables.Writer, wantDup bool, recs ...arrow.RecordBatch) {
	t.Helper()
	var rows int64
	for _, r := range recs {
		rows += r.NumRows()
	}
	n, dup, err := writeAs(tbl, w, recs...)
	if err != nil || dup != wantDup || n != rows {
		t.Fatalf("call %+v: %d rows, duplicate %t, %v; want %d rows, duplicate %t", w, n, dup, err, rows, wantDup)
	}
}

func wantSequenceError(t *testing.T, tbl *tables.Table, w tables.Writer, expected string, recs ...arrow.RecordBatch) {
	t.Helper()
	before := slices.Clone(tbl.Log().CommittedEnds())
	_, _, err := writeAs(tbl, w, recs...)
	if !errors.Is(err, tables.ErrWriterSequence) || !strings.Contains(err.Error(), expected) {
		t.Fatalf("call %+v: %v, want ErrWriterSequence saying %q", w, err, expected)
	}
	if after := tbl.Log().CommittedEnds(); !slices.Equal(before, after) {
		t.Fatalf("refused call %+v moved the log from %v to %v", w, before, after)
	}
}

// A retried call is stored once, however the table splits it over its
// buckets: a keyless table sends a call's records round-robin, so the
// retry lands elsewhere than the call it repeats. A sequence that is
// neither the next nor the last is refused; a restart keeps the state.
func TestIdempotentCallStoredOnce(t *testing.T) {
	e := newEnv(t, vfs.NewMem())
	e.mustExec(`CREATE TABLE ev ` + eventsCols + ` WITH ('bucket.num' = '4')`)
	tbl := e.table("ev")
	r0a, r0b, r1, r2 := events(t, e.mem, 0, 10), events(t, e.mem, 10, 5), events(t, e.mem, 15, 7), events(t, e.mem, 22, 3)
	defer func() {
		for _, r := range []arrow.RecordBatch{r0a, r0b, r1, r2} {
			r.Release()
		}
	}()
	const id = 77
	mustWriteAs(t, tbl, tables.Writer{ID: id, Seq: 0}, false, r0a, r0b)
	ends := slices.Clone(tbl.Log().CommittedEnds())
	mustWriteAs(t, tbl, tables.Writer{ID: id, Seq: 0}, true, r0a, r0b)
	mustWriteAs(t, tbl, tables.Writer{ID: id, Seq: 0}, true, r0a, r0b)
	if got := tbl.Log().CommittedEnds(); !slices.Equal(got, ends) {
		t.Fatalf("a duplicate moved the log from %v to %v", ends, got)
	}
	mustWriteAs(t, tbl, tables.Writer{ID: id, Seq: 1}, false, r1)
	mustWriteAs(t, tbl, tables.Writer{ID: id, Seq: 1}, true, r1)
	wantSequenceError(t, tbl, tables.Writer{ID: id, Seq: 3}, "expected 2 (the next call) or 1 (a retry", r2)
	wantSequenceError(t, tbl, tables.Writer{ID: id, Seq: 0}, "expected 2", r0a)
	// Another writer has a sequence of its own.
	mustWriteAs(t, tbl, tables.Writer{ID: id + 1, Seq: 5}, false, r2)

	want := sorted(expectRows(events(t, e.mem, 0, 25)))
	st, err := e.store.Table(context.Background(), "", "ev")
	if err != nil {
		t.Fatal(err)
	}
	_, got := scanPlan(t, st, nil)
	sameRows(t, "rows", sorted(got), want)

	e.reopen()
	tbl = e.table("ev")
	mustWriteAs(t, tbl, tables.Writer{ID: id, Seq: 1}, true, r1)
	mustWriteAs(t, tbl, tables.Writer{ID: id + 1, Seq: 5}, true, r2)
	mustWriteAs(t, tbl, tables.Writer{ID: id, Seq: 2}, false, r2)
	wantSequenceError(t, tbl, tables.Writer{ID: id, Seq: 4}, "expected 3", r2)
	want = sorted(append(want, expectRows(events(t, e.mem, 22, 3))...))
	st, err = e.store.Table(context.Background(), "", "ev")
	if err != nil {
		t.Fatal(err)
	}
	_, got = scanPlan(t, st, nil)
	sameRows(t, "rows after the restart", sorted(got), want)
}

// A call that stores nothing (no rows) still takes its sequence number. It
// is known in memory only: after a restart the writer's next call may skip
// ahead of what the log holds.
func TestIdempotentEmptyCall(t *testing.T) {
	e := newEnv(t, vfs.NewMem())
	e.mustExec(`CREATE TABLE ev ` + eventsCols)
	tbl := e.table("ev")
	r := events(t, e.mem, 0, 3)
	defer r.Release()
	mustWriteAs(t, tbl, tables.Writer{ID: 5, Seq: 0}, false, r)
	mustWriteAs(t, tbl, tables.Writer{ID: 5, Seq: 1}, false)
	mustWriteAs(t, tbl, tables.Writer{ID: 5, Seq: 1}, true)
	mustWriteAs(t, tbl, tables.Writer{ID: 5, Seq: 2}, false)
	e.reopen()
	tbl = e.table("ev")
	mustWriteAs(t, tbl, tables.Writer{ID: 5, Seq: 0}, true, r) // the log's last
	mustWriteAs(t, tbl, tables.Writer{ID: 5, Seq: 3}, false, r)
	wantSequenceError(t, tbl, tables.Writer{ID: 5, Seq: 5}, "expected 4", r)
}

// An idempotent call must fit one atomic write: one that would take
// several is refused, and nothing of it is stored.
func TestIdempotentCallTooLarge(t *testing.T) {
	e := newEnv(t, vfs.NewMem())
	e.limits = tables.Limits{MaxWriteBytes: 1 << 10}
	e.reopen()
	e.mustExec(`CREATE TABLE ev ` + eventsCols)
	tbl := e.table("ev")
	r := events(t, e.mem, 0, 100) // over 1 KiB of Arrow data
	defer r.Release()
	if _, _, err := writeAs(tbl, tables.Writer{ID: 1, Seq: 0}, r); !errors.Is(err, tables.ErrIdempotentTooLarge) {
		t.Fatalf("a call over MaxWriteBytes: %v, want ErrIdempotentTooLarge", err)
	}
	if ends := tbl.Log().CommittedEnds(); ends[0] != 0 {
		t.Fatalf("a refused call stored rows: ends %v", ends)
	}
	// Without a writer the same rows go in several writes.
	if n, err := tbl.Write(context.Background(), r); err != nil || n != 100 {
		t.Fatalf("write: %d, %v", n, err)
	}
}

// A writer idle for longer than the writer expiry is forgotten: its next
// call is taken whatever its sequence number.
func TestIdempotentWriterExpires(t *testing.T) {
	var mu sync.Mutex
	now := time.Unix(1_700_000_000, 0)
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return now
	}
	e := newEnvWith(t, vfs.NewMem(), columnarlog.Options{Now: clock, WriterExpiry: time.Hour})
	e.mustExec(`CREATE TABLE ev ` + eventsCols)
	tbl := e.table("ev")
	r := events(t, e.mem, 0, 3)
	defer r.Release()
	mustWriteAs(t, tbl, tables.Writer{ID: 5, Seq: 0}, false, r)
	wantSequenceError(t, tbl, tables.Writer{ID: 5, Seq: 7}, "expected 1", r)
	mu.Lock()
	now = now.Add(2 * time.Hour)
	mu.Unlock()
	mustWriteAs(t, tbl, tables.Writer{ID: 5, Seq: 7}, false, r)
	mustWriteAs(t, tbl, tables.Writer{ID: 5, Seq: 7}, true, r)
}

// Writers with different ids write concurrently, each call sent twice at
// once (the retry of a call whose reply was lost while it still runs):
// every call is stored once.
func TestIdempotentConcurrentWriters(t *testing.T) {
	e := newEnv(t, vfs.NewMem())
	e.mustExec(`CREATE TABLE ev ` + eventsCols + ` WITH ('bucket.num' = '3')`)
	tbl := e.table("ev")
	const writers, calls, rows = 4, 8, 5
	var wg sync.WaitGroup
	errs := make(chan error, writers*calls*2)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range calls {
				rec := events(nil, e.mem, (w*calls+c)*rows, rows)
				var dups sync.WaitGroup
				var stored, dup int
				var mu sync.Mutex
				for range 2 {
					dups.Add(1)
					go func() {
						defer dups.Done()
						n, d, err := writeAs(tbl, tables.Writer{ID: int64(w + 1), Seq: int32(c)}, rec)
						mu.Lock()
						defer mu.Unlock()
						switch {
						case err != nil || n != rows:
							errs <- fmt.Errorf("writer %d call %d: %d rows, %v", w+1, c, n, err)
						case d:
							dup++
						default:
							stored++
						}
					}()
				}
				dups.Wait()
				rec.Release()
				if stored != 1 || dup != 1 {
					errs <- fmt.Errorf("writer %d call %d: stored %d times, %d duplicates", w+1, c, stored, dup)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	st, err := e.store.Table(context.Background(), "", "ev")
	if err != nil {
		t.Fatal(err)
	}
	_, got := scanPlan(t, st, nil)
	sameRows(t, "rows", sorted(got), sorted(expectRows(events(t, e.mem, 0, writers*calls*rows))))
}

// A retried upsert of a primary-key table changes neither the log nor the
// key index: with a summing merge engine, applying it twice would show.
func TestIdempotentPKRetryChangesNothing(t *testing.T) {
	e := newEnv(t, vfs.NewMem())
	e.mustExec(`CREATE TABLE acc (id BIGINT, total BIGINT, PRIMARY KEY (id)) WITH ('bucket.num' = '2',
		'merge-engine' = 'aggregation', 'fields.total.agg' = 'sum')`)
	tbl := e.table("acc")
	r0 := record(t, e.mem, i64("id", false, 1, 2, 3), i64("total", true, 10, 20, 30))
	r1 := record(t, e.mem, i64("id", false, 1, 4), i64("total", true, 1, 40))
	defer r0.Release()
	defer r1.Release()
	const id = -9 // any non-zero id
	mustWriteAs(t, tbl, tables.Writer{ID: id, Seq: 0}, false, r0)
	mustWriteAs(t, tbl, tables.Writer{ID: id, Seq: 1}, false, r1)
	want := sorted([]string{"1|11", "2|20", "3|30", "4|40"})
	keys := func() arrow.RecordBatch { return record(t, e.mem, i64("id", false, 1, 2, 3, 4)) }
	check := func(what string, tbl *tables.Table, ends []int64) {
		t.Helper()
		sameRows(t, what+": rows", pkRows(t, e, "acc"), want)
		sameSeq(t, what+": lookup (the key index)", pkLookup(t, e, tbl, keys()), []string{"1|11", "2|20", "3|30", "4|40"})
		if got := tbl.Log().CommittedEnds(); !slices.Equal(got, ends) {
			t.Fatalf("%s: the log moved from %v to %v", what, ends, got)
		}
	}
	ends := slices.Clone(tbl.Log().CommittedEnds())
	check("stored", tbl, ends)
	mustWriteAs(t, tbl, tables.Writer{ID: id, Seq: 1}, true, r1)
	check("after a retry", tbl, ends)
	wantSequenceError(t, tbl, tables.Writer{ID: id, Seq: 0}, "expected 2", r0)
	check("after a refused call", tbl, ends)

	e.reopen()
	tbl = e.table("acc")
	mustWriteAs(t, tbl, tables.Writer{ID: id, Seq: 1}, true, r1)
	check("after a retry after a restart", tbl, ends)
	mustWriteAs(t, tbl, tables.Writer{ID: id, Seq: 2}, false, r1)
	want = sorted([]string{"1|12", "2|20", "3|30", "4|80"})
	sameRows(t, "the next call", pkRows(t, e, "acc"), want)
}

// An upsert that changes no row (a first_row table keeps the rows it has)
// stores nothing and still takes its sequence number.
func TestIdempotentPKNoChange(t *testing.T) {
	e := newEnv(t, vfs.NewMem())
	e.mustExec(`CREATE TABLE kv (id BIGINT, v VARCHAR, PRIMARY KEY (id)) WITH ('merge-engine' = 'first_row')`)
	tbl := e.table("kv")
	r := record(t, e.mem, i64("id", false, 1, 2), str("v", "a", "b"))
	defer r.Release()
	mustWriteAs(t, tbl, tables.Writer{ID: 3, Seq: 0}, false, r)
	ends := slices.Clone(tbl.Log().CommittedEnds())
	mustWriteAs(t, tbl, tables.Writer{ID: 3, Seq: 1}, false, r) // the same keys: no change
	if got := tbl.Log().CommittedEnds(); !slices.Equal(got, ends) {
		t.Fatalf("an upsert that changes nothing moved the log from %v to %v", ends, got)
	}
	mustWriteAs(t, tbl, tables.Writer{ID: 3, Seq: 1}, true, r)
	mustWriteAs(t, tbl, tables.Writer{ID: 3, Seq: 2}, false, r)
}

// The state survives a crash, with the writer's last call in sealed
// segments (whose writer snapshots carry it) and without a clean close: a retry of the last call
// acknowledged is still a retry, in every bucket's split of it.
func TestIdempotentStateSurvivesACrash(t *testing.T) {
	mem := vfs.NewMem()
	e := newEnvWith(t, mem, columnarlog.Options{})
	e.mustExec(`CREATE TABLE ev ` + eventsCols + ` WITH ('bucket.num' = '2', 'log.segment.bytes' = '1MiB', 'log.compression' = 'none')`)
	tbl := e.table("ev")
	var recs []arrow.RecordBatch
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	// Enough calls to roll segments of 1 MiB.
	const calls = 40
	for c := range calls {
		call := []arrow.RecordBatch{events(t, e.mem, c*3000, 1000), events(t, e.mem, c*3000+1000, 1000), events(t, e.mem, c*3000+2000, 1000)}
		recs = append(recs, call...)
		mustWriteAs(t, tbl, tables.Writer{ID: 11, Seq: int32(c)}, false, call...)
	}
	// Then writes without a writer roll the segments again, so that the
	// writer's last batch is in a sealed segment: its state comes from a
	// snapshot.
	if _, err := tbl.Write(context.Background(), recs[:60]...); err != nil {
		t.Fatal(err)
	}
	crashed := mem.CrashClone(vfs.CrashOptions{})
	e.close()
	e.fs = crashed
	e.open()
	tbl = e.table("ev")
	last := recs[len(recs)-3:]
	mustWriteAs(t, tbl, tables.Writer{ID: 11, Seq: calls - 1}, true, last...)
	mustWriteAs(t, tbl, tables.Writer{ID: 11, Seq: calls - 1}, true, last...)
	mustWriteAs(t, tbl, tables.Writer{ID: 11, Seq: calls}, false, recs[0])
	wantSequenceError(t, tbl, tables.Writer{ID: 11, Seq: calls - 1}, "expected 41", recs[0])
	var segments int
	for b := range 2 {
		names, err := crashed.List(e.dir + "/1/" + fmt.Sprint(b))
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			if strings.HasSuffix(n, ".writers") {
				segments++
			}
		}
	}
	if segments == 0 {
		names, _ := crashed.List(e.dir + "/1/0")
		t.Fatalf("no segment rolled: the test does not reach the writer snapshots (%v)", names)
	}
}

// Random calls of a few writers — the next call, retries, gaps, stale
// numbers — with restarts in between, against a model of the rules of
// docs/flight.md: each call is stored, acknowledged as a retry or refused
// as the model says, and the table holds the rows of the stored calls once.
func TestIdempotentModel(t *testing.T) {
	for seed := range uint64(4) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 7))
			e := newEnv(t, vfs.NewMem())
			e.mustExec(`CREATE TABLE ev ` + eventsCols + ` WITH ('bucket.num' = '3')`)
			tbl := e.table("ev")
			type writerModel struct {
				known     bool
				last      int32
				recovered bool
			}
			model := map[int64]*writerModel{1: {}, 2: {}, 3: {}}
			var want []string
			check := func(what string) {
				t.Helper()
				st, err := e.store.Table(context.Background(), "", "ev")
				if err != nil {
					t.Fatal(err)
				}
				_, got := scanPlan(t, st, nil)
				sameRows(t, what, sorted(got), sorted(want))
			}
			for op := range 120 {
				if r.IntN(15) == 0 {
					e.reopen()
					tbl = e.table("ev")
					for _, m := range model {
						m.recovered = m.known
					}
					check(fmt.Sprintf("op %d: after a restart", op))
					continue
				}
				id := int64(1 + r.IntN(3))
				m := model[id]
				seq := int32(r.IntN(2))
				if m.known {
					seq = m.last + int32(r.IntN(4)) - 1 // a stale number, a retry, the next, a gap
				}
				if seq < 0 {
					seq = 0
				}
				rows := events(t, e.mem, int(id*100_000)+int(seq)*10, 1+int(seq)%7)
				n, dup, err := writeAs(tbl, tables.Writer{ID: id, Seq: seq}, rows)
				wantDup := m.known && seq == m.last
				wantStored := !m.known || seq == m.last+1 || (m.recovered && seq > m.last)
				switch {
				case wantDup:
					if err != nil || !dup || n != rows.NumRows() {
						t.Fatalf("op %d: writer %d retries %d: %d rows, duplicate %t, %v", op, id, seq, n, dup, err)
					}
				case wantStored:
					if err != nil || dup || n != rows.NumRows() {
						t.Fatalf("op %d: writer %d call %d (last %d): %d rows, duplicate %t, %v", op, id, seq, m.last, n, dup, err)
					}
					want = append(want, rowStrings(rows)...)
					m.known, m.last, m.recovered = true, seq, false
				default:
					if !errors.Is(err, tables.ErrWriterSequence) {
						t.Fatalf("op %d: writer %d call %d after %d: %v, want ErrWriterSequence", op, id, seq, m.last, err)
					}
				}
				rows.Release()
			}
			check("at the end")
		})
	}
}

// A call whose fsync failed is not stored, and its retry stores it: the
// log still holds the failed call's batches until its repair cuts them,
// and a retry that read the writer from the log before that repair was
// taken for a duplicate of a call the repair then cut, and acknowledged
// without its rows (the cluster fault rounds' failing disk found it).
func TestIdempotentRetryAfterFailedSync(t *testing.T) {
	fs := vfs.NewMem()
	e := newEnv(t, fs)
	e.mustExec(`CREATE TABLE ev ` + eventsCols)
	tbl := e.table("ev")
	r0, r1 := events(t, e.mem, 0, 10), events(t, e.mem, 10, 5)
	defer r0.Release()
	defer r1.Release()
	const id = 9
	fs.InjectError(func(op vfs.Op, _ string) error {
		if op == vfs.OpSync {
			return errors.New("input/output error")
		}
		return nil
	})
	if _, _, err := writeAs(tbl, tables.Writer{ID: id, Seq: 0}, r0); err == nil {
		t.Fatal("a call whose fsync failed was acknowledged")
	}
	fs.InjectError(nil)
	mustWriteAs(t, tbl, tables.Writer{ID: id, Seq: 0}, false, r0)
	mustWriteAs(t, tbl, tables.Writer{ID: id, Seq: 1}, false, r1)
	st, err := e.store.Table(context.Background(), "", "ev")
	if err != nil {
		t.Fatal(err)
	}
	_, got := scanPlan(t, st, nil)
	sameRows(t, "rows", sorted(got), sorted(expectRows(events(t, e.mem, 0, 15))))
}
