package columnarlog

import (
	"bytes"
	"encoding/hex"
	"errors"
	"testing"

	"github.com/lakestream/lakestream/internal/vfs"
)

// batchSeeds are stored batches of every shape: both versions, with and
// without statistics and change types, stamped, and some of them cut short
// or damaged.
func batchSeeds(t testing.TB) [][]byte {
	v1, err := hex.DecodeString(v1Batch)
	if err != nil {
		t.Fatal(err)
	}
	stats, err := EncodeStats([]ColumnStats{
		{Kind: StatsInt64, Flags: StatsHasMinMax, MinInt: -3, MaxInt: 9},
		{Kind: StatsBytes, Flags: StatsHasMinMax | StatsMaxExclusive, MinBytes: []byte("a"), MaxBytes: []byte("zz")},
		{Kind: StatsNone},
	})
	if err != nil {
		t.Fatal(err)
	}
	var seeds [][]byte
	for i, h := range []Header{
		{RecordCount: 1},
		{Codec: CodecZstd, SchemaID: 3, WriterID: 7, WriterSeq: 9, RecordCount: 2},
		{Codec: CodecLZ4, RecordCount: 3},
	} {
		var ct []byte
		if i == 1 {
			ct = []byte{byte(Insert), byte(Delete)}
		}
		var st []byte
		if i > 0 {
			st = stats
		}
		b, err := NewBatch(h, st, ct, []byte{0xff, 0xff, 0xff, 0xff, 8, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8})
		if err != nil {
			t.Fatal(err)
		}
		b.stamp(int64(100*i), 1_700_000_000_000_000+int64(i), int32(i))
		bad := bytes.Clone(b)
		bad[len(bad)/2] ^= 0x10
		seeds = append(seeds, b, b[:len(b)-1], b[:HeaderSizeV1], bad)
	}
	return append(seeds, v1, v1[:40])
}

// FuzzBatch feeds arbitrary bytes to the batch checks a reader applies to
// what it reads from disk. Nothing may panic; every error wraps ErrCorrupt;
// whatever passes Check splits into its sections, decodes its statistics
// without panicking, and is rebuilt byte for byte from its parts (NewBatch,
// then the server's stamp) when it is of the version logs write.
func FuzzBatch(f *testing.F) {
	for _, s := range batchSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		b := Batch(data)
		if err := checkHeader(b); err != nil && !errors.Is(err, ErrCorrupt) {
			t.Fatalf("checkHeader: %v does not wrap ErrCorrupt", err)
		}
		if _, _, _, err := b.sections(); err != nil && !errors.Is(err, ErrCorrupt) {
			t.Fatalf("sections: %v does not wrap ErrCorrupt", err)
		}
		err := b.Check()
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Check: %v does not wrap ErrCorrupt", err)
			}
			return
		}
		stats, ct, msg, err := b.sections()
		if err != nil {
			t.Fatalf("a batch that passes Check has no sections: %v", err)
		}
		if stats != nil {
			if _, err := DecodeStats(stats); err != nil && !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrUnknownStats) {
				t.Fatalf("DecodeStats: %v", err)
			}
		}
		if b.Magic() != MagicV2 {
			return
		}
		if b.Attributes()&^(AttrCodecMask|AttrHasChangeTypes|AttrHasStats) != 0 {
			return // bits no writer sets: NewBatch cannot make them
		}
		h := Header{Codec: b.Codec(), SchemaID: b.SchemaID(), WriterID: b.WriterID(), WriterSeq: b.WriterSeq(), RecordCount: b.RecordCount()}
		if b.Attributes()&AttrHasChangeTypes != 0 && ct == nil {
			ct = []byte{}
		}
		if b.Attributes()&AttrHasStats != 0 && stats == nil {
			stats = []byte{}
		}
		again, err := NewBatch(h, stats, ct, msg)
		if err != nil {
			t.Fatalf("NewBatch of a valid batch's parts: %v", err)
		}
		again.stamp(b.BaseOffset(), b.CommitTimestamp(), b.LeaderEpoch())
		if !bytes.Equal(again, b) {
			t.Fatalf("rebuilt batch differs:\n got %x\nwant %x", []byte(again), data)
		}
	})
}

// FuzzOpenSegment writes arbitrary bytes as a log's only segment, then
// opens the log (recovery) and reads it. Whatever the bytes, recovery makes
// a valid log of them: it opens, every batch a reader returns passes its
// check and follows the one before, and the log takes a new batch after
// them and returns it.
func FuzzOpenSegment(f *testing.F) {
	seg := []byte{}
	for _, s := range batchSeeds(f) {
		f.Add(s)
		if Batch(s).Check() == nil && Batch(s).Magic() == MagicV2 {
			seg = append(seg, s...)
		}
	}
	f.Add(seg)
	f.Fuzz(func(t *testing.T, data []byte) {
		fs := vfs.NewMem()
		const dir = "/log"
		if err := fs.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := writeFileSync(fs, dir+"/"+segmentName(0, logSuffix), data); err != nil {
			t.Fatal(err)
		}
		l, err := Open(dir, memOpts(fs))
		if err != nil {
			t.Fatalf("open: %v", err)
		}
		defer l.Close()
		got := readAll(t, l, l.Start())
		next := l.Start()
		for _, b := range got {
			if err := b.Check(); err != nil || b.BaseOffset() != next {
				t.Fatalf("read batch at %d after offset %d: %v", b.BaseOffset(), next, err)
			}
			next = b.NextOffset()
		}
		if next != l.Committed() {
			t.Fatalf("batches end at %d, committed %d", next, l.Committed())
		}
		if _, err := l.Append(payload(t, 1, 1, 10)); err != nil {
			t.Fatalf("append after recovery: %v", err)
		}
		if all := readAll(t, l, l.Start()); len(all) != len(got)+1 || payloadID(t, all[len(all)-1]) != 1 {
			t.Fatalf("after an append: %d batches, want %d", len(all), len(got)+1)
		}
	})
}
