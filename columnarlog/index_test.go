package columnarlog

import (
	"errors"
	"testing"
	"time"

	"github.com/lakestream/lakestream/internal/vfs"
)

// Index files are a cache without a checksum: whatever byte of them is
// damaged, the log opens, readers start at the batch holding their offset,
// and offset-for-time lookups answer as over an undamaged index.
func TestDamagedIndexIsNotTrusted(t *testing.T) {
	clock := newClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	fs := vfs.NewMem()
	opts := Options{FS: fs, SegmentBytes: 1 << 10, IndexIntervalBytes: 256, Now: clock.now}
	l := mustOpen(t, "/log", opts)
	var stamps []int64 // commit timestamp of each batch
	for i := int64(0); i < 12; i++ {
		clock.add(time.Second)
		stamps = append(stamps, clock.now().UnixMicro())
		if _, err := l.Append(payload(t, i, 1, 100-HeaderSize)); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 0, 2<<20) // room for a reader's chunk
	for _, suffix := range []string{indexSuffix, timeIndexSuffix} {
		name := "/log/" + segmentName(0, suffix)
		clean, err := readFile(fs, name)
		if err != nil || len(clean) == 0 {
			t.Fatalf("read %s: %v (%d bytes)", name, err, len(clean))
		}
		// The lowest and the highest bit of every byte: every field, and
		// damage that keeps entries in order as well as damage that does not.
		for pos := range clean {
			for _, mask := range []byte{0x01, 0x80} {
				damaged := append([]byte(nil), clean...)
				damaged[pos] ^= mask
				if err := writeFileSync(fs, name, damaged); err != nil {
					t.Fatal(err)
				}
				checkIndexedReads(t, fs, opts, stamps, buf)
				if t.Failed() {
					t.Fatalf("%s with byte %d xor %#x", suffix, pos, mask)
				}
				// The next open may have rewritten it: restore it.
				if err := writeFileSync(fs, name, clean); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}

// checkIndexedReads opens the log of TestDamagedIndexIsNotTrusted (batch i
// holds offset i and has commit timestamp stamps[i]) and checks every
// read from an offset and every offset-for-time lookup.
func checkIndexedReads(t *testing.T, fs vfs.FS, opts Options, stamps []int64, buf []byte) {
	t.Helper()
	l, err := Open("/log", opts)
	if err != nil {
		t.Errorf("open: %v", err)
		return
	}
	defer l.Close()
	for from := int64(0); from < int64(len(stamps)); from++ {
		r, err := l.NewReader(from)
		if err != nil {
			t.Fatal(err)
		}
		var got []int64 // base offsets
		for {
			bs, _, err := r.Next(buf[:0], 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			if len(bs) == 0 {
				break
			}
			for _, b := range bs {
				got = append(got, b.BaseOffset())
			}
		}
		r.Close()
		if len(got) != len(stamps)-int(from) || len(got) > 0 && got[0] != from {
			t.Errorf("reader from %d returned batches at %v", from, got)
		}
	}
	for i, ts := range stamps {
		for _, at := range []int64{ts, ts - 500_000} {
			got, err := l.OffsetForTime(at)
			if err != nil || got != int64(i) {
				t.Errorf("offset for time %d: %d %v, want %d", at, got, err, i)
			}
		}
	}
}

// A sealed segment damaged itself is still an error, whatever its index.
func TestDamagedSealedSegmentWithGoodIndexIsAnError(t *testing.T) {
	fs := vfs.NewMem()
	opts := Options{FS: fs, SegmentBytes: 1 << 10, IndexIntervalBytes: 256}
	l := mustOpen(t, "/log", opts)
	for i := int64(0); i < 12; i++ {
		if _, err := l.Append(payload(t, i, 1, 100-HeaderSize)); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	name := "/log/" + segmentName(0, logSuffix)
	data, err := readFile(fs, name)
	if err != nil {
		t.Fatal(err)
	}
	data[950] ^= 1 // the body of the last batch: only a full scan with CRCs would see it
	data[900+offBaseOffset] ^= 1
	if err := writeFileSync(fs, name, data); err != nil {
		t.Fatal(err)
	}
	_, err = Open("/log", opts)
	var ce *CorruptionError
	if !errors.As(err, &ce) || ce.Position != 900 {
		t.Fatalf("open: %v, want a CorruptionError at position 900", err)
	}
}
