package bench

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/lakestream/lakestream/internal/proc"
)

// The Fluss driver (fluss/Driver.java) is one JVM for the whole Run,
// driven over a pipe: a command line in, a JSON line out (the protocol is
// in Driver.java's header). It holds one connection per writer and one for
// the admin and the subscriptions, as the Kafka side holds one franz-go
// client per producer, and it stays warm across runs as they do.
//
// It generates its rows itself, row i as bench/data.go does (checked at
// start: a digest of the same rows on both sides must agree), rather than
// reading the harness's Arrow batches: the Fluss client takes rows
// (InternalRow), which it encodes into its own Arrow batches, so the Go
// batches would have to be decoded into rows in Java anyway, and Go and
// Java would need a shared file of every batch. Rows are generated before
// the clock, as the batches of the other sides are.
//
// What it measures mirrors the Go code it replaces: ingest is sendAll
// (writer w sends batches w, w+W, ...; the clock from the first send to
// the last ack); subscribe is measureRate and writeAtRate (the same
// schedule, warm-up batch and 30 s limits), and it hands back the raw
// times (each batch's call and ack, each row's receipt, ns since the
// subscription's start, one JVM clock), from which rateResult.latencies
// computes the same percentiles as for the other sides.

// flussDriver is the running driver.
type flussDriver struct {
	srv     *proc.Process
	stdin   io.WriteCloser
	replies chan string  // its stdout, line by line; closed when it exits
	cluster func() error // reports a Fluss process that has exited
	mu      sync.Mutex   // one command at a time
}

// flussReply is any reply of the driver.
type flussReply struct {
	Ready         bool   `json:"ready"`
	Error         string `json:"error"`
	Digest        string `json:"digest"`
	Nanos         int64  `json:"nanos"`
	ScheduleNanos int64  `json:"scheduleNanos"`
}

// compileDriver compiles the embedded Driver.java against the client jar
// into dir/driver-<hash of the source>, once, and returns that directory.
func compileDriver(ctx context.Context, dir, clientCP string) (string, error) {
	src, err := flussFiles.ReadFile("fluss/Driver.java")
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(src)
	out := filepath.Join(dir, "driver-"+hex.EncodeToString(sum[:6]))
	if fileExists(filepath.Join(out, "Driver.class")) {
		return out, nil
	}
	javac, err := exec.LookPath("javac")
	if err != nil {
		return "", errors.New("javac not found on PATH (a JDK 17 or newer compiles the Fluss driver)")
	}
	tmp, err := os.MkdirTemp(dir, "driver.tmp")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	if err := os.WriteFile(filepath.Join(tmp, "Driver.java"), src, 0o644); err != nil {
		return "", err
	}
	cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if b, err := exec.CommandContext(cctx, javac, "-d", tmp, "-cp", clientCP, filepath.Join(tmp, "Driver.java")).CombinedOutput(); err != nil {
		return "", fmt.Errorf("javac Driver.java: %v: %s", err, proc.Tail(b, 1500))
	}
	return out, os.Rename(tmp, out)
}

// startDriver starts the driver with classpath cp, waits until it sees a
// tablet server, and checks that it generates the rows bench/data.go does.
func startDriver(ctx context.Context, java, cp, bootstrap string, cfg Config, cluster func() error) (*flussDriver, error) {
	// The ingest batches are generated up front as Fluss rows, about 250
	// bytes each on the heap.
	heap := fmt.Sprintf("-Xmx%dm", 512+cfg.Rows/4000)
	args := append([]string{heap}, flussJVM...)
	cmd := exec.Command(java, append(args, "-cp", cp, "Driver", bootstrap, strconv.Itoa(cfg.Writers))...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	pr, pw := io.Pipe()
	cmd.Stdout = pw
	d := &flussDriver{stdin: stdin, replies: make(chan string), cluster: cluster}
	if d.srv, err = proc.Start("fluss driver", cmd, nil, syscall.SIGTERM); err != nil {
		return nil, err
	}
	go func() {
		<-d.srv.Exited()
		pw.Close()
	}()
	go func() {
		defer close(d.replies)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "{") {
				d.replies <- sc.Text()
			}
		}
	}()
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	if _, err := d.reply(ctx); err != nil {
		return nil, errors.Join(fmt.Errorf("fluss driver: %w", err), d.srv.Stop())
	}
	if err := d.checkRows(ctx); err != nil {
		return nil, errors.Join(err, d.srv.Stop())
	}
	return d, nil
}

// checkRows compares the digest of rows [-512, 4096) in Java and in Go:
// the warm-up ids are negative, and 4,608 rows reach every kind.
func (d *flussDriver) checkRows(ctx context.Context) error {
	const from, n = -512, 4608
	r, err := d.call(ctx, "digest", from, n)
	if err != nil {
		return err
	}
	rec := events(from, n)
	defer rec.Release()
	if want := strconv.FormatUint(rowsDigest(rec), 10); r.Digest != want {
		return fmt.Errorf("fluss driver: rows [%d, %d) have digest %s in Java, %s in Go: Driver.java and data.go disagree", from, from+n, r.Digest, want)
	}
	return nil
}

// rowsDigest is Driver.digest: FNV-1a over id, amount's bits, ts, then
// kind's bytes, row by row.
func rowsDigest(rec arrow.RecordBatch) uint64 {
	ids := rec.Column(0).(*array.Int64).Int64Values()
	amounts := rec.Column(1).(*array.Float64).Float64Values()
	kinds := rec.Column(2).(*array.String)
	ts := rec.Column(3).(*array.Timestamp).TimestampValues()
	const prime = 0x100000001b3
	h := uint64(0xcbf29ce484222325)
	for i := range ids {
		for _, v := range []uint64{uint64(ids[i]), math.Float64bits(amounts[i]), uint64(ts[i])} {
			h = (h ^ v) * prime
		}
		for _, b := range []byte(kinds.Value(i)) {
			h = (h ^ uint64(b)) * prime
		}
	}
	return h
}

// call sends one command (its words separated by spaces) and waits for
// its reply.
func (d *flussDriver) call(ctx context.Context, words ...any) (*flussReply, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, err := fmt.Fprintln(d.stdin, words...); err != nil {
		return nil, fmt.Errorf("fluss driver: %w (%v)", err, d.srv.Alive())
	}
	return d.reply(ctx)
}

// reply waits for the next reply, the driver's exit, a Fluss process's
// exit, or the end of ctx.
func (d *flussDriver) reply(ctx context.Context) (*flussReply, error) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case line, ok := <-d.replies:
			if !ok {
				<-d.srv.Exited()
				return nil, d.srv.Alive()
			}
			var r flussReply
			if err := json.Unmarshal([]byte(line), &r); err != nil {
				return nil, fmt.Errorf("fluss driver: reply %q: %w", line, err)
			}
			if r.Error != "" {
				return nil, errors.New(r.Error)
			}
			return &r, nil
		case <-tick.C:
			if err := d.cluster(); err != nil {
				return nil, err
			}
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// ingest is the Fluss side of one ingest measurement: the driver writes
// the rows of recs, cut as recs are, into a fresh table, checks its row
// count and drops it.
func (f *flussServer) ingest(ctx context.Context, e *env, recs []arrow.RecordBatch, label string) (time.Duration, error) {
	rows, size := totalRows(recs), recs[0].NumRows()
	for i, rec := range recs { // batches(rows, size): the driver cuts its rows the same way
		if first := rec.Column(0).(*array.Int64).Value(0); first != int64(i)*size || (rec.NumRows() != size && i != len(recs)-1) {
			return 0, fmt.Errorf("fluss: batch %d starts at id %d with %d rows: not batches(%d, %d)", i, first, rec.NumRows(), rows, size)
		}
	}
	e.tables++
	table := fmt.Sprintf("ingest_%d", e.tables)
	e.prog.step(rows, "rows", "%s: fluss", label)
	r, err := f.driver.call(ctx, "ingest", table, rows, size, f.codec)
	if err != nil {
		return 0, fmt.Errorf("fluss: ingest into %s: %w", table, err)
	}
	e.prog.add(rows)
	return time.Duration(r.Nanos), nil
}

// flussFeed is Fluss under the subscription workload: the driver
// measures each rate itself (a selfTimed side).
type flussFeed struct {
	f       *flussServer
	streams int
}

func (s *flussFeed) system() string { return baselineSystems["fluss"] }

// measureRate is measureRate for Fluss: the same rate, duration, batch
// size and writers, run in the driver; the percentiles computed here.
func (s *flussFeed) measureRate(ctx context.Context, e *env, rate int, d time.Duration, label string) (*rateResult, error) {
	per := e.cfg.SubscribeBatchRows
	nb := max(1, int(float64(rate)*d.Seconds())/per)
	e.prog.step(int64(nb*per), "rows", "subscribe %s %s: %s rows/s for %s", s.system(), label, human(float64(rate)), d)
	s.streams++
	table := fmt.Sprintf("sub_%d", s.streams)
	file := filepath.Join(s.f.dir, "subscribe.times")
	r, err := s.f.driver.call(ctx, "subscribe", table, rate, nb, per, s.f.codec, file)
	if err != nil {
		return nil, fmt.Errorf("fluss: subscribe %s at %d rows/s: %w", table, rate, err)
	}
	times, recv, err := readSubscribeTimes(file, nb, nb*per)
	if err != nil {
		return nil, err
	}
	times.schedule = time.Duration(r.ScheduleNanos)
	res := &rateResult{rate: rate, rows: int64(nb * per), achieved: float64(nb*per) / times.schedule.Seconds()}
	res.drain = max(0, time.Duration(slices.Max(recv))-times.lastAck)
	if err := res.latencies(recv, times, per); err != nil {
		return nil, err
	}
	e.prog.add(int64(nb * per))
	return res, nil
}

// readSubscribeTimes reads the driver's times file: nb call times, nb ack
// times, rows receipt times, big-endian int64 ns since the start.
func readSubscribeTimes(file string, nb, rows int) (*writeTimes, []int64, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, nil, err
	}
	if len(b) != 8*(2*nb+rows) {
		return nil, nil, fmt.Errorf("fluss: %s has %d bytes, want %d", file, len(b), 8*(2*nb+rows))
	}
	at := func(i int) int64 { return int64(binary.BigEndian.Uint64(b[8*i:])) }
	t := &writeTimes{calls: make([]atomic.Int64, nb), acks: make([]atomic.Int64, nb)}
	for k := range nb {
		t.calls[k].Store(at(k))
		t.acks[k].Store(at(nb + k))
		t.lastAck = max(t.lastAck, time.Duration(at(nb+k)))
	}
	recv := make([]int64, rows)
	for i := range recv {
		recv[i] = at(2*nb + i)
	}
	return t, recv, nil
}
