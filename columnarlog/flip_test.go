package columnarlog_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lakestream/lakestream/columnarlog"
	"github.com/lakestream/lakestream/internal/arrowmsg"
	"github.com/lakestream/lakestream/internal/vfs"
)

// TestEveryFlippedByteIsFound damages a small table log one byte at a time
// (every byte of every segment file and of their index files, inverted and
// flipped in each of its bits; under the race detector, which makes each
// read some ten times slower, inverted and flipped in bit i%8 at byte i)
// and reads it back as a
// node does: recovery on open, then every bucket from its start through a
// Reader as a scan reads it (tables.ReadBatches), then a time lookup at
// every batch's commit timestamp. Each read must return exactly the original
// batches, byte for byte, so exactly the original rows (what a plain scan
// sends, and what a query decodes), or a *CorruptionError: nothing else,
// never a short or altered result, never a panic.
//
// The log is real: Arrow record batches of three columns, uncompressed and
// zstd-compressed, with statistics sections and change types, in several
// segments (sealed ones with index files, and the active one).
//
// Tail positions. After a crash, the last round's data, damaged, looks like
// the data of a round the crash cut short: recovery falls back to the round
// before it (columnarlog/testdata/recovery/crc-tail.txt). The variant that
// crashes after its last write therefore accepts one more outcome for the
// bytes of the last write's batch, and for those only: exactly the batches
// before it. The variant closed cleanly has no such exception (its commit
// file holds one record, so nothing looks like a cut round), nor does any
// byte of the batches before the last write in either.
//
// The commit file and the writer snapshots are checked by their own CRCs and
// reported as ErrCorrupt (testdata/recovery); they are not flipped here.
func TestEveryFlippedByteIsFound(t *testing.T) {
	for _, codec := range []arrowmsg.Codec{arrowmsg.CodecNone, arrowmsg.CodecZstd} {
		for _, crash := range []bool{false, true} {
			name := fmt.Sprintf("codec=%d/closed", codec)
			if crash {
				name = fmt.Sprintf("codec=%d/crashed", codec)
			}
			t.Run(name, func(t *testing.T) {
				f := newFlipFixture(t, codec, crash)
				files := f.files(t)
				for _, file := range files {
					data := f.read(t, file)
					for pos := range data {
						for _, mask := range flipMasks(pos) {
							f.check(t, file, pos, mask)
						}
					}
				}
				t.Logf("%d files: %d flips read back whole, %d cut as the last round, %d reported as corruption",
					len(files), f.outcomes[whole], f.outcomes[cut], f.outcomes[corrupt])
				if f.outcomes[corrupt] == 0 || (crash && f.outcomes[cut] == 0) {
					t.Fatal("the outcomes the test is about did not happen")
				}
			})
		}
	}
}

const (
	flipDir    = "/t"
	flipWrites = 7
)

// flipMasks are the masks byte pos is flipped with.
func flipMasks(pos int) []byte {
	if raceEnabled {
		return []byte{0xff, 1 << (pos % 8)}
	}
	return []byte{0xff, 1, 2, 4, 8, 16, 32, 64, 128}
}

// The outcomes of a read of a damaged log.
const (
	whole   = iota // every batch, as written
	cut            // every batch but the last round's (a crash's torn write)
	corrupt        // a *CorruptionError
)

var flipSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "amount", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
}, nil)

// flipFixture is a table log written and closed (or crashed), and what a
// read of it must return.
type flipFixture struct {
	fs      *vfs.MemFS
	opts    columnarlog.Options
	batches [][]byte // the stored batches, in offset order
	times   []int64  // their commit timestamps
	// tail is the file and byte range [from, to) of the last write's
	// batch, when a crash makes damage there a cut round (see the test).
	tail     string
	from, to int
	buf      []byte // the readers' buffer, kept from read to read
	outcomes [3]int
}

func newFlipFixture(t *testing.T, codec arrowmsg.Codec, crash bool) *flipFixture {
	fs := vfs.NewMem()
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f := &flipFixture{fs: fs, opts: columnarlog.Options{
		FS: fs, SegmentBytes: 1 << 10, IndexIntervalBytes: 256,
		Now: func() time.Time { return clock },
	}}
	tl, err := columnarlog.OpenTable(flipDir, 1, f.opts)
	if err != nil {
		t.Fatal(err)
	}
	for i := range flipWrites {
		clock = clock.Add(time.Second)
		b := flipBatch(t, i, codec)
		if _, err := tl.Append([][]columnarlog.Batch{{b}}); err != nil {
			t.Fatal(err)
		}
	}
	if crash {
		// The last write was acknowledged; nothing else happens before
		// the crash. The commit file holds a record per round.
		f.fs = fs.CrashClone(vfs.CrashOptions{})
		f.opts.FS = f.fs
	} else if err := tl.Close(); err != nil {
		t.Fatal(err)
	}
	// The original read, decoded, on a copy (open rewrites the commit
	// file): what every read must return.
	opts := f.opts
	opts.FS = f.fs.CrashClone(vfs.CrashOptions{KeepUnsynced: true})
	tl, err = columnarlog.OpenTable(flipDir, 1, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	bs, err := f.readTable(tl)
	if err != nil || len(bs) != flipWrites {
		t.Fatalf("read of the undamaged log: %d batches, %v", len(bs), err)
	}
	for i, b := range bs {
		if got, want := decodeRows(t, b), flipRows(i); got != want {
			t.Fatalf("batch %d decodes to\n%s\nwant\n%s", i, got, want)
		}
		f.batches = append(f.batches, b)
		f.times = append(f.times, columnarlog.Batch(b).CommitTimestamp())
	}
	if crash {
		// The last batch ends the last (active) segment.
		files := f.files(t)
		var seg string
		for _, n := range files {
			if path.Ext(n) == ".log" {
				seg = n // List sorts names, and they are zero-padded bases
			}
		}
		last := bs[len(bs)-1]
		data := f.read(t, seg)
		f.tail, f.from, f.to = seg, len(data)-len(last), len(data)
		if !bytes.Equal(data[f.from:], last) {
			t.Fatal("the last batch is not at the end of the last segment")
		}
	}
	return f
}

// files lists the segment and index files of the table's bucket.
func (f *flipFixture) files(t *testing.T) []string {
	names, err := f.fs.List(path.Join(flipDir, "0"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	segments := 0
	for _, n := range names {
		switch path.Ext(n) {
		case ".log":
			segments++
			fallthrough
		case ".index", ".timeindex":
			out = append(out, path.Join(flipDir, "0", n))
		}
	}
	if segments < 3 {
		t.Fatalf("%d segments: the test wants sealed ones and an active one", segments)
	}
	return out
}

func (f *flipFixture) read(t *testing.T, name string) []byte {
	r, err := f.fs.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	size, err := r.Size()
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, size)
	if _, err := r.ReadAt(data, 0); err != nil && !errors.Is(err, io.EOF) {
		t.Fatal(err)
	}
	return data
}

// check flips byte pos of file with mask in a copy of the fixture and reads
// the copy back.
func (f *flipFixture) check(t *testing.T, file string, pos int, mask byte) {
	fs := f.fs.CrashClone(vfs.CrashOptions{KeepUnsynced: true})
	data := f.read(t, file)
	data[pos] ^= mask
	w, err := fs.Create(file)
	if err == nil {
		_, err = w.Write(data)
		err = errors.Join(err, w.Sync(), w.Close())
	}
	if err != nil {
		t.Fatal(err)
	}
	opts := f.opts
	opts.FS = fs
	where := fmt.Sprintf("%s byte %d ^ %#02x", path.Base(file), pos, mask)
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("%s: panic: %v", where, r)
		}
	}()
	want := f.batches
	tailed := file == f.tail && pos >= f.from && pos < f.to
	tl, err := columnarlog.OpenTable(flipDir, 1, opts)
	if err != nil {
		f.requireCorruption(t, where, "open", err)
		return
	}
	defer tl.Close()
	got, err := f.readTable(tl)
	if err != nil {
		f.requireCorruption(t, where, "read", err)
		return
	}
	outcome := whole
	if tailed && len(got) == len(want)-1 {
		want = want[:len(want)-1] // the last round, cut as a torn write
		outcome = cut
	}
	if len(got) != len(want) {
		t.Fatalf("%s: read %d batches, want %d", where, len(got), len(want))
	}
	for i := range got {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("%s: batch %d differs from the original", where, i)
		}
	}
	end := columnarlog.Batch(want[len(want)-1]).NextOffset()
	for i, ts := range f.times {
		off, err := tl.Bucket(0).OffsetForTime(ts)
		if err != nil {
			f.requireCorruption(t, where, "time lookup", err)
			return
		}
		exp := columnarlog.Batch(f.batches[i]).BaseOffset()
		if exp > end {
			exp = end
		}
		if off != exp {
			t.Fatalf("%s: offset for the time of batch %d: %d, want %d", where, i, off, exp)
		}
	}
	if off, err := tl.Bucket(0).OffsetForTime(f.times[len(f.times)-1] + 1); err != nil || off != end {
		t.Fatalf("%s: offset after the last batch: %d, %v; want %d", where, off, err, end)
	}
	f.outcomes[outcome]++
}

func (f *flipFixture) requireCorruption(t *testing.T, where, what string, err error) {
	t.Helper()
	f.outcomes[corrupt]++
	var ce *columnarlog.CorruptionError
	if !errors.As(err, &ce) || !errors.Is(err, columnarlog.ErrCorrupt) {
		t.Fatalf("%s: %s: %v, want a *CorruptionError", where, what, err)
	}
	if ce.Segment == "" || ce.Position < 0 || ce.Offset < 0 {
		t.Fatalf("%s: %s: %+v does not say where", where, what, ce)
	}
}

// readTable reads bucket 0 from its start to its committed end as
// tables.ReadBatches does, and returns copies of the batches.
func (f *flipFixture) readTable(tl *columnarlog.TableLog) ([][]byte, error) {
	l := tl.Bucket(0)
	from, to := l.Start(), tl.CommittedEnds()[0]
	r, err := l.NewReader(from)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var out [][]byte
	for {
		bs, buf, err := r.Next(f.buf[:0], 4<<20)
		f.buf = buf
		if err != nil {
			return out, err
		}
		if len(bs) == 0 {
			return out, nil
		}
		for _, b := range bs {
			if b.BaseOffset() >= to {
				return out, nil
			}
			out = append(out, bytes.Clone(b))
		}
	}
}

// flipRows is the text of the rows of batch i.
func flipRows(i int) string {
	var sb strings.Builder
	for r := range 3 + i%3 {
		id := int64(i*100 + r)
		fmt.Fprintf(&sb, "%d %s %s\n", id, flipName(id), flipAmount(id))
	}
	return sb.String()
}

func flipName(id int64) string {
	if id%4 == 3 {
		return "null"
	}
	return fmt.Sprintf("name-%d", id*id)
}

func flipAmount(id int64) string {
	if id%5 == 4 {
		return "null"
	}
	return fmt.Sprint(float64(id) / 8)
}

// flipBatch builds batch i as tables does: the fixed header, a statistics
// section, then the record encoded with codec. Odd batches carry change
// types (a primary-key changelog), built by NewBatch.
func flipBatch(t *testing.T, i int, codec arrowmsg.Codec) columnarlog.Batch {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	b := array.NewRecordBuilder(mem, flipSchema)
	defer b.Release()
	n := 3 + i%3
	for r := range n {
		id := int64(i*100 + r)
		b.Field(0).(*array.Int64Builder).Append(id)
		if s := flipName(id); s == "null" {
			b.Field(1).AppendNull()
		} else {
			b.Field(1).(*array.StringBuilder).Append(s)
		}
		if id%5 == 4 {
			b.Field(2).AppendNull()
		} else {
			b.Field(2).(*array.Float64Builder).Append(float64(id) / 8)
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	stats := []columnarlog.ColumnStats{
		{Kind: columnarlog.StatsInt64, Flags: columnarlog.StatsHasMinMax, MinInt: int64(i * 100), MaxInt: int64(i*100 + n - 1)},
		{Kind: columnarlog.StatsNone},
		{Kind: columnarlog.StatsNone},
	}
	h := columnarlog.Header{Codec: columnarlog.Codec(codec), Stats: true, SchemaID: 1, RecordCount: int32(n)}
	if i%2 == 1 {
		msg, err := arrowmsg.AppendRecordBatch(nil, rec, codec, mem)
		if err != nil {
			t.Fatal(err)
		}
		section, err := columnarlog.EncodeStats(stats)
		if err != nil {
			t.Fatal(err)
		}
		types := bytes.Repeat([]byte{byte(columnarlog.Insert)}, n)
		out, err := columnarlog.NewBatch(h, section, types, msg)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	buf, start := columnarlog.StartBatch(nil)
	buf, err := columnarlog.AppendStatsSection(buf, stats)
	if err != nil {
		t.Fatal(err)
	}
	if buf, err = arrowmsg.AppendRecordBatch(buf, rec, codec, mem); err != nil {
		t.Fatal(err)
	}
	out, err := columnarlog.FinishBatch(buf[start:], h)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// decodeRows decodes a stored batch's Arrow message as the query path does
// and prints its rows.
func decodeRows(t *testing.T, stored []byte) string {
	msg, err := columnarlog.Batch(stored).ArrowMessage()
	if err != nil {
		t.Fatal(err)
	}
	meta, body, err := arrowmsg.SplitMessage(msg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := arrowmsg.Validate(flipSchema, meta, body, arrowmsg.Limits{}); err != nil {
		t.Fatal(err)
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	var stream bytes.Buffer
	w := ipc.NewWriter(&stream, ipc.WithSchema(flipSchema), ipc.WithAllocator(mem))
	if err := w.Close(); err != nil { // the schema message alone
		t.Fatal(err)
	}
	schemaMsg := stream.Bytes()[:stream.Len()-8] // without the end-of-stream marker
	rd, err := ipc.NewReader(io.MultiReader(bytes.NewReader(schemaMsg), bytes.NewReader(msg)), ipc.WithAllocator(mem))
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Release()
	if !rd.Next() {
		t.Fatalf("no record in the message: %v", rd.Err())
	}
	rec := rd.RecordBatch()
	var sb strings.Builder
	ids := rec.Column(0).(*array.Int64)
	names := rec.Column(1).(*array.String)
	amounts := rec.Column(2).(*array.Float64)
	for r := range int(rec.NumRows()) {
		name, amount := "null", "null"
		if names.IsValid(r) {
			name = names.Value(r)
		}
		if amounts.IsValid(r) {
			amount = fmt.Sprint(amounts.Value(r))
		}
		fmt.Fprintf(&sb, "%d %s %s\n", ids.Value(r), name, amount)
	}
	return sb.String()
}
