package columnarlog

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/lakestream/lakestream/internal/vfs"
)

// repairModel is what a table log must hold: per bucket, the payload ids of
// the acknowledged batches, in offset order, and the ids of refused ones.
type repairModel struct {
	mu      sync.Mutex
	acked   [][]int64
	refused map[int64]bool
}

func newRepairModel(buckets int) *repairModel {
	return &repairModel{acked: make([][]int64, buckets), refused: map[int64]bool{}}
}

// record notes the outcome of a write of parts: acknowledged or refused.
func (m *repairModel) record(t testing.TB, parts [][]Batch, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for b, part := range parts {
		for _, p := range part {
			if err != nil {
				m.refused[payloadID(t, p)] = true
			} else {
				m.acked[b] = append(m.acked[b], payloadID(t, p))
			}
		}
	}
}

// check reads every bucket from its start and compares it with the model:
// the acknowledged batches, each once, in the order of their rounds, and
// nothing else. The order within a bucket is the order writes took the
// table lock; writes acknowledged concurrently may be recorded in another
// order, so with concurrent writers (sorted) compares the sets.
func (m *repairModel) check(t testing.TB, tl *TableLog, sorted bool) {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	for b := range m.acked {
		var got []int64
		for _, batch := range readAll(t, tl.Bucket(b), 0) {
			id := payloadID(t, batch)
			if m.refused[id] {
				t.Fatalf("bucket %d holds batch %d, whose write was refused", b, id)
			}
			got = append(got, id)
		}
		want := slices.Clone(m.acked[b])
		if sorted {
			slices.Sort(got)
			slices.Sort(want)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("bucket %d holds %v, acknowledged %v", b, got, want)
		}
	}
}

// randomParts is one write: 1 to 3 batches in some of the buckets, each
// with a payload id of its own (id*10 + its number).
func randomParts(t testing.TB, rng *rand.Rand, buckets int, id int64) [][]Batch {
	parts := make([][]Batch, buckets)
	n := int64(0)
	for n == 0 {
		for b := range parts {
			if rng.IntN(2) == 0 {
				continue
			}
			for range 1 + rng.IntN(3) {
				parts[b] = append(parts[b], payload(t, id*10+n, int32(1+rng.IntN(5)), 10+rng.IntN(400)))
				n++
			}
		}
	}
	return parts
}

// A full disk fails writes part way, leaving torn batches and whole
// batches of refused writes in the bucket files, and fsyncs fail now and
// then; once there is room, the next write repairs the table. Throughout,
// a read returns every acknowledged batch once and no refused one, and
// after a crash or a clean reopen too. Segments are small, so the disk
// also fills up during rolls.
func TestRepairAfterFailedWrites(t *testing.T) {
	for seed := uint64(1); seed <= 6; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			fs := vfs.NewMem()
			var room atomic.Int64
			room.Store(math.MaxInt64)
			fs.LimitSpace(&room)
			// While failSyncs is set, every third fsync fails.
			var failSyncs atomic.Bool
			var syncs atomic.Int64
			fs.InjectError(func(op vfs.Op, name string) error {
				if op == vfs.OpSync && failSyncs.Load() && syncs.Add(1)%3 == 0 {
					return errInjectedSync
				}
				return nil
			})
			const buckets = 3
			tl, err := OpenTable("/t", buckets, memOpts(fs))
			if err != nil {
				t.Fatal(err)
			}
			m := newRepairModel(buckets)
			failures := 0
			for i := int64(1); i <= 100; i++ {
				switch rng.IntN(10) {
				case 0:
					room.Store(rng.Int64N(800)) // full within a few writes
				case 1, 2:
					room.Store(math.MaxInt64)
				case 3:
					failSyncs.Store(!failSyncs.Load())
				}
				parts := randomParts(t, rng, buckets, i)
				_, err := tl.Append(parts)
				m.record(t, parts, err)
				if err != nil {
					failures++
					if tl.Err() == nil {
						t.Fatalf("write %d failed (%v), and Err is nil", i, err)
					}
				} else if err := tl.Err(); err != nil {
					t.Fatalf("write %d acknowledged, and Err is %v", i, err)
				}
				m.check(t, tl, false)
			}
			room.Store(math.MaxInt64)
			failSyncs.Store(false)
			parts := randomParts(t, rng, buckets, 1000)
			if _, err := tl.Append(parts); err != nil {
				t.Fatalf("write with room again: %v", err)
			}
			m.record(t, parts, nil)
			m.check(t, tl, false)
			if failures == 0 {
				t.Fatal("no write failed: the test tests nothing")
			}

			crashed := fs.CrashClone(vfs.CrashOptions{KeepUnsynced: seed%2 == 0, Rand: rng})
			tl2, err := OpenTable("/t", buckets, memOpts(crashed))
			if err != nil {
				t.Fatalf("open after a crash: %v", err)
			}
			m.check(t, tl2, false)
			if err := errors.Join(tl2.Close(), tl.Close()); err != nil {
				t.Fatal(err)
			}
			tl3, err := OpenTable("/t", buckets, memOpts(fs))
			if err != nil {
				t.Fatalf("open after a clean close: %v", err)
			}
			defer tl3.Close()
			m.check(t, tl3, false)
		})
	}
}

// The same with concurrent writers, and a reader following each bucket
// while writes fail and the table repairs itself: the reader sees each
// offset once, never a refused batch, and at the end exactly what a read
// from the start returns.
func TestRepairWithConcurrentWritersAndReaders(t *testing.T) {
	fs := vfs.NewMem()
	var room atomic.Int64
	room.Store(math.MaxInt64)
	fs.LimitSpace(&room)
	const buckets, writers, writes = 2, 4, 60
	tl, err := OpenTable("/t", buckets, memOpts(fs))
	if err != nil {
		t.Fatal(err)
	}
	m := newRepairModel(buckets)
	followed := make([][]int64, buckets)
	var followers sync.WaitGroup
	for b := range buckets {
		followers.Add(1)
		go func() {
			defer followers.Done()
			followed[b] = follow(t, tl.Bucket(b))
		}()
	}
	var wg sync.WaitGroup
	var failed atomic.Int64
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 3))
			for i := range writes {
				if rng.IntN(8) == 0 {
					room.Store(rng.Int64N(600))
				} else if rng.IntN(4) == 0 {
					room.Store(math.MaxInt64)
				}
				parts := randomParts(t, rng, buckets, int64(w*1000+i+1))
				_, err := tl.Append(parts)
				if err != nil {
					failed.Add(1)
					if !errors.Is(err, syscall.ENOSPC) {
						t.Errorf("write failed with %v, want ENOSPC", err)
					}
				}
				m.record(t, parts, err)
			}
		}()
	}
	wg.Wait()
	room.Store(math.MaxInt64)
	last := randomParts(t, rand.New(rand.NewPCG(9, 9)), buckets, 99999)
	if _, err := tl.Append(last); err != nil {
		t.Fatalf("write with room again: %v", err)
	}
	m.record(t, last, nil)
	m.check(t, tl, true)
	if failed.Load() == 0 {
		t.Fatal("no write failed: the test tests nothing")
	}
	ids := make([][]int64, buckets)
	for b := range buckets {
		all := readAll(t, tl.Bucket(b), 0)
		if n, end := all[len(all)-1].NextOffset(), tl.CommittedEnds()[b]; n != end {
			t.Fatalf("bucket %d: batches end at %d, committed end %d", b, n, end)
		}
		for _, batch := range all {
			ids[b] = append(ids[b], payloadID(t, batch))
		}
	}
	if err := tl.Close(); err != nil {
		t.Fatal(err)
	}
	followers.Wait()
	for b := range buckets {
		if !slices.Equal(followed[b], ids[b]) {
			t.Fatalf("bucket %d: the reader that followed it saw %v, a read from the start %v", b, followed[b], ids[b])
		}
	}
}

// follow reads l from offset 0 as batches are committed, until the log is
// closed, and returns the ids of the batches it read, failing t on a gap, a
// repeated offset or an error.
func follow(t testing.TB, l *Log) []int64 {
	r, err := l.NewReader(0)
	if err != nil {
		t.Error(err)
		return nil
	}
	defer r.Close()
	var ids []int64
	next := int64(0)
	for {
		wake := l.Notify()
		bs, _, err := r.Next(nil, 1<<16)
		if err != nil {
			if !errors.Is(err, ErrClosed) {
				t.Errorf("follow %s: %v", l.Dir(), err)
			}
			return ids
		}
		for _, b := range bs {
			if b.BaseOffset() != next {
				t.Errorf("follow %s: batch at %d after offset %d", l.Dir(), b.BaseOffset(), next)
				return ids
			}
			next = b.NextOffset()
			ids = append(ids, payloadID(t, b))
		}
		if len(bs) > 0 {
			continue
		}
		select {
		case <-wake:
		case <-l.Done():
			if r.next >= l.Committed() {
				return ids
			}
		}
	}
}

// A write that fails part way, with an earlier write still waiting for its
// commit round: the round commits the earlier write, never the parts of the
// failed one that reached a bucket.
func TestRoundNeverCommitsHalfAWrite(t *testing.T) {
	fs := vfs.NewMem()
	tl, err := OpenTable("/t", 2, memOpts(fs))
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	// a is written, not yet committed: its writer waits for a round.
	a := [][]Batch{{payload(t, 10, 2, 50)}, nil}
	seq, _, err := tl.write(a)
	if err != nil {
		t.Fatal(err)
	}
	// b's part in bucket 0 is written; the disk is full for its part in
	// bucket 1.
	var room atomic.Int64
	room.Store(int64(len(payload(t, 20, 1, 50))))
	fs.LimitSpace(&room)
	b := [][]Batch{{payload(t, 20, 1, 50)}, {payload(t, 21, 1, 50)}}
	if _, err := tl.Append(b); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("write on a full disk: %v", err)
	}
	fs.LimitSpace(nil)
	err = tl.commit.wait(seq, tl.commitRound)
	tl.inflight.Add(-1)
	if err != nil {
		t.Fatalf("the round of the write before: %v", err)
	}
	if ends := tl.CommittedEnds(); !slices.Equal(ends, []int64{2, 0}) {
		t.Fatalf("committed ends %v, want [2 0]: the round committed part of the failed write", ends)
	}
	m := newRepairModel(2)
	m.record(t, a, nil)
	m.record(t, b, errors.New("refused"))
	m.check(t, tl, false)
	// The next write repairs the table, cutting b's part in bucket 0.
	c := [][]Batch{{payload(t, 30, 1, 50)}, {payload(t, 31, 1, 50)}}
	if _, err := tl.Append(c); err != nil {
		t.Fatal(err)
	}
	m.record(t, c, nil)
	m.check(t, tl, false)
}

// An idempotent writer's write refused by a failed round is cut by the
// repair, and so is its sequence number: Writers gives the last one
// acknowledged again, and the writer's retry then stores it.
func TestRepairForgetsRefusedWriterSequences(t *testing.T) {
	fs := vfs.NewMem()
	tl, err := OpenTable("/t", 1, Options{FS: fs}) // one segment: the only fsyncs are the rounds'
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	mk := func(seq int32) [][]Batch {
		b, err := NewBatch(Header{WriterID: 42, WriterSeq: seq, RecordCount: 2}, nil, nil, make([]byte, 3000))
		if err != nil {
			t.Fatal(err)
		}
		return [][]Batch{{b}}
	}
	for seq := int32(0); seq < 3; seq++ {
		if _, err := tl.Append(mk(seq)); err != nil {
			t.Fatal(err)
		}
	}
	// seq 3 is written, and its round fails.
	fs.InjectError(vfs.FailNth(vfs.OpSync, 1, errInjectedSync))
	if _, err := tl.Append(mk(3)); !errors.Is(err, errInjectedSync) {
		t.Fatalf("append with a failing fsync: %v", err)
	}
	fs.InjectError(nil)
	if err := tl.Repair(); err != nil {
		t.Fatal(err)
	}
	if st := tl.Writers()[42]; st.Seq != 2 {
		t.Fatalf("writer 42 after the repair: seq %d, want 2", st.Seq)
	}
	res, err := tl.Append(mk(3))
	if err != nil || res[0][0].BaseOffset != 6 {
		t.Fatalf("retry of the refused seq 3: %+v %v, want a new batch at offset 6", res, err)
	}
	if st := tl.Writers()[42]; st.Seq != 3 {
		t.Fatalf("writer 42 after the retry: seq %d, want 3", st.Seq)
	}
}

// A roll that fails half way (the new segment created, its directory entry
// not synced, and not removed either) leaves the log as it was: the repair
// removes the stray segment, writes go on in the segment that was active,
// and the log reopens whole, after a crash too.
func TestRepairAfterFailedRoll(t *testing.T) {
	fs := vfs.NewMem()
	tl, err := OpenTable("/t", 1, memOpts(fs)) // 4 KiB segments
	if err != nil {
		t.Fatal(err)
	}
	m := newRepairModel(1)
	write := func(id int64, size int) error {
		parts := [][]Batch{{payload(t, id, 1, size)}}
		_, err := tl.Append(parts)
		m.record(t, parts, err)
		return err
	}
	for id := int64(1); id <= 2; id++ {
		if err := write(id, 1500); err != nil {
			t.Fatal(err)
		}
	}
	// The third batch rolls the segment: its directory sync fails, and so
	// does the removal of the segment it created, at offset 2.
	errDir := errors.New("injected directory failure")
	var failing atomic.Bool
	failing.Store(true)
	fs.InjectError(func(op vfs.Op, name string) error {
		if failing.Load() && (op == vfs.OpSyncDir || op == vfs.OpRemove) {
			return errDir
		}
		return nil
	})
	if err := write(3, 1500); !errors.Is(err, errDir) {
		t.Fatalf("write during a failing roll: %v", err)
	}
	failing.Store(false)
	// Smaller batches fit in the segment that stayed active, past offset 2.
	for id := int64(4); id <= 8; id++ {
		if err := write(id, 100); err != nil {
			t.Fatalf("write %d after the failed roll: %v", id, err)
		}
	}
	m.check(t, tl, false)
	crashed := fs.CrashClone(vfs.CrashOptions{})
	if err := tl.Close(); err != nil {
		t.Fatal(err)
	}
	for _, fs := range []*vfs.MemFS{fs, crashed} {
		tl, err := OpenTable("/t", 1, memOpts(fs))
		if err != nil {
			t.Fatalf("reopen: %v", err)
		}
		m.check(t, tl, false)
		if err := tl.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
