package columnarlog

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/lakestream/lakestream/internal/vfs"
)

// TestRecovery runs the scripts in testdata/recovery: each drives a table
// log on a MemFS through writes, crashes, damage and reopening, and states
// what recovery must make of it. go test -run TestRecovery -rewrite
// regenerates the expected output; read the diff before committing it.
//
// Commands (a bucket's files are named by short names: 0/5.log is bucket 0's
// segment with base offset 5, commits is the commit file):
//
//	open [buckets=N] [segment-bytes=B] [index-interval=B]
//	    open (recover) the table at /t; prints what recovery logged and the
//	    state. The settings are kept for later opens; the defaults are 2
//	    buckets, 1 KiB segments and an index entry every 256 bytes.
//	append [size=B] [fail-sync=(commits, 0, ...)]
//	    one atomic write, a line "bucket: rows rows ..." per bucket it
//	    touches; each batch is B bytes (default 100) and is labelled
//	    w<write>.<n>. fail-sync makes the fsync of the commit file or of a
//	    bucket's active segment fail during the commit round.
//	write
//	    as append, without the commit round: written, not acknowledged; its
//	    writer stays in flight, so a repair after a failure waits for it.
//	crash [keep-unsynced]
//	    the filesystem as a crash leaves it: only what was synced, or also
//	    everything written since; the open table is abandoned, not closed.
//	disk full [room=B] | disk free
//	    the disk fills up once B more bytes (default 0) are written: the
//	    write that does not fit writes what does and fails with ENOSPC;
//	    then space comes back (vfs.MemFS.LimitSpace).
//	truncate file=F size=N | flip file=F pos=N [xor=X] | remove file=F
//	    damage: cut a file, xor one of its bytes (default 0x01), delete it.
//	close | state | files | commits | index bucket=B
//	    state ends with the error that makes the table refuse writes, if any.
//	read bucket=B from=O | time bucket=B at=SECONDS
//	retention [bucket=B] [floor=O] [max-bytes=N] [max-age=D]
//	tick d=DURATION
//	    advance the clock (each append or write advances it by 1s too).
func TestRecovery(t *testing.T) {
	datadriven.Walk(t, "testdata/recovery", func(t *testing.T, path string) {
		e := newRecoveryEnv()
		datadriven.RunTest(t, path, e.run)
		if e.tl != nil {
			if err := e.tl.Close(); err != nil {
				t.Errorf("close at the end of the script: %v", err)
			}
		}
	})
}

const (
	recoveryDir       = "/t"
	recoveryBatchSize = 100 // bytes, header included: positions are easy to read
)

var recoveryEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// recoveryEnv is the state a script drives.
type recoveryEnv struct {
	fs    *vfs.MemFS
	clock *fakeClock
	logs  *lineHandler
	opts  Options
	n     int // buckets
	tl    *TableLog
	write int           // writes so far: labels batches
	room  *atomic.Int64 // the bytes left for writes (disk), nil: no limit
}

func newRecoveryEnv() *recoveryEnv {
	e := &recoveryEnv{fs: vfs.NewMem(), clock: newClock(recoveryEpoch), logs: &lineHandler{sink: &lineSink{}}, n: 2}
	e.opts = Options{SegmentBytes: 1 << 10, IndexIntervalBytes: 256, Now: e.clock.now, Logger: slog.New(e.logs)}
	return e
}

func (e *recoveryEnv) run(t *testing.T, td *datadriven.TestData) string {
	e.logs.take() // only what this command logs is printed
	cmd, ok := map[string]func(*testing.T, *datadriven.TestData) string{
		"open": e.cmdOpen, "close": e.cmdClose, "append": e.cmdAppend, "write": e.cmdAppend,
		"crash": e.cmdCrash, "truncate": e.cmdTruncate, "flip": e.cmdFlip, "remove": e.cmdRemove,
		"state": e.cmdState, "files": e.cmdFiles, "commits": e.cmdCommits, "index": e.cmdIndex,
		"read": e.cmdRead, "time": e.cmdTime, "retention": e.cmdRetention, "tick": e.cmdTick,
		"disk": e.cmdDisk,
	}[td.Cmd]
	if !ok {
		td.Fatalf(t, "unknown command %q", td.Cmd)
	}
	if needsTable(td.Cmd) && e.tl == nil {
		td.Fatalf(t, "%s: no open table", td.Cmd)
	}
	// What the log logged (recovery cuts, rebuilt indexes, deleted
	// segments) is part of the result.
	return cmd(t, td) + e.logs.take()
}

func needsTable(cmd string) bool {
	switch cmd {
	case "close", "append", "write", "state", "index", "read", "time", "retention":
		return true
	}
	return false
}

func (e *recoveryEnv) cmdOpen(t *testing.T, td *datadriven.TestData) string {
	if e.tl != nil {
		td.Fatalf(t, "open: the table is open")
	}
	td.MaybeScanArgs(t, "buckets", &e.n)
	td.MaybeScanArgs(t, "segment-bytes", &e.opts.SegmentBytes)
	td.MaybeScanArgs(t, "index-interval", &e.opts.IndexIntervalBytes)
	opts := e.opts
	opts.FS = e.fs
	tl, err := OpenTable(recoveryDir, e.n, opts)
	var out strings.Builder
	out.WriteString(e.logs.take())
	if err != nil {
		fmt.Fprintf(&out, "error: %s\n", errText(err))
		return out.String()
	}
	e.tl = tl
	out.WriteString(e.state())
	return out.String()
}

func (e *recoveryEnv) cmdClose(t *testing.T, td *datadriven.TestData) string {
	err := e.tl.Close()
	e.tl = nil
	if err != nil {
		return fmt.Sprintf("error: %s\n", errText(err))
	}
	return "ok\n"
}

// cmdAppend runs append and write.
func (e *recoveryEnv) cmdAppend(t *testing.T, td *datadriven.TestData) string {
	size := recoveryBatchSize
	td.MaybeScanArgs(t, "size", &size)
	e.write++
	e.clock.add(time.Second)
	parts := make([][]Batch, e.n)
	for _, line := range strings.Split(strings.TrimSpace(td.Input), "\n") {
		bucket, rows, ok := strings.Cut(line, ":")
		b, err := strconv.Atoi(strings.TrimSpace(bucket))
		if !ok || err != nil || b < 0 || b >= e.n {
			td.Fatalf(t, "bad part %q: want \"bucket: rows rows ...\"", line)
		}
		for _, f := range strings.Fields(rows) {
			n, err := strconv.Atoi(f)
			if err != nil {
				td.Fatalf(t, "bad row count %q", f)
			}
			id := int64(e.write)*100 + int64(len(parts[b]))
			parts[b] = append(parts[b], payload(t, id, int32(n), size-HeaderSize))
		}
	}
	label := fmt.Sprintf("w%d", e.write)
	var out strings.Builder
	if td.Cmd == "write" {
		_, res, err := e.tl.write(parts)
		if err != nil {
			return fmt.Sprintf("%s refused\nerror: %s\n", label, errText(err))
		}
		fmt.Fprintf(&out, "%s written, not committed\n", label)
		writeResults(&out, parts, res)
		return out.String()
	}
	if arg, ok := td.Arg("fail-sync"); ok {
		e.fs.InjectError(e.failSyncs(arg.Vals))
		defer e.fs.InjectError(nil)
	}
	res, err := e.tl.Append(parts)
	switch {
	case err != nil && res == nil:
		fmt.Fprintf(&out, "%s refused\n", label)
	case err != nil:
		fmt.Fprintf(&out, "%s written, not acknowledged\n", label)
	default:
		fmt.Fprintf(&out, "%s acknowledged\n", label)
	}
	writeResults(&out, parts, res)
	if err != nil {
		fmt.Fprintf(&out, "error: %s\n", errText(err))
	}
	return out.String()
}

// errText prints an error on one line per joined error, indented after the
// first.
func errText(err error) string { return strings.ReplaceAll(err.Error(), "\n", "\n  ") }

func writeResults(out *strings.Builder, parts [][]Batch, res [][]AppendResult) {
	if res == nil {
		return
	}
	for b, part := range parts {
		if len(part) == 0 {
			continue
		}
		fmt.Fprintf(out, "  %d:", b)
		for i, p := range part {
			base := res[b][i].BaseOffset
			fmt.Fprintf(out, " %s[%d,%d)", batchLabel(p), base, base+int64(p.RecordCount()))
		}
		out.WriteString("\n")
	}
}

var errInjectedSync = errors.New("injected fsync failure")

// failSyncs fails the fsyncs of the commit file ("commits") and of the
// segments of the buckets named.
func (e *recoveryEnv) failSyncs(names []string) vfs.Injector {
	return func(op vfs.Op, name string) error {
		if op != vfs.OpSync {
			return nil
		}
		for _, n := range names {
			if n == commitFileName && name == path.Join(recoveryDir, commitFileName) ||
				strings.HasPrefix(name, path.Join(recoveryDir, n)+"/") && strings.HasSuffix(name, logSuffix) {
				return errInjectedSync
			}
		}
		return nil
	}
}

func (e *recoveryEnv) cmdCrash(t *testing.T, td *datadriven.TestData) string {
	keep := td.HasArg("keep-unsynced")
	crashed := e.fs.CrashClone(vfs.CrashOptions{KeepUnsynced: keep})
	before, after := fileSizes(t, e.fs), fileSizes(t, crashed)
	e.fs, e.tl = crashed, nil
	if e.room != nil { // the disk is still full after the crash
		e.fs.LimitSpace(e.room)
	}
	var out strings.Builder
	for _, name := range slices.Sorted(maps.Keys(before)) {
		b := before[name]
		a, ok := after[name]
		switch {
		case !ok:
			fmt.Fprintf(&out, "%s: lost (its directory entry was not synced)\n", name)
		case a < b:
			fmt.Fprintf(&out, "%s: %d bytes, %d unsynced bytes lost\n", name, a, b-a)
		default:
			fmt.Fprintf(&out, "%s: %d bytes\n", name, a)
		}
	}
	return out.String()
}

func (e *recoveryEnv) cmdDisk(t *testing.T, td *datadriven.TestData) string {
	switch {
	case td.HasArg("full"):
		var room int64
		td.MaybeScanArgs(t, "room", &room)
		e.room = new(atomic.Int64)
		e.room.Store(room)
		e.fs.LimitSpace(e.room)
		return fmt.Sprintf("disk full after %d more bytes\n", room)
	case td.HasArg("free"):
		e.room = nil
		e.fs.LimitSpace(nil)
		return "disk has space\n"
	}
	td.Fatalf(t, "disk: want full or free")
	return ""
}

func (e *recoveryEnv) cmdTruncate(t *testing.T, td *datadriven.TestData) string {
	name := e.fileArg(t, td)
	var size int64
	td.ScanArgs(t, "size", &size)
	old := e.fileSize(t, name)
	f, err := e.fs.OpenAppend(name)
	if err != nil {
		td.Fatalf(t, "%v", err)
	}
	if err := errors.Join(f.Truncate(size), f.Sync(), f.Close()); err != nil {
		td.Fatalf(t, "%v", err)
	}
	return fmt.Sprintf("%s: %d -> %d bytes\n", shortName(name), old, size)
}

func (e *recoveryEnv) cmdFlip(t *testing.T, td *datadriven.TestData) string {
	name := e.fileArg(t, td)
	var pos int
	td.ScanArgs(t, "pos", &pos)
	mask := byte(0x01)
	if arg, ok := td.Arg("xor"); ok {
		v, err := strconv.ParseUint(arg.SingleVal(t), 0, 8)
		if err != nil || v == 0 {
			td.Fatalf(t, "bad xor %q", arg.Vals[0])
		}
		mask = byte(v)
	}
	data, err := readFile(e.fs, name)
	if err != nil || pos >= len(data) {
		td.Fatalf(t, "flip %s at %d: %v (%d bytes)", name, pos, err, len(data))
	}
	old := data[pos]
	data[pos] ^= mask
	// MemFS has no WriteAt: rewrite the file whole, durably.
	if err := writeFileSync(e.fs, name, data); err != nil {
		td.Fatalf(t, "%v", err)
	}
	return fmt.Sprintf("%s: byte %d %#02x -> %#02x\n", shortName(name), pos, old, data[pos])
}

func (e *recoveryEnv) cmdRemove(t *testing.T, td *datadriven.TestData) string {
	name := e.fileArg(t, td)
	if err := errors.Join(e.fs.Remove(name), e.fs.SyncDir(path.Dir(name))); err != nil {
		td.Fatalf(t, "%v", err)
	}
	return fmt.Sprintf("%s: removed\n", shortName(name))
}

func (e *recoveryEnv) cmdState(t *testing.T, td *datadriven.TestData) string { return e.state() }

// state prints every bucket (offsets, segments, the rows a reader returns
// from the start) and the table's committed ends.
func (e *recoveryEnv) state() string {
	var out strings.Builder
	for b := range e.tl.Buckets() {
		l := e.tl.Bucket(b)
		st := l.Stats()
		fmt.Fprintf(&out, "bucket %d: start %d, end %d, committed %d\n", b, st.Start, st.Next, st.Committed)
		for _, s := range describeSegments(l) {
			fmt.Fprintf(&out, "  %s\n", s)
		}
		fmt.Fprintf(&out, "  rows: %s\n", readLabels(l, st.Start))
	}
	fmt.Fprintf(&out, "committed ends: %v\n", e.tl.CommittedEnds())
	if err := e.tl.Err(); err != nil {
		fmt.Fprintf(&out, "refuses writes: %s\n", errText(err))
	}
	return out.String()
}

// describeSegments returns a line per segment of l.
func describeSegments(l *Log) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, s := range l.mu.segments {
		kind := "active"
		if s.sealed {
			kind = "sealed"
		}
		out = append(out, fmt.Sprintf("%d.log: offsets [%d,%d), %d bytes, %s, %s",
			s.base, s.base, s.next, s.size, kind, plural(len(s.index), "index entry", "index entries")))
	}
	return out
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// readLabels reads l from offset from to its committed end and names the
// batches it returns.
func readLabels(l *Log, from int64) string {
	r, err := l.NewReader(from)
	if err != nil {
		return "error: " + err.Error()
	}
	defer r.Close()
	var labels []string
	for {
		bs, _, err := r.Next(nil, 1<<10)
		if err != nil {
			labels = append(labels, "error: "+err.Error())
			break
		}
		if len(bs) == 0 {
			break
		}
		for _, b := range bs {
			l := fmt.Sprintf("%s[%d,%d)", batchLabel(b), b.BaseOffset(), b.NextOffset())
			if err := b.Check(); err != nil {
				l += fmt.Sprintf(" (bad: %v)", err)
			}
			labels = append(labels, l)
		}
	}
	if len(labels) == 0 {
		return "none"
	}
	return strings.Join(labels, " ")
}

// batchLabel names a batch by the write and the part that made it.
func batchLabel(b Batch) string {
	msg, err := b.ArrowMessage()
	if err != nil || len(msg) < 8 {
		return "?"
	}
	id := int64(binary.LittleEndian.Uint64(msg))
	return fmt.Sprintf("w%d.%d", id/100, id%100)
}

func (e *recoveryEnv) cmdFiles(t *testing.T, td *datadriven.TestData) string {
	now, durable := fileSizes(t, e.fs), fileSizes(t, e.fs.CrashClone(vfs.CrashOptions{}))
	var out strings.Builder
	for _, name := range slices.Sorted(maps.Keys(now)) {
		fmt.Fprintf(&out, "%s: %d bytes", name, now[name])
		switch d, ok := durable[name]; {
		case !ok:
			out.WriteString(", entry not durable")
		case d != now[name]:
			fmt.Fprintf(&out, ", %d synced", d)
		}
		out.WriteString("\n")
	}
	return out.String()
}

// cmdCommits prints the records of the commit file, and checks that the last
// two are those recovery reads.
func (e *recoveryEnv) cmdCommits(t *testing.T, td *datadriven.TestData) string {
	name := path.Join(recoveryDir, commitFileName)
	buf, err := readFile(e.fs, name)
	if err != nil {
		return fmt.Sprintf("error: %v\n", err)
	}
	var out strings.Builder
	var ends [][]int64
	for len(buf) > 0 {
		seq, rec, n, ok := decodeCommit(buf)
		if !ok {
			fmt.Fprintf(&out, "%d bytes that are not a valid record\n", len(buf))
			break
		}
		fmt.Fprintf(&out, "seq %d: ends %v\n", seq, rec)
		ends = append(ends, rec)
		buf = buf[n:]
	}
	last, err := readLastCommits(e.fs, name, e.n, e.opts.Sync == SyncAlways)
	if err != nil {
		fmt.Fprintf(&out, "recovery reads: error: %v\n", err)
	} else if want := ends[max(0, len(ends)-2):]; !slices.EqualFunc(last, want, slices.Equal) {
		td.Fatalf(t, "readLastCommits returned %v, the file's last records are %v", last, want)
	}
	return out.String()
}

// cmdIndex prints the sparse index of every segment of a bucket, as held in
// memory, and how the index files on disk compare with it.
func (e *recoveryEnv) cmdIndex(t *testing.T, td *datadriven.TestData) string {
	var b int
	td.ScanArgs(t, "bucket", &b)
	l := e.tl.Bucket(b)
	l.mu.Lock()
	defer l.mu.Unlock()
	var out strings.Builder
	for _, s := range l.mu.segments {
		fmt.Fprintf(&out, "%d.log:", s.base)
		for _, x := range s.index {
			fmt.Fprintf(&out, " %d@%d(t=%s)", x.offset, x.pos, e.since(x.ts))
		}
		out.WriteString("\n")
		if !s.sealed {
			out.WriteString("  active: index in memory only\n")
			continue
		}
		idx, ierr := readFile(e.fs, s.path(indexSuffix))
		tidx, terr := readFile(e.fs, s.path(timeIndexSuffix))
		switch onDisk, ok := s.decodeIndexes(idx, tidx, s.size); {
		case ierr != nil || terr != nil:
			fmt.Fprintf(&out, "  files: %v\n", errors.Join(ierr, terr))
		case !ok:
			out.WriteString("  files: inconsistent\n")
		case !slices.Equal(onDisk, s.index):
			out.WriteString("  files: differ from memory\n")
		default:
			out.WriteString("  files: match\n")
		}
	}
	return out.String()
}

// since prints a commit timestamp as seconds after the script's epoch.
func (e *recoveryEnv) since(ts int64) string {
	return fmt.Sprintf("%gs", time.UnixMicro(ts).Sub(recoveryEpoch).Seconds())
}

func (e *recoveryEnv) cmdRead(t *testing.T, td *datadriven.TestData) string {
	var b int
	var from int64
	td.ScanArgs(t, "bucket", &b)
	td.ScanArgs(t, "from", &from)
	return readLabels(e.tl.Bucket(b), from) + "\n"
}

func (e *recoveryEnv) cmdTime(t *testing.T, td *datadriven.TestData) string {
	var b int
	var at float64
	td.ScanArgs(t, "bucket", &b)
	td.ScanArgs(t, "at", &at)
	ts := recoveryEpoch.Add(time.Duration(at * float64(time.Second))).UnixMicro()
	off, err := e.tl.Bucket(b).OffsetForTime(ts)
	if err != nil {
		return fmt.Sprintf("error: %v\n", err)
	}
	return fmt.Sprintf("offset %d\n", off)
}

func (e *recoveryEnv) cmdRetention(t *testing.T, td *datadriven.TestData) string {
	p := Retention{Floor: math.MaxInt64}
	td.MaybeScanArgs(t, "floor", &p.Floor)
	td.MaybeScanArgs(t, "max-bytes", &p.MaxBytes)
	if arg, ok := td.Arg("max-age"); ok {
		d, err := time.ParseDuration(arg.SingleVal(t))
		if err != nil {
			td.Fatalf(t, "%v", err)
		}
		p.MaxAge = d
	}
	buckets := make([]int, e.tl.Buckets())
	for b := range buckets {
		buckets[b] = b
	}
	if td.HasArg("bucket") {
		buckets = buckets[:1]
		td.ScanArgs(t, "bucket", &buckets[0])
	}
	var out strings.Builder
	for _, b := range buckets {
		n, err := e.tl.Bucket(b).ApplyRetention(p)
		fmt.Fprintf(&out, "bucket %d: deleted %s", b, plural(n, "segment", "segments"))
		if err != nil {
			fmt.Fprintf(&out, ", error: %v", err)
		}
		out.WriteString("\n")
	}
	return out.String()
}

func (e *recoveryEnv) cmdTick(t *testing.T, td *datadriven.TestData) string {
	var s string
	td.ScanArgs(t, "d", &s)
	d, err := time.ParseDuration(s)
	if err != nil {
		td.Fatalf(t, "%v", err)
	}
	e.clock.add(d)
	return fmt.Sprintf("t=%s\n", e.since(e.clock.now().UnixMicro()))
}

// fileArg resolves file=: "commits", or "<bucket>/<base>.<suffix>" with the
// base offset written without its padding.
func (e *recoveryEnv) fileArg(t *testing.T, td *datadriven.TestData) string {
	var s string
	td.ScanArgs(t, "file", &s)
	if s == commitFileName {
		return path.Join(recoveryDir, s)
	}
	dir, file, ok := strings.Cut(s, "/")
	base, suffix, ok2 := strings.Cut(file, ".")
	n, err := strconv.ParseInt(base, 10, 64)
	if !ok || !ok2 || err != nil {
		td.Fatalf(t, "bad file %q: want commits or bucket/base.suffix", s)
	}
	return path.Join(recoveryDir, dir, segmentName(n, "."+suffix))
}

func (e *recoveryEnv) fileSize(t *testing.T, name string) int64 {
	fi, err := e.fs.Stat(name)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// shortName is the name a script uses for a file of the table.
func shortName(name string) string {
	rel := strings.TrimPrefix(name, recoveryDir+"/")
	dir, file := path.Split(rel)
	if base, suffix, ok := strings.Cut(file, "."); ok && len(base) == 20 {
		if n, err := strconv.ParseInt(base, 10, 64); err == nil {
			return dir + strconv.FormatInt(n, 10) + "." + suffix
		}
	}
	return rel
}

// fileSizes maps the short name of every file under the table directory to
// its size.
func fileSizes(t *testing.T, fs vfs.FS) map[string]int64 {
	out := map[string]int64{}
	var walk func(dir string)
	walk = func(dir string) {
		names, err := fs.List(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			p := path.Join(dir, n)
			fi, err := fs.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			if fi.IsDir() {
				walk(p)
				continue
			}
			out[shortName(p)] = fi.Size()
		}
	}
	if _, err := fs.Stat(recoveryDir); err == nil {
		walk(recoveryDir)
	}
	return out
}

// lineHandler is a slog.Handler that keeps records as lines of text, without
// times, so that what recovery logs can be part of the expected output.
// Handlers made by WithAttrs share the lines of the one they came from.
type lineHandler struct {
	sink  *lineSink
	attrs []slog.Attr
}

type lineSink struct {
	mu    sync.Mutex
	lines []string
}

func (h *lineHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *lineHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s", strings.ToLower(r.Level.String()), r.Message)
	put := func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value.Any())
		return true
	}
	for _, a := range h.attrs {
		put(a)
	}
	r.Attrs(put)
	h.sink.mu.Lock()
	h.sink.lines = append(h.sink.lines, b.String())
	h.sink.mu.Unlock()
	return nil
}

func (h *lineHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &lineHandler{sink: h.sink, attrs: append(slices.Clip(h.attrs), attrs...)}
}

// WithGroup keeps keys unqualified: the log logs no groups.
func (h *lineHandler) WithGroup(string) slog.Handler { return h }

// take returns the lines logged since the last call, each ending in a newline.
func (h *lineHandler) take() string {
	h.sink.mu.Lock()
	defer h.sink.mu.Unlock()
	var out strings.Builder
	for _, l := range h.sink.lines {
		out.WriteString(l + "\n")
	}
	h.sink.lines = nil
	return out.String()
}
