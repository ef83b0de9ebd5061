package columnarlog

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/lakestream/lakestream/internal/invariants"
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

// Under -tags invariants, the replication checks fire when broken by hand.
func TestReplicaInvariantChecksFire(t *testing.T) {
	if !invariants.Enabled {
		t.Skip("the checks are compiled in with -tags invariants")
	}
	for _, c := range []struct {
		invariant string
		breakIt   func(t *testing.T, tl *TableLog)
	}{
		{"high watermark <= durable end", func(t *testing.T, tl *TableLog) {
			tl.Bucket(0).hw.Store(100) // above the durable end; committed stays 0
			tl.Truncate(0, 2)
		}},
		{"leader epochs never decrease", func(t *testing.T, tl *TableLog) {
			l := tl.Bucket(0)
			l.mu.Lock()
			defer l.mu.Unlock()
			l.noteEpochLocked(0, l.mu.next)
		}},
	} {
		t.Run(c.invariant, func(t *testing.T) {
			r := newReplica(t, 1, newClock(recoveryEpoch))
			if err := r.tl.Bucket(0).BecomeLeader(3); err != nil {
				t.Fatal(err)
			}
			appendRows(t, r.tl, 0, 1, 2, 10)
			appendRows(t, r.tl, 0, 2, 2, 10)
			defer func() {
				var v *invariants.Violation
				err, _ := recover().(error)
				if !errors.As(err, &v) || v.Invariant != c.invariant {
					t.Fatalf("got %v, want a violation of %q", err, c.invariant)
				}
			}()
			c.breakIt(t, r.tl)
		})
	}
}
