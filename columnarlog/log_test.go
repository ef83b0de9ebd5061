package columnarlog

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lakestream/lakestream/internal/vfs"
)

// payload builds a batch whose "arrow message" encodes id, so tests can
// recognise batches after recovery. The log never looks inside the message.
func payload(t testing.TB, id int64, rows int32, size int) Batch {
	t.Helper()
	msg := make([]byte, max(size, 8))
	binary.LittleEndian.PutUint64(msg, uint64(id))
	for i := 8; i < len(msg); i++ {
		msg[i] = byte(id + int64(i))
	}
	b, err := NewBatch(Header{SchemaID: 1, RecordCount: rows}, nil, nil, msg)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func payloadID(t testing.TB, b Batch) int64 {
	t.Helper()
	msg, err := b.ArrowMessage()
	if err != nil {
		t.Fatal(err)
	}
	return int64(binary.LittleEndian.Uint64(msg))
}

func memOpts(fs vfs.FS) Options {
	return Options{FS: fs, SegmentBytes: 4 << 10, IndexIntervalBytes: 256}
}

func mustOpen(t testing.TB, dir string, opts Options) *Log {
	t.Helper()
	l, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// readAll reads every committed batch from offset from.
func readAll(t testing.TB, l *Log, from int64) []Batch {
	t.Helper()
	r, err := l.NewReader(from)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out []Batch
	for {
		bs, _, err := r.Next(nil, 1000)
		if err != nil {
			t.Fatal(err)
		}
		if len(bs) == 0 {
			return out
		}
		out = append(out, bs...)
	}
}

// TestBatchBytesPinned pins the version 2 layout (batch.go): the CRC over
// bytes [29, 51) and [55, end), which for the same content is the version 1
// CRC, and the header CRC over bytes [0, 29), stamped with the server's
// fields.
func TestBatchBytesPinned(t *testing.T) {
	b, err := NewBatch(Header{Codec: CodecZstd, SchemaID: 3, WriterID: 7, WriterSeq: 9, RecordCount: 2},
		nil, []byte{byte(Insert), byte(Delete)}, []byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0})
	if err != nil {
		t.Fatal(err)
	}
	b.stamp(100, 1_700_000_000_000_000, 5)
	const want = "6400000000000000" + "35000000" + "02" + "00401e18240a0600" + "05000000" + "3ac6a243" +
		"0600" + "03000000" + "0700000000000000" + "09000000" + "02000000" + "75efcc76" + "0104" + "ffffffff00000000"
	if got := hex.EncodeToString(b); got != want {
		t.Fatalf("batch bytes changed:\n got %s\nwant %s", got, want)
	}
	if err := b.Check(); err != nil {
		t.Fatalf("stamped batch fails its check: %v", err)
	}
	ct, _ := b.ChangeTypes()
	if !bytes.Equal(ct, []byte{1, 4}) || b.Codec() != CodecZstd || b.NextOffset() != 102 || b.HeaderCRC() != 0x76ccef75 {
		t.Fatalf("accessors: change types %v codec %v next %d header crc %08x", ct, b.Codec(), b.NextOffset(), b.HeaderCRC())
	}
}

// v1Batch is the batch of TestBatchBytesPinned as version 1 wrote it: no
// header CRC, the sections from byte 51.
const v1Batch = "6400000000000000" + "31000000" + "01" + "00401e18240a0600" + "05000000" +
	"3ac6a243" + "0600" + "03000000" + "0700000000000000" + "09000000" + "02000000" + "0104" + "ffffffff00000000"

// Version 1 batches stay readable, with the damage version 1 can show.
func TestBatchV1Readable(t *testing.T) {
	raw, err := hex.DecodeString(v1Batch)
	if err != nil {
		t.Fatal(err)
	}
	b := Batch(raw)
	if err := b.Check(); err != nil {
		t.Fatalf("version 1 batch fails its check: %v", err)
	}
	ct, _ := b.ChangeTypes()
	msg, _ := b.ArrowMessage()
	if b.Magic() != MagicV1 || b.BaseOffset() != 100 || b.CommitTimestamp() != 1_700_000_000_000_000 ||
		b.LeaderEpoch() != 5 || b.SchemaID() != 3 || b.WriterID() != 7 || b.WriterSeq() != 9 ||
		!bytes.Equal(ct, []byte{1, 4}) || len(msg) != 8 || b.HeaderCRC() != 0 {
		t.Fatalf("accessors of a version 1 batch: %+v", b)
	}
	// Everything from the CRC on is covered by it, and a damaged magic is
	// not a batch either; the stamped fields have no checksum in version 1.
	for i := offMagic; i < len(b); i++ {
		if i >= offCommitTS && i < offCRC {
			continue
		}
		c := append(Batch(nil), b...)
		c[i] ^= 0xff
		if err := c.Check(); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("flip at %d: %v, want ErrCorrupt", i, err)
		}
	}
}

// Every byte of a version 2 batch is covered: each single-bit flip, and each
// byte inverted, fails Check.
func TestBatchCheckFindsDamage(t *testing.T) {
	b := payload(t, 1, 10, 64)
	b.stamp(1000, 1_700_000_000_000_000, 3)
	if err := b.Check(); err != nil {
		t.Fatal(err)
	}
	for i := range b {
		for _, mask := range []byte{1, 2, 4, 8, 16, 32, 64, 128, 0xff} {
			c := append(Batch(nil), b...)
			c[i] ^= mask
			if err := c.Check(); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("flip %#02x at %d: err %v, want ErrCorrupt", mask, i, err)
			}
		}
	}
	if err := b[:len(b)-1].Check(); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("short batch: %v", err)
	}
}

// Logs read version 1 and write version 2 only: a version 1 batch has no
// header CRC to stamp.
func TestAppendRefusesVersion1(t *testing.T) {
	l := mustOpen(t, "/log", memOpts(vfs.NewMem()))
	defer l.Close()
	raw, err := hex.DecodeString(v1Batch)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(raw); err == nil || !strings.Contains(err.Error(), "version 1") {
		t.Fatalf("append of a version 1 batch: %v", err)
	}
}

func TestAppendReadAcrossSegments(t *testing.T) {
	fs := vfs.NewMem()
	l := mustOpen(t, "/log", memOpts(fs))
	var next int64
	for i := int64(0); i < 200; i++ {
		res, err := l.Append(payload(t, i, int32(i%7+1), int(i%300)))
		if err != nil {
			t.Fatal(err)
		}
		if res.BaseOffset != next {
			t.Fatalf("batch %d at offset %d, want %d", i, res.BaseOffset, next)
		}
		next += i%7 + 1
	}
	if st := l.Stats(); st.Segments < 3 || st.Committed != next {
		t.Fatalf("stats %+v: want several segments, committed %d", st, next)
	}
	check := func(l *Log) {
		got := readAll(t, l, 0)
		if len(got) != 200 {
			t.Fatalf("read %d batches, want 200", len(got))
		}
		for i, b := range got {
			if payloadID(t, b) != int64(i) || b.Check() != nil {
				t.Fatalf("batch %d: id %d check %v", i, payloadID(t, b), b.Check())
			}
		}
		// From the middle of a batch: the batch holding the offset comes first.
		from := got[150].BaseOffset() + int64(got[150].RecordCount())/2
		if mid := readAll(t, l, from); payloadID(t, mid[0]) != 150 || len(mid) != 50 {
			t.Fatalf("read from %d: first id %d, %d batches", from, payloadID(t, mid[0]), len(mid))
		}
	}
	check(l)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// Reopen with index files present, then without them.
	l = mustOpen(t, "/log", memOpts(fs))
	check(l)
	l.Close()
	names, _ := fs.List("/log")
	for _, n := range names {
		if bytes.HasSuffix([]byte(n), []byte(indexSuffix)) {
			fs.Remove("/log/" + n)
		}
	}
	l = mustOpen(t, "/log", memOpts(fs))
	defer l.Close()
	check(l)
	if _, err := l.NewReader(next + 1); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read past the end: %v", err)
	}
}

func TestGroupCommitSharesSyncs(t *testing.T) {
	fs := vfs.NewMem()
	const n = 32
	var syncs, writes atomic.Int64
	gate := make(chan struct{})
	allWriting := make(chan struct{})
	fs.InjectError(func(op vfs.Op, name string) error {
		switch op {
		case vfs.OpSync:
			syncs.Add(1)
			<-gate // hold the leader's fsync until every appender is writing
		case vfs.OpWrite:
			if writes.Add(1) == n {
				close(allWriting)
			}
		}
		return nil
	})
	l := mustOpen(t, "/log", Options{FS: fs})
	defer l.Close()
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := l.Append(payload(t, int64(i), 1, 16)); err != nil {
				t.Error(err)
			}
		}()
	}
	// Let the syncs through once every appender has reached its write (the
	// last write may land after the released fsync: one more round at most).
	<-allWriting
	close(gate)
	wg.Wait()
	if s := syncs.Load(); s >= n || s > 3 {
		t.Fatalf("%d fsyncs for %d concurrent appends; group commit should need at most 3", s, n)
	}
	if l.Committed() != n {
		t.Fatalf("committed %d, want %d", l.Committed(), n)
	}
}

func TestAckedBatchesSurviveCrash(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, seed))
			fs := vfs.NewMem()
			l := mustOpen(t, "/log", memOpts(fs))
			var acked []int64
			for i := int64(0); i < 60; i++ {
				if _, err := l.Append(payload(t, i, 3, rng.IntN(500))); err != nil {
					t.Fatal(err)
				}
				acked = append(acked, i)
			}
			// Unacknowledged writes in flight: written, never synced.
			for i := int64(60); i < 63; i++ {
				if _, _, err := l.write(payload(t, i, 3, rng.IntN(500)), true); err != nil {
					t.Fatal(err)
				}
			}
			crashed := fs.CrashClone(vfs.CrashOptions{KeepUnsynced: true, Rand: rng, TornGarbage: seed%2 == 0})
			l2 := mustOpen(t, "/log", memOpts(crashed))
			defer l2.Close()
			got := readAll(t, l2, 0)
			if len(got) < len(acked) || len(got) > 63 {
				t.Fatalf("recovered %d batches, acknowledged %d", len(got), len(acked))
			}
			for i, b := range got {
				if payloadID(t, b) != int64(i) {
					t.Fatalf("batch %d has id %d", i, payloadID(t, b))
				}
			}
			// The recovered log takes appends again, densely.
			res, err := l2.Append(payload(t, 99, 1, 10))
			if err != nil || res.BaseOffset != int64(len(got))*3 {
				t.Fatalf("append after recovery: %+v %v", res, err)
			}
		})
	}
}

func TestDamagedSealedSegmentIsAnError(t *testing.T) {
	fs := vfs.NewMem()
	l := mustOpen(t, "/log", memOpts(fs))
	for i := int64(0); i < 50; i++ {
		if _, err := l.Append(payload(t, i, 1, 200)); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	f, err := fs.OpenAppend("/log/" + segmentName(0, logSuffix))
	if err != nil {
		t.Fatal(err)
	}
	// Cut the first (sealed) segment in the middle of a batch.
	if err := f.Truncate(HeaderSize + 10); err != nil {
		t.Fatal(err)
	}
	f.Close()
	fs.Remove("/log/" + segmentName(0, indexSuffix))
	_, err = Open("/log", memOpts(fs))
	var ce *CorruptionError
	if !errors.As(err, &ce) || !errors.Is(err, ErrCorrupt) {
		t.Fatalf("open with a damaged sealed segment: %v, want a CorruptionError", err)
	}
}

func TestWriteErrorsAreSticky(t *testing.T) {
	fs := vfs.NewMem()
	l := mustOpen(t, "/log", Options{FS: fs})
	defer l.Close()
	if _, err := l.Append(payload(t, 0, 1, 10)); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("disk on fire")
	fs.InjectError(vfs.FailNth(vfs.OpSync, 1, boom))
	if _, err := l.Append(payload(t, 1, 1, 10)); !errors.Is(err, boom) {
		t.Fatalf("append with failing sync: %v", err)
	}
	if _, err := l.Append(payload(t, 2, 1, 10)); err == nil {
		t.Fatal("append after a failed sync succeeded")
	}
	if l.Committed() != 1 {
		t.Fatalf("committed %d after failed sync, want 1", l.Committed())
	}
}

func TestIdempotentWriter(t *testing.T) {
	fs := vfs.NewMem()
	l := mustOpen(t, "/log", memOpts(fs))
	mk := func(seq int32) Batch {
		b, err := NewBatch(Header{WriterID: 42, WriterSeq: seq, RecordCount: 2}, nil, nil, make([]byte, 3000))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for seq := int32(0); seq < 5; seq++ {
		if _, err := l.Append(mk(seq)); err != nil {
			t.Fatal(err)
		}
	}
	res, err := l.Append(mk(4))
	if err != nil || !res.Duplicate || res.BaseOffset != 8 {
		t.Fatalf("retry of seq 4: %+v %v", res, err)
	}
	if _, err := l.Append(mk(7)); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("gap in sequence: %v", err)
	}
	l.Close()
	// The writer state survives reopening, across segment rolls.
	l = mustOpen(t, "/log", memOpts(fs))
	defer l.Close()
	if l.Stats().Segments < 2 {
		t.Fatal("test wants several segments")
	}
	res, err = l.Append(mk(4))
	if err != nil || !res.Duplicate || res.BaseOffset != 8 {
		t.Fatalf("retry after reopen: %+v %v", res, err)
	}
	if res, err := l.Append(mk(5)); err != nil || res.BaseOffset != 10 {
		t.Fatalf("next seq after reopen: %+v %v", res, err)
	}
}

type fakeClock struct{ t atomic.Int64 }

func (c *fakeClock) now() time.Time       { return time.UnixMicro(c.t.Load()) }
func (c *fakeClock) add(d time.Duration)  { c.t.Add(d.Microseconds()) }
func newClock(start time.Time) *fakeClock { c := &fakeClock{}; c.t.Store(start.UnixMicro()); return c }

func TestOffsetForTimeAndRetention(t *testing.T) {
	clock := newClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	fs := vfs.NewMem()
	opts := memOpts(fs)
	opts.Now = clock.now
	l := mustOpen(t, "/log", opts)
	defer l.Close()
	start := clock.now()
	for i := int64(0); i < 100; i++ {
		if _, err := l.Append(payload(t, i, 10, 100)); err != nil {
			t.Fatal(err)
		}
		clock.add(time.Minute)
	}
	for _, tc := range []struct {
		at   time.Time
		want int64
	}{
		{start.Add(-time.Hour), 0},
		{start, 0},
		{start.Add(30*time.Minute - time.Second), 300},
		{start.Add(99 * time.Minute), 990},
		{start.Add(200 * time.Minute), 1000},
	} {
		got, err := l.OffsetForTime(tc.at.UnixMicro())
		if err != nil || got != tc.want {
			t.Errorf("offset for %v: %d %v, want %d", tc.at.Sub(start), got, err, tc.want)
		}
	}
	before := l.Stats()
	// Nothing may go while the floor (tiered offset) is 0.
	if n, err := l.ApplyRetention(Retention{MaxAge: time.Minute, Floor: 0}); n != 0 || err != nil {
		t.Fatalf("retention below floor deleted %d: %v", n, err)
	}
	n, err := l.ApplyRetention(Retention{MaxAge: 50 * time.Minute, Floor: math.MaxInt64})
	if err != nil || n == 0 {
		t.Fatalf("retention deleted %d: %v", n, err)
	}
	after := l.Stats()
	if after.Start == 0 || after.Segments != before.Segments-n || after.Committed != before.Committed {
		t.Fatalf("after retention %+v, before %+v", after, before)
	}
	if _, err := l.NewReader(0); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read below the start: %v", err)
	}
	if got := readAll(t, l, after.Start); payloadID(t, got[0]) != after.Start/10 {
		t.Fatalf("first batch after retention has id %d", payloadID(t, got[0]))
	}
}

func TestReaderWaitsForCommit(t *testing.T) {
	fs := vfs.NewMem()
	l := mustOpen(t, "/log", Options{FS: fs})
	defer l.Close()
	r, err := l.NewReader(0)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	wake := l.Notify()
	if bs, _, _ := r.Next(nil, 1<<20); len(bs) != 0 {
		t.Fatal("empty log returned batches")
	}
	// Written but not synced: invisible.
	if _, _, err := l.write(payload(t, 0, 1, 10), true); err != nil {
		t.Fatal(err)
	}
	if bs, _, _ := r.Next(nil, 1<<20); len(bs) != 0 {
		t.Fatal("uncommitted batch visible")
	}
	go l.Append(payload(t, 1, 1, 10))
	<-wake
	for l.Committed() < 2 {
		<-l.Notify()
	}
	bs, _, err := r.Next(nil, 1<<20)
	if err != nil || len(bs) != 2 {
		t.Fatalf("after commit: %d batches, %v", len(bs), err)
	}
}

func TestRollByAgeAndRetentionBySize(t *testing.T) {
	clock := newClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	fs := vfs.NewMem()
	opts := Options{FS: fs, SegmentAge: time.Hour, Now: clock.now}
	l := mustOpen(t, "/log", opts)
	defer l.Close()
	for i := int64(0); i < 10; i++ {
		if _, err := l.Append(payload(t, i, 1, 1000)); err != nil {
			t.Fatal(err)
		}
		clock.add(30 * time.Minute)
	}
	// A segment rolls once its first batch is an hour old: 2 batches each.
	if st := l.Stats(); st.Segments != 5 {
		t.Fatalf("%d segments after 5 hours of appends, want 5", st.Segments)
	}
	size := l.Stats().Bytes
	n, err := l.ApplyRetention(Retention{MaxBytes: size / 2, Floor: math.MaxInt64})
	if err != nil || n != 3 {
		t.Fatalf("retention by size deleted %d segments (%v), want 3", n, err)
	}
	if st := l.Stats(); st.Bytes > size/2 || st.Start != 6 {
		t.Fatalf("after retention %+v", st)
	}
}

// The sparse index puts a reader's first read up to an index interval
// before its offset; the batches wholly below it are not returned.
func TestReaderStartsAtBatchHoldingOffset(t *testing.T) {
	fs := vfs.NewMem()
	l := mustOpen(t, "/log", memOpts(fs)) // an index entry every 256 bytes
	defer l.Close()
	for i := int64(0); i < 40; i++ {
		if _, err := l.Append(payload(t, i, int32(i%3+1), 60)); err != nil {
			t.Fatal(err)
		}
	}
	if l.Stats().Segments < 2 {
		t.Fatal("test wants several segments")
	}
	all := readAll(t, l, 0)
	for from := int64(0); from < l.Committed(); from++ {
		got := readAll(t, l, from)
		first := got[0]
		if first.BaseOffset() > from || first.NextOffset() <= from {
			t.Fatalf("reader from %d starts at batch [%d,%d)", from, first.BaseOffset(), first.NextOffset())
		}
		if want := all[len(all)-len(got):]; payloadID(t, got[0]) != payloadID(t, want[0]) || len(got) != len(want) {
			t.Fatalf("reader from %d: %d batches from id %d, want %d from id %d",
				from, len(got), payloadID(t, got[0]), len(want), payloadID(t, want[0]))
		}
	}
}
