package columnarlog

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"path"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lakestream/lakestream/internal/vfs"
)

// replica is one replica of a replicated table, on a filesystem of its own,
// as on a node of its own.
type replica struct {
	fs   *vfs.MemFS
	opts Options
	n    int
	tl   *TableLog
}

const replicaDir = "/t"

func newReplica(t testing.TB, buckets int, clock *fakeClock) *replica {
	t.Helper()
	r := &replica{fs: vfs.NewMem(), n: buckets}
	r.opts = Options{SegmentBytes: 1 << 10, IndexIntervalBytes: 256, Replicated: true, Now: clock.now}
	r.open(t)
	return r
}

func (r *replica) open(t testing.TB) {
	t.Helper()
	opts := r.opts
	opts.FS = r.fs
	tl, err := OpenTable(replicaDir, r.n, opts)
	if err != nil {
		t.Fatalf("open replica: %v", err)
	}
	r.tl = tl
}

// crash abandons the open table and reopens it on what a crash leaves.
func (r *replica) crash(t testing.TB, co vfs.CrashOptions) {
	t.Helper()
	r.fs = r.fs.CrashClone(co)
	r.open(t)
}

// appendRows appends one write of a batch of rows rows and size bytes to
// bucket b of the leader.
func appendRows(t testing.TB, leader *TableLog, b int, id int64, rows int32, size int) {
	t.Helper()
	parts := make([][]Batch, leader.Buckets())
	parts[b] = []Batch{payload(t, id, rows, size)}
	if _, err := leader.Append(parts); err != nil {
		t.Fatalf("append %d: %v", id, err)
	}
}

// fetch copies to the follower the batches of bucket b the leader has
// durable above the follower's end, as a follower's fetch loop does, and
// returns how many it copied.
func fetch(t testing.TB, leader, follower *TableLog, b int) (int, error) {
	t.Helper()
	from := follower.DurableEnds()[b]
	rd, err := leader.Bucket(b).NewReplicaReader(from)
	if err != nil {
		return 0, err
	}
	defer rd.Close()
	rd.chunk = 4 << 10 // not 1 MiB a call: logs of a few KiB
	n := 0
	for {
		batches, _, err := rd.Next(nil, 1<<10)
		if err != nil {
			return n, err
		}
		if len(batches) == 0 {
			return n, nil
		}
		if err := follower.AppendReplica(b, batches); err != nil {
			return n, err
		}
		n += len(batches)
	}
}

// reconcile finds where the follower's bucket b diverges from the leader's
// from their epoch histories (Divergence) and truncates it there.
func reconcile(t testing.TB, leader, follower *TableLog, b int) error {
	t.Helper()
	to, err := follower.Bucket(b).Divergence(func(epoch int32) (int32, int64, error) {
		e, end := leader.Bucket(b).EndForEpoch(epoch)
		return e, end, nil
	})
	if err != nil {
		return err
	}
	if err := follower.Truncate(b, to); err != nil {
		return fmt.Errorf("%w (leader epochs %v, end %d; follower epochs %v, end %d)", err,
			leader.Bucket(b).EpochHistory(), leader.Bucket(b).Durable(), follower.Bucket(b).EpochHistory(), follower.Bucket(b).Durable())
	}
	return nil
}

// logBytes concatenates the segment files of bucket b, in offset order.
func logBytes(t testing.TB, fs vfs.FS, b int) []byte {
	t.Helper()
	dir := path.Join(replicaDir, strconv.Itoa(b))
	names, err := fs.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	var bases []int64
	for _, n := range names {
		if base, ok := parseSegmentName(n); ok {
			bases = append(bases, base)
		}
	}
	slices.Sort(bases)
	var out []byte
	for _, base := range bases {
		data, err := readFile(fs, path.Join(dir, segmentName(base, logSuffix)))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, data...)
	}
	return out
}

// replicaBatches reads bucket b of a replica with a replica reader from
// offset 0 up to offset to.
func replicaBatches(t testing.TB, l *Log, to int64) []Batch {
	t.Helper()
	rd, err := l.NewReplicaReader(l.Start())
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	rd.chunk = 4 << 10
	var out []Batch
	for {
		bs, _, err := rd.Next(nil, 1<<12)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range bs {
			if b.NextOffset() > to {
				return out
			}
			out = append(out, b)
		}
		if len(bs) == 0 {
			return out
		}
	}
}

// checkEpochsAgree checks that a log's epoch history is what its batch
// headers say, but for a last entry with no batch.
func checkEpochsAgree(t testing.TB, l *Log) {
	t.Helper()
	l.mu.Lock()
	derived, err := l.epochsFromHeadersLocked()
	h, end := slices.Clone(l.mu.epochs), l.mu.next
	l.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	if n := len(h); n > 0 && h[n-1].Start == end {
		h = h[:n-1]
	}
	if !slices.Equal(h, derived) {
		t.Fatalf("%s: epoch history %v, the batch headers say %v", l.dir, h, derived)
	}
}

// A follower that copies the leader's batches with AppendReplica holds the
// same bytes at the same offsets, segment files included, and the same
// epoch history.
func TestReplicaHoldsTheLeadersBytes(t *testing.T) {
	clock := newClock(recoveryEpoch)
	leader, follower := newReplica(t, 2, clock), newReplica(t, 2, clock)
	if err := leader.tl.Bucket(0).BecomeLeader(1); err != nil {
		t.Fatal(err)
	}
	for i := range 40 {
		clock.add(time.Second)
		appendRows(t, leader.tl, i%2, int64(i), int32(i%5+1), 50+i*7)
		if i == 20 {
			if err := leader.tl.Bucket(0).BecomeLeader(3); err != nil {
				t.Fatal(err)
			}
		}
		if i%7 == 0 {
			for b := range 2 {
				if _, err := fetch(t, leader.tl, follower.tl, b); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	for b := range 2 {
		if _, err := fetch(t, leader.tl, follower.tl, b); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(logBytes(t, leader.fs, b), logBytes(t, follower.fs, b)) {
			t.Fatalf("bucket %d: the follower's segments differ from the leader's", b)
		}
		ls, fs := leader.tl.Bucket(b).Stats(), follower.tl.Bucket(b).Stats()
		if ls.Segments < 3 || ls.Segments != fs.Segments || ls.Next != fs.Next {
			t.Fatalf("bucket %d: leader %+v, follower %+v", b, ls, fs)
		}
		lh, fh := leader.tl.Bucket(b).EpochHistory(), follower.tl.Bucket(b).EpochHistory()
		if !slices.Equal(lh, fh) {
			t.Fatalf("bucket %d: leader epochs %v, follower %v", b, lh, fh)
		}
		checkEpochsAgree(t, follower.tl.Bucket(b))
	}
	if got := leader.tl.Bucket(0).EpochHistory(); len(got) != 2 || got[0] != (EpochEntry{1, 0}) || got[1].Epoch != 3 {
		t.Fatalf("bucket 0 epochs %v", got)
	}
	// A batch the follower holds, or one of an older epoch, is refused
	// and changes nothing.
	rd, err := leader.tl.Bucket(0).NewReplicaReader(0)
	if err != nil {
		t.Fatal(err)
	}
	first, _, err := rd.Next(nil, 1)
	rd.Close()
	if err != nil {
		t.Fatal(err)
	}
	if err := follower.tl.AppendReplica(0, first); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("a batch the follower holds: %v", err)
	}
	old := slices.Clone(first[0])
	binaryPutBase(old, follower.tl.DurableEnds()[0])
	if err := follower.tl.AppendReplica(0, []Batch{old}); !errors.Is(err, ErrFencedEpoch) {
		t.Fatalf("a batch of epoch 1 after epoch 3: %v", err)
	}
	if err := follower.tl.Err(); err != nil {
		t.Fatalf("a refused batch made the follower refuse writes: %v", err)
	}
}

// binaryPutBase restamps a batch's base offset, keeping its epoch and
// timestamp, as only a test does.
func binaryPutBase(b Batch, base int64) { b.stamp(base, b.CommitTimestamp(), b.LeaderEpoch()) }

func TestEndForEpoch(t *testing.T) {
	clock := newClock(recoveryEpoch)
	r := newReplica(t, 1, clock)
	l := r.tl.Bucket(0)
	// Epoch 1 holds [0, 10), 3 holds [10, 25), 4 holds [25, 40).
	for _, step := range []struct {
		epoch int32
		rows  []int32
	}{{1, []int32{4, 6}}, {3, []int32{5, 5, 5}}, {4, []int32{15}}} {
		if err := l.BecomeLeader(step.epoch); err != nil {
			t.Fatal(err)
		}
		for _, n := range step.rows {
			appendRows(t, r.tl, 0, int64(n), n, 20)
		}
	}
	for _, c := range []struct {
		epoch     int32
		wantEpoch int32
		wantEnd   int64
	}{
		{0, -1, -1}, // below the first epoch
		{1, 1, 10},
		{2, 1, 10}, // no epoch 2: the one below it
		{3, 3, 25},
		{4, 4, 40}, // the latest ends at the log's end
		{9, 4, 40},
	} {
		if e, end := l.EndForEpoch(c.epoch); e != c.wantEpoch || end != c.wantEnd {
			t.Errorf("EndForEpoch(%d) = (%d, %d), want (%d, %d)", c.epoch, e, end, c.wantEpoch, c.wantEnd)
		}
	}
	if err := l.BecomeLeader(3); !errors.Is(err, ErrFencedEpoch) {
		t.Fatalf("become leader of an older epoch: %v", err)
	}
	if err := l.BecomeLeader(4); err != nil {
		t.Fatalf("become leader of the current epoch again: %v", err)
	}
	// An epoch with no batch is replaced by the next one at the same start.
	for _, e := range []int32{5, 6} {
		if err := l.BecomeLeader(e); err != nil {
			t.Fatal(err)
		}
	}
	want := []EpochEntry{{1, 0}, {3, 10}, {4, 25}, {6, 40}}
	if got := l.EpochHistory(); !slices.Equal(got, want) || l.LeaderEpoch() != 6 {
		t.Fatalf("epochs %v (leader epoch %d), want %v", got, l.LeaderEpoch(), want)
	}
	if e, end := l.EndForEpoch(5); e != 4 || end != 40 {
		t.Fatalf("EndForEpoch(5) = (%d, %d), want (4, 40)", e, end)
	}
	// The history survives a reopen, and a rebuild from the headers when
	// its file is lost (which forgets the epoch with no batch yet).
	if err := r.tl.Close(); err != nil {
		t.Fatal(err)
	}
	r.open(t)
	if got := r.tl.Bucket(0).EpochHistory(); !slices.Equal(got, want) || r.tl.Bucket(0).LeaderEpoch() != 6 {
		t.Fatalf("after reopen: epochs %v, leader epoch %d", got, r.tl.Bucket(0).LeaderEpoch())
	}
	r.tl.Close()
	if err := r.fs.Remove(path.Join(replicaDir, "0", epochsFileName)); err != nil {
		t.Fatal(err)
	}
	r.open(t)
	defer r.tl.Close()
	if got := r.tl.Bucket(0).EpochHistory(); !slices.Equal(got, want[:3]) {
		t.Fatalf("rebuilt: epochs %v, want %v", got, want[:3])
	}
}

// The epoch history and high-watermark files, byte for byte
// (docs/format/log.md).
func TestReplicaFilesPinned(t *testing.T) {
	got := hex.EncodeToString(encodeEpochs(4, []EpochEntry{{1, 0}, {3, 0x10}}))
	const want = "04000000" + "02000000" + "01000000" + "0000000000000000" + "03000000" + "1000000000000000" + "75a26650"
	if got != want {
		t.Fatalf("leader-epochs bytes:\n got %s\nwant %s", got, want)
	}
	if leader, e, err := decodeEpochs(encodeEpochs(4, []EpochEntry{{1, 0}, {3, 0x10}})); err != nil || len(e) != 2 || leader != 4 {
		t.Fatalf("decode: %d %v %v", leader, e, err)
	}
	for _, bad := range [][]EpochEntry{{{3, 0}, {3, 5}}, {{3, 5}, {4, 5}}, {{1, -1}}} {
		if _, _, err := decodeEpochs(encodeEpochs(0, bad)); !errors.Is(err, ErrCorrupt) {
			t.Errorf("history %v decodes: %v", bad, err)
		}
	}
	got = hex.EncodeToString(encodeHighWatermarks([]int64{5, 0x100}))
	const wantHW = "02000000" + "0500000000000000" + "0001000000000000" + "9934498e"
	if got != wantHW {
		t.Fatalf("high-watermarks bytes:\n got %s\nwant %s", got, wantHW)
	}
}

// Readers see rows only below the high watermark, and Notify fires when
// it moves; a replica reader reads up to the durable end.
func TestHighWatermarkBoundsReaders(t *testing.T) {
	clock := newClock(recoveryEpoch)
	r := newReplica(t, 2, clock)
	l := r.tl.Bucket(0)
	for i := range 3 {
		appendRows(t, r.tl, 0, int64(i), 2, 30)
	}
	if got := r.tl.CommittedEnds(); !slices.Equal(got, []int64{0, 0}) {
		t.Fatalf("committed ends %v before any high watermark", got)
	}
	if got := r.tl.DurableEnds(); !slices.Equal(got, []int64{6, 0}) {
		t.Fatalf("durable ends %v", got)
	}
	if got := readAll(t, l, 0); len(got) != 0 {
		t.Fatalf("a reader sees %d batches above the high watermark", len(got))
	}
	if got := replicaBatches(t, l, 6); len(got) != 3 {
		t.Fatalf("a replica reader sees %d batches, want 3", len(got))
	}
	if _, err := l.NewReader(2); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("a reader from above the high watermark: %v", err)
	}
	wake := l.Notify()
	r.tl.SetHighWatermark(0, 4)
	select {
	case <-wake:
	default:
		t.Fatal("Notify did not fire when the high watermark moved")
	}
	if got := readAll(t, l, 0); len(got) != 2 || r.tl.CommittedEnds()[0] != 4 || l.Committed() != 4 {
		t.Fatalf("high watermark 4: reader sees %d batches, committed ends %v", len(got), r.tl.CommittedEnds())
	}
	// Inside a batch, it stops where the batch starts.
	r.tl.SetHighWatermark(0, 5)
	if got := l.Committed(); got != 4 {
		t.Fatalf("high watermark 5, inside the batch [4, 6): committed %d, want 4", got)
	}
	// It never moves back, and stops at the durable end.
	wake = l.Notify()
	r.tl.SetHighWatermark(0, 2)
	r.tl.SetHighWatermark(0, 100)
	if got := l.Committed(); got != 6 {
		t.Fatalf("high watermark %d, want the durable end 6", got)
	}
	<-wake
	wake = l.Notify()
	r.tl.SetHighWatermark(0, 6)
	select {
	case <-wake:
		t.Fatal("Notify fired with no move")
	default:
	}
	// The checkpoint keeps it across a clean close; a crash brings back
	// the last checkpoint, and with none, 0.
	if err := r.tl.CheckpointHighWatermarks(); err != nil {
		t.Fatal(err)
	}
	appendRows(t, r.tl, 1, 9, 5, 30)
	r.tl.SetHighWatermark(1, 5)
	r.crash(t, vfs.CrashOptions{})
	if got := r.tl.CommittedEnds(); !slices.Equal(got, []int64{6, 0}) {
		t.Fatalf("after a crash: committed ends %v, want the checkpoint [6 0]", got)
	}
	r.tl.SetHighWatermark(1, 5)
	if err := r.tl.Close(); err != nil {
		t.Fatal(err)
	}
	r.open(t)
	if got := r.tl.CommittedEnds(); !slices.Equal(got, []int64{6, 5}) {
		t.Fatalf("after a clean close: committed ends %v, want [6 5]", got)
	}
	r.tl.Close()
	if err := r.fs.Remove(path.Join(replicaDir, hwFileName)); err != nil {
		t.Fatal(err)
	}
	r.open(t)
	defer r.tl.Close()
	if got := r.tl.CommittedEnds(); !slices.Equal(got, []int64{0, 0}) {
		t.Fatalf("no checkpoint: committed ends %v", got)
	}
}

// Truncate cuts only at batch boundaries, at or above the high watermark;
// a replica reader past the cut ends with ErrTruncated, one below it reads
// on into what replaces the cut batches.
func TestTruncate(t *testing.T) {
	clock := newClock(recoveryEpoch)
	r := newReplica(t, 1, clock)
	defer r.tl.Close()
	l := r.tl.Bucket(0)
	for i := range 10 {
		appendRows(t, r.tl, 0, int64(i), 3, 200) // 3 rows a batch, segments of 4 batches
	}
	r.tl.SetHighWatermark(0, 9)
	for _, c := range []struct {
		to   int64
		want string
	}{{8, "below the high watermark"}, {10, "inside the batch"}, {31, "the log holds"}} {
		if err := r.tl.Truncate(0, c.to); !errors.Is(err, ErrOffsetOutOfRange) || !bytes.Contains([]byte(err.Error()), []byte(c.want)) {
			t.Errorf("truncate to %d: %v, want %q", c.to, err, c.want)
		}
	}
	below, err := l.NewReplicaReader(9)
	if err != nil {
		t.Fatal(err)
	}
	defer below.Close()
	if bs, _, err := below.Next(nil, 1); err != nil || len(bs) != 1 {
		t.Fatalf("read at 9: %d batches, %v", len(bs), err)
	}
	above, err := l.NewReplicaReader(21)
	if err != nil {
		t.Fatal(err)
	}
	defer above.Close()
	if err := r.tl.Truncate(0, 15); err != nil {
		t.Fatal(err)
	}
	if st := l.Stats(); st.Next != 15 || st.Durable != 15 || st.Committed != 9 || r.tl.DurableEnds()[0] != 15 {
		t.Fatalf("after truncate to 15: %+v, durable ends %v", st, r.tl.DurableEnds())
	}
	if _, _, err := above.Next(nil, 1<<10); !errors.Is(err, ErrTruncated) {
		t.Fatalf("a reader past the cut: %v", err)
	}
	if _, _, err := above.Next(nil, 1<<10); !errors.Is(err, ErrTruncated) {
		t.Fatalf("a reader past the cut, again: %v", err)
	}
	appendRows(t, r.tl, 0, 100, 3, 200)
	var got []int64
	for {
		bs, _, err := below.Next(nil, 1<<10)
		if err != nil {
			t.Fatal(err)
		}
		if len(bs) == 0 {
			break
		}
		for _, b := range bs {
			got = append(got, payloadID(t, b))
		}
	}
	if !slices.Equal(got, []int64{4, 100}) {
		t.Fatalf("a reader below the cut reads %v, want [4 100]", got)
	}
	// The cut is durable: recovery agrees.
	r.crash(t, vfs.CrashOptions{})
	if st := r.tl.Bucket(0).Stats(); st.Next != 18 {
		t.Fatalf("after a crash: %+v", st)
	}
}

// A follower holding batches of epoch 1 that the new leader, of epoch 2,
// never had finds the divergence from the epoch histories, truncates it,
// and then holds the leader's bytes.
func TestDivergentFollowerTailIsTruncated(t *testing.T) {
	clock := newClock(recoveryEpoch)
	a, b := newReplica(t, 1, clock), newReplica(t, 1, clock)
	if err := a.tl.Bucket(0).BecomeLeader(1); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		appendRows(t, a.tl, 0, int64(i), 2, 150)
	}
	if _, err := fetch(t, a.tl, b.tl, 0); err != nil {
		t.Fatal(err)
	}
	a.tl.SetHighWatermark(0, 8)
	b.tl.SetHighWatermark(0, 8)
	for i := range 6 { // b never gets these
		appendRows(t, a.tl, 0, int64(10+i), 3, 150)
	}
	// a fails; b leads epoch 2.
	if err := b.tl.Bucket(0).BecomeLeader(2); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		appendRows(t, b.tl, 0, int64(20+i), 1, 90)
	}
	a.crash(t, vfs.CrashOptions{})
	if e, end := b.tl.Bucket(0).EndForEpoch(1); e != 1 || end != 8 {
		t.Fatalf("leader: EndForEpoch(1) = (%d, %d), want (1, 8)", e, end)
	}
	if err := reconcile(t, b.tl, a.tl, 0); err != nil {
		t.Fatal(err)
	}
	if got := a.tl.Bucket(0).Durable(); got != 8 {
		t.Fatalf("follower truncated to %d, want 8", got)
	}
	if _, err := fetch(t, b.tl, a.tl, 0); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(logBytes(t, a.fs, 0), logBytes(t, b.fs, 0)) {
		t.Fatal("after catching up, the follower's segments differ from the leader's")
	}
	want := []EpochEntry{{1, 0}, {2, 8}}
	if ah, bh := a.tl.Bucket(0).EpochHistory(), b.tl.Bucket(0).EpochHistory(); !slices.Equal(ah, want) || !slices.Equal(bh, want) {
		t.Fatalf("epochs: follower %v, leader %v, want %v", ah, bh, want)
	}
	checkEpochsAgree(t, a.tl.Bucket(0))
	// A follower refuses to Append: it holds a newer leader's batches.
	parts := [][]Batch{{payload(t, 99, 1, 10)}}
	if _, err := a.tl.Append(parts); !errors.Is(err, ErrFencedEpoch) {
		t.Fatalf("append on a follower: %v", err)
	}
}

// A crash at any filesystem operation of AppendReplica, Truncate or
// BecomeLeader leaves a follower that recovers to a consistent log (its
// epoch history agrees with its batch headers, it ends at its commit
// record, it holds a prefix of the leader's bytes) from which it catches
// up with the leader byte for byte.
func TestReplicaCrashAtEveryStep(t *testing.T) {
	type pair struct{ leader, follower *replica }
	for _, c := range []struct {
		name  string
		setup func(t *testing.T) pair
		op    func(t *testing.T, p pair) error
	}{
		{"truncate", func(t *testing.T) pair {
			p := divergedPair(t)
			return pair{leader: p.follower, follower: p.leader} // the old leader follows
		}, func(t *testing.T, p pair) error {
			return reconcile(t, p.leader.tl, p.follower.tl, 0)
		}},
		{"append-replica", func(t *testing.T) pair {
			p := divergedPair(t)
			if err := reconcile(t, p.follower.tl, p.leader.tl, 0); err != nil {
				t.Fatal(err)
			}
			return pair{leader: p.follower, follower: p.leader}
		}, func(t *testing.T, p pair) error {
			_, err := fetch(t, p.leader.tl, p.follower.tl, 0) // a new epoch, segment rolls
			return err
		}},
		{"become-leader", func(t *testing.T) pair {
			p := divergedPair(t)
			if err := reconcile(t, p.follower.tl, p.leader.tl, 0); err != nil {
				t.Fatal(err)
			}
			if _, err := fetch(t, p.follower.tl, p.leader.tl, 0); err != nil {
				t.Fatal(err)
			}
			return pair{leader: p.follower, follower: p.leader}
		}, func(t *testing.T, p pair) error {
			return p.follower.tl.Bucket(0).BecomeLeader(5)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			// Count the operations, then crash before each in turn. (A
			// commit round syncs in parallel: counters are atomic, and the
			// order of the parallel syncs may vary.)
			p := c.setup(t)
			var ops atomic.Int64
			p.follower.fs.InjectError(func(vfs.Op, string) error { ops.Add(1); return nil })
			if err := c.op(t, p); err != nil {
				t.Fatal(err)
			}
			p.follower.fs.InjectError(nil)
			for k := int64(1); k <= ops.Load(); k++ {
				for _, keep := range []bool{false, true} {
					p := c.setup(t)
					var crashed atomic.Pointer[vfs.MemFS]
					var n atomic.Int64
					fs := p.follower.fs
					fs.InjectError(func(vfs.Op, string) error {
						if n.Add(1) == k {
							co := vfs.CrashOptions{}
							if keep {
								co = vfs.CrashOptions{KeepUnsynced: true, Rand: rand.New(rand.NewPCG(uint64(k), 7))}
							}
							crashed.Store(fs.CrashClone(co))
						}
						return nil
					})
					if err := c.op(t, p); err != nil {
						t.Fatal(err)
					}
					fs.InjectError(nil)
					if crashed.Load() == nil {
						t.Fatalf("the operation did fewer than %d filesystem operations", k)
					}
					p.follower.fs = crashed.Load()
					p.follower.open(t)
					checkRecoveredFollower(t, fmt.Sprintf("crash before op %d (keep unsynced %t)", k, keep), p.leader, p.follower)
				}
			}
		})
	}
}

// divergedPair returns a leader of epoch 1 and a follower of epoch 2 that
// was its follower: the leader's log ends with batches of epoch 1 that the
// follower never had, the follower's with batches of epoch 2.
func divergedPair(t *testing.T) struct{ leader, follower *replica } {
	clock := newClock(recoveryEpoch)
	a, b := newReplica(t, 1, clock), newReplica(t, 1, clock)
	if err := a.tl.Bucket(0).BecomeLeader(1); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		clock.add(time.Second)
		appendRows(t, a.tl, 0, int64(i), 2, 150)
	}
	if _, err := fetch(t, a.tl, b.tl, 0); err != nil {
		t.Fatal(err)
	}
	a.tl.SetHighWatermark(0, 8)
	b.tl.SetHighWatermark(0, 8)
	for i := range 6 {
		clock.add(time.Second)
		appendRows(t, a.tl, 0, int64(10+i), 3, 150)
	}
	if err := b.tl.Bucket(0).BecomeLeader(2); err != nil {
		t.Fatal(err)
	}
	for i := range 9 {
		clock.add(time.Second)
		appendRows(t, b.tl, 0, int64(20+i), 1, 90)
	}
	return struct{ leader, follower *replica }{a, b}
}

// checkRecoveredFollower checks a follower reopened after a crash, then
// has it catch up with the leader.
func checkRecoveredFollower(t *testing.T, what string, leader, follower *replica) {
	t.Helper()
	l := follower.tl.Bucket(0)
	checkEpochsAgree(t, l)
	if st := l.Stats(); st.Next != follower.tl.DurableEnds()[0] || st.Durable != st.Next || st.Committed > st.Durable {
		t.Fatalf("%s: %+v, durable ends %v", what, st, follower.tl.DurableEnds())
	}
	if err := reconcile(t, leader.tl, follower.tl, 0); err != nil {
		t.Fatalf("%s: reconcile: %v", what, err)
	}
	if _, err := fetch(t, leader.tl, follower.tl, 0); err != nil {
		t.Fatalf("%s: fetch: %v", what, err)
	}
	if !bytes.Equal(logBytes(t, leader.fs, 0), logBytes(t, follower.fs, 0)) {
		t.Fatalf("%s: the follower's segments differ from the leader's after catching up", what)
	}
	if lh, fh := leader.tl.Bucket(0).EpochHistory(), l.EpochHistory(); !slices.Equal(lh, fh[:min(len(fh), len(lh))]) || len(fh) > len(lh)+1 {
		t.Fatalf("%s: epochs: leader %v, follower %v", what, lh, fh)
	}
	checkEpochsAgree(t, l)
}

// replModel drives three replicas of a two-bucket table through random
// appends on the leader, follower fetches, leader changes, crashes and
// checkpoints, as a cluster's replication would, and keeps what must hold:
// the batches below the highest high watermark set so far (hw), which
// every replica must hold, byte for byte, whatever happens after.
type replModel struct {
	t     *testing.T
	rng   *rand.Rand
	clock *fakeClock
	reps  []*replica
	// leader is the index of the leading replica, epoch its epoch.
	leader int
	epoch  int32
	// matched[r][b] is the end of follower r's bucket b as of its last
	// fetch in this epoch, -1 before it has fetched; reconciled[r][b] says
	// that it has cut its divergent tail since the epoch began.
	matched    [][]int64
	reconciled [][]bool
	hw         []int64   // per bucket
	committed  [][]Batch // per bucket: the batches below hw
	writes     int64
}

const (
	modelReplicas = 3
	modelBuckets  = 2
)

func TestReplicationModel(t *testing.T) {
	for seed := uint64(1); seed <= 40; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			m := newReplModel(t, seed)
			for range 150 {
				m.step()
				m.check()
			}
			for _, r := range m.reps {
				if err := r.tl.Close(); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

func newReplModel(t *testing.T, seed uint64) *replModel {
	m := &replModel{t: t, rng: rand.New(rand.NewPCG(seed, 5)), clock: newClock(recoveryEpoch)}
	for range modelReplicas {
		m.reps = append(m.reps, newReplica(t, modelBuckets, m.clock))
	}
	m.hw = make([]int64, modelBuckets)
	m.committed = make([][]Batch, modelBuckets)
	m.elect(0)
	return m
}

// elect makes replica r the leader of a new epoch.
func (m *replModel) elect(r int) {
	m.leader = r
	m.epoch++
	for b := range modelBuckets {
		// Every replica holds the batches below the high watermark: a new
		// leader loses none of them.
		if d := m.reps[r].tl.DurableEnds()[b]; d < m.hw[b] {
			m.t.Fatalf("electing replica %d: bucket %d ends at %d, below the high watermark %d", r, b, d, m.hw[b])
		}
		if err := m.reps[r].tl.Bucket(b).BecomeLeader(m.epoch); err != nil {
			m.t.Fatal(err)
		}
	}
	m.matched = make([][]int64, modelReplicas)
	m.reconciled = make([][]bool, modelReplicas)
	for i := range m.matched {
		m.matched[i] = []int64{-1, -1}
		m.reconciled[i] = make([]bool, modelBuckets)
	}
}

func (m *replModel) step() {
	t, rng := m.t, m.rng
	m.clock.add(time.Duration(rng.IntN(3000)) * time.Millisecond)
	switch op := rng.IntN(20); {
	case op < 8: // a write on the leader
		m.writes++
		parts := writeParts(t, rng, m.writes, modelBuckets)
		if _, err := m.reps[m.leader].tl.Append(parts); err != nil {
			t.Fatalf("append on the leader: %v", err)
		}
	case op < 15: // a follower fetches
		f := (m.leader + 1 + rng.IntN(modelReplicas-1)) % modelReplicas
		for b := range modelBuckets {
			m.fetch(f, b)
		}
	case op < 17: // the leader changes
		m.elect((m.leader + 1 + rng.IntN(modelReplicas-1)) % modelReplicas)
	case op < 19: // a replica crashes and restarts
		r := rng.IntN(modelReplicas)
		m.reps[r].crash(t, vfs.CrashOptions{KeepUnsynced: rng.IntN(2) == 0, Rand: rng})
		if r != m.leader {
			// A restarted follower cuts its divergent tail again.
			m.reconciled[r] = make([]bool, modelBuckets)
		}
	default:
		if err := m.reps[rng.IntN(modelReplicas)].tl.CheckpointHighWatermarks(); err != nil {
			t.Fatal(err)
		}
	}
}

// fetch has follower f reconcile bucket b with the leader if it has not
// since the epoch began, and copy the leader's new batches; the leader's
// high watermark then moves to what every replica holds, and the
// follower's to the leader's.
func (m *replModel) fetch(f, b int) {
	t := m.t
	leader, follower := m.reps[m.leader].tl, m.reps[f].tl
	if !m.reconciled[f][b] {
		if err := reconcile(t, leader, follower, b); err != nil {
			t.Fatalf("replica %d, bucket %d: reconcile: %v", f, b, err)
		}
		m.reconciled[f][b] = true
	}
	if _, err := fetch(t, leader, follower, b); err != nil {
		t.Fatalf("replica %d, bucket %d: fetch: %v", f, b, err)
	}
	m.matched[f][b] = follower.DurableEnds()[b]
	hw := leader.DurableEnds()[b]
	for r := range m.reps {
		if r != m.leader {
			hw = min(hw, m.matched[r][b])
		}
	}
	if hw >= 0 {
		leader.SetHighWatermark(b, hw)
	}
	follower.SetHighWatermark(b, leader.HighWatermark(b))
	if hw > m.hw[b] {
		m.committed[b] = replicaBatches(t, leader.Bucket(b), hw)
		m.hw[b] = hw
	}
}

// check checks every replica against the model.
func (m *replModel) check() {
	t := m.t
	for r, rep := range m.reps {
		for b := range modelBuckets {
			l := rep.tl.Bucket(b)
			st := l.Stats()
			if st.Durable < m.hw[b] || st.Committed > m.hw[b] || st.Committed > st.Durable || st.Next != st.Durable {
				t.Fatalf("replica %d, bucket %d: %+v, high watermark %d", r, b, st, m.hw[b])
			}
			if rep.tl.CommittedEnds()[b] != st.Committed {
				t.Fatalf("replica %d, bucket %d: committed ends %v, committed %d", r, b, rep.tl.CommittedEnds(), st.Committed)
			}
			// The batches below the high watermark are all there, the
			// same bytes; a reader sees them up to the replica's own.
			got := replicaBatches(t, l, m.hw[b])
			if len(got) != len(m.committed[b]) {
				t.Fatalf("replica %d, bucket %d: %d batches below the high watermark %d, want %d", r, b, len(got), m.hw[b], len(m.committed[b]))
			}
			for i := range got {
				if !bytes.Equal(got[i], m.committed[b][i]) {
					t.Fatalf("replica %d, bucket %d: batch %d at %d differs", r, b, i, got[i].BaseOffset())
				}
			}
			visible := visibleBatches(t, l)
			if n := len(visible); n > len(got) || n > 0 && visible[n-1].NextOffset() != st.Committed || n == 0 && st.Committed != 0 {
				t.Fatalf("replica %d, bucket %d: a reader sees %d batches, committed %d", r, b, n, st.Committed)
			}
			checkEpochsAgree(t, l)
		}
	}
}

// visibleBatches reads bucket b of a replica with a reader from its start.
func visibleBatches(t testing.TB, l *Log) []Batch {
	t.Helper()
	rd, err := l.NewReader(l.Start())
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	rd.chunk = 4 << 10
	var out []Batch
	for {
		bs, _, err := rd.Next(nil, 1<<12)
		if err != nil {
			t.Fatal(err)
		}
		if len(bs) == 0 {
			return out
		}
		out = append(out, bs...)
	}
}
