package columnarlog

import (
	"bytes"
	"encoding/hex"
	"errors"
	"math"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lakestream/lakestream/internal/vfs"
)

// restartSetup is a leader and a follower of two buckets: the follower
// holds bucket 0 up to some end, then the leader writes on under a new
// epoch and retention deletes its segments past the follower's end. It
// returns the leader's new start of bucket 0.
func restartSetup(t *testing.T) (leader, follower *replica, start int64) {
	t.Helper()
	clock := newClock(recoveryEpoch)
	leader, follower = newReplica(t, 2, clock), newReplica(t, 2, clock)
	if err := leader.tl.Bucket(0).BecomeLeader(1); err != nil {
		t.Fatal(err)
	}
	for i := range 12 {
		clock.add(time.Second)
		appendRows(t, leader.tl, i%2, int64(i), 3, 200)
	}
	for b := range 2 {
		if _, err := fetch(t, leader.tl, follower.tl, b); err != nil {
			t.Fatal(err)
		}
		follower.tl.SetHighWatermark(b, follower.tl.DurableEnds()[b])
	}
	if err := leader.tl.Bucket(0).BecomeLeader(2); err != nil {
		t.Fatal(err)
	}
	for i := 12; i < 40; i++ {
		clock.add(time.Second)
		appendRows(t, leader.tl, 0, int64(i), 3, 200)
	}
	end := leader.tl.DurableEnds()[0]
	leader.tl.SetHighWatermark(0, end)
	if _, err := leader.tl.Bucket(0).ApplyRetention(Retention{MaxBytes: 1, Floor: end}); err != nil {
		t.Fatal(err)
	}
	start = leader.tl.Bucket(0).Start()
	if fend := follower.tl.DurableEnds()[0]; start <= fend {
		t.Fatalf("the leader's log starts at %d, not past the follower's end %d", start, fend)
	}
	return leader, follower, start
}

// checkRestarted checks that the follower's bucket 0 starts at start and,
// once it fetched, holds the leader's bytes and epochs from there; bucket 1
// is untouched.
func checkRestarted(t *testing.T, leader, follower *replica, start int64, bucket1 []Batch) {
	t.Helper()
	fl := follower.tl.Bucket(0)
	if got := fl.Start(); got != start {
		t.Fatalf("the follower starts at %d, want %d", got, start)
	}
	if _, err := fetch(t, leader.tl, follower.tl, 0); err != nil {
		t.Fatal(err)
	}
	end := leader.tl.DurableEnds()[0]
	lb, fb := replicaBatches(t, leader.tl.Bucket(0), end), replicaBatches(t, fl, end)
	if len(fb) == 0 || !slices.EqualFunc(lb, fb, func(a, b Batch) bool { return bytes.Equal(a, b) }) {
		t.Fatalf("the follower's %d batches from %d differ from the leader's %d", len(fb), start, len(lb))
	}
	want := epochsWithin(leader.tl.Bucket(0).EpochHistory(), start, math.MaxInt64)
	if got := fl.EpochHistory(); !slices.Equal(got, want) {
		t.Fatalf("the follower's epochs %v, want %v", got, want)
	}
	checkEpochsAgree(t, fl)
	if hw := follower.tl.HighWatermark(0); hw < start {
		t.Fatalf("the follower's high watermark %d is below its start %d", hw, start)
	}
	got := replicaBatches(t, follower.tl.Bucket(1), follower.tl.DurableEnds()[1])
	if !slices.EqualFunc(got, bucket1, func(a, b Batch) bool { return bytes.Equal(a, b) }) {
		t.Fatalf("bucket 1 changed: %d batches, had %d", len(got), len(bucket1))
	}
}

// A follower whose end is below the leader's start restarts its bucket
// there: empty, its high watermark and committed end at the start, its
// epoch history empty; it then fetches the leader's batches from the
// start, and keeps all of it across a reopen. A restart below the end,
// or of a table that is not replicated, is refused.
func TestRestartAt(t *testing.T) {
	leader, follower, start := restartSetup(t)
	defer leader.tl.Close()
	bucket1 := slices.Clone(replicaBatches(t, follower.tl.Bucket(1), follower.tl.DurableEnds()[1]))
	end := follower.tl.DurableEnds()[0]
	if err := follower.tl.RestartAt(0, end-1); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("restart below the end: %v", err)
	}
	hwBefore := follower.tl.HighWatermark(0)
	if err := follower.tl.RestartAt(0, start); err != nil {
		t.Fatal(err)
	}
	fl := follower.tl.Bucket(0)
	st := fl.Stats()
	if st.Start != start || st.Next != start || st.Durable != start || st.Committed != start || st.Segments != 1 {
		t.Fatalf("after the restart: %+v, want everything at %d", st, start)
	}
	if hw := follower.tl.HighWatermark(0); hw != start || hw < hwBefore || follower.tl.CommittedEnds()[0] != start {
		t.Fatalf("high watermark %d (was %d), committed ends %v, want %d", hw, hwBefore, follower.tl.CommittedEnds(), start)
	}
	if h := fl.EpochHistory(); len(h) != 0 {
		t.Fatalf("epoch history %v after the restart, want none", h)
	}
	if _, err := fl.NewReplicaReader(start - 1); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("a read below the new start: %v", err)
	}
	checkRestarted(t, leader, follower, start, bucket1)
	if err := follower.tl.Close(); err != nil {
		t.Fatal(err)
	}
	follower.open(t)
	defer follower.tl.Close()
	checkRestarted(t, leader, follower, start, bucket1)

	plain, err := OpenTable("/p", 1, Options{FS: vfs.NewMem()})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if err := plain.RestartAt(0, 10); err == nil {
		t.Fatal("a table that is not replicated restarted a bucket")
	}
}

// A crash at any filesystem operation of a restart leaves a follower that
// opens either as it was (the restart did not begin) or restarted, its
// other bucket whole; restarted again if need be, it then fetches the
// leader's batches.
func TestRestartAtCrash(t *testing.T) {
	leader, follower, start := restartSetup(t)
	defer leader.tl.Close()
	bucket1 := slices.Clone(replicaBatches(t, follower.tl.Bucket(1), follower.tl.DurableEnds()[1]))
	end := follower.tl.DurableEnds()[0]
	base := follower.fs.CrashClone(vfs.CrashOptions{})
	restarted, kept := 0, 0
	for n := 1; ; n++ {
		f := &replica{fs: base.CrashClone(vfs.CrashOptions{}), opts: follower.opts, n: 2}
		f.open(t)
		var ops atomic.Int64
		errCrash := errors.New("crash")
		f.fs.InjectError(func(vfs.Op, string) error {
			if ops.Add(1) == int64(n) {
				return errCrash
			}
			return nil
		})
		err := f.tl.RestartAt(0, start)
		f.fs.InjectError(nil)
		if err == nil {
			f.tl.Close()
			if n < 3 {
				t.Fatalf("a restart of %d operations", n-1)
			}
			break
		}
		if !errors.Is(err, errCrash) {
			t.Fatalf("op %d: %v", n, err)
		}
		f.crash(t, vfs.CrashOptions{})
		switch got := f.tl.Bucket(0).Stats(); {
		case got.Start == start && got.Next == start:
			restarted++
		case got.Start == 0 && got.Next == end:
			kept++
			if err := f.tl.RestartAt(0, start); err != nil {
				t.Fatalf("op %d: restart after the crash: %v", n, err)
			}
		default:
			t.Fatalf("op %d: after the crash bucket 0 is %+v, want [0, %d) or [%d, %d)", n, got, end, start, start)
		}
		checkRestarted(t, leader, f, start, bucket1)
		f.tl.Close()
	}
	t.Logf("%d operations: %d crashes restarted, %d as before", restarted+kept, restarted, kept)
	if restarted == 0 || kept == 0 {
		t.Fatalf("crashes left %d restarted and %d as before: want both", restarted, kept)
	}
}

// The restart marker's bytes (docs/format/log.md), pinned.
func TestRestartMarkerPinned(t *testing.T) {
	got := hex.EncodeToString(encodeRestartMarker(0x0102030405))
	if want := "05040302010000002b3632d8"; got != want {
		t.Fatalf("marker %s, want %s", got, want)
	}
	fs := vfs.NewMem()
	if err := fs.MkdirAll("/d", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := writeFileSync(fs, "/d/"+restartFileName, []byte("\x05\x04\x03\x02\x01\x00\x00\x00\x00\x00\x00\x00")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := readRestartMarker(fs, "/d"); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a marker with a bad checksum: %v", err)
	}
}
