package columnarlog

import (
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/lakestream/lakestream/internal/vfs"
)

// TestReplication runs the scripts in testdata/replication: each drives the
// replicas of a one-bucket replicated table, each on a MemFS of its own,
// through leader changes, writes, fetches, truncations and crashes, and
// states what each replica holds. go test -run TestReplication -rewrite
// regenerates the expected output; read the diff before committing it.
//
// Commands (r names a replica; a replica is opened on first use):
//
//	become-leader r=R epoch=E
//	append r=R
//	    one write per input line, a batch of that many rows each
//	    (labelled w<write>); prints where each landed.
//	fetch r=R leader=L
//	    R copies L's durable batches above its end (AppendReplica).
//	reconcile r=R leader=L
//	    R finds where it diverges from L (Divergence) and truncates there.
//	truncate r=R to=O | hw r=R to=O | end-for-epoch r=R epoch=E
//	crash r=R | close r=R | checkpoint r=R
//	state r=R
//	    the replica's ends, epoch history and batches (label[base,next)
//	    epoch), and what a reader sees.
func TestReplication(t *testing.T) {
	datadriven.Walk(t, "testdata/replication", func(t *testing.T, path string) {
		e := &replEnv{clock: newClock(recoveryEpoch), reps: map[string]*replica{}, logs: &lineHandler{sink: &lineSink{}}}
		datadriven.RunTest(t, path, e.run)
		for _, r := range e.reps {
			if r.tl != nil {
				r.tl.Close()
			}
		}
	})
}

type replEnv struct {
	clock *fakeClock
	reps  map[string]*replica
	logs  *lineHandler
	write int
}

func (e *replEnv) replica(t *testing.T, td *datadriven.TestData, arg string) *replica {
	var name string
	td.ScanArgs(t, arg, &name)
	r, ok := e.reps[name]
	if !ok {
		r = &replica{fs: vfs.NewMem(), n: 1}
		r.opts = Options{SegmentBytes: 1 << 10, IndexIntervalBytes: 256, Replicated: true,
			Now: e.clock.now, Logger: slog.New(e.logs)}
		e.reps[name] = r
	}
	if r.tl == nil {
		r.open(t)
	}
	return r
}

func (e *replEnv) run(t *testing.T, td *datadriven.TestData) string {
	e.logs.take()
	out := e.runCmd(t, td)
	return out + e.logs.take()
}

// runCmd is the script's dispatcher.
func (e *replEnv) runCmd(t *testing.T, td *datadriven.TestData) string {
	r := e.replica(t, td, "r")
	l := r.tl.Bucket(0)
	var n int64
	switch td.Cmd {
	case "become-leader":
		td.ScanArgs(t, "epoch", &n)
		return result(l.BecomeLeader(int32(n)))
	case "append":
		return e.appendLines(t, td, r)
	case "fetch":
		leader := e.replica(t, td, "leader")
		copied, err := fetch(t, leader.tl, r.tl, 0)
		return fmt.Sprintf("copied %d batches\n", copied) + result(err)
	case "reconcile":
		leader := e.replica(t, td, "leader")
		before := l.Durable()
		if err := reconcile(t, leader.tl, r.tl, 0); err != nil {
			return result(err)
		}
		return fmt.Sprintf("truncated [%d, %d) -> [%d, %d)\n", l.Start(), before, l.Start(), l.Durable())
	case "truncate":
		td.ScanArgs(t, "to", &n)
		return result(r.tl.Truncate(0, n))
	case "hw":
		td.ScanArgs(t, "to", &n)
		r.tl.SetHighWatermark(0, n)
		return fmt.Sprintf("high watermark %d\n", r.tl.HighWatermark(0))
	case "end-for-epoch":
		td.ScanArgs(t, "epoch", &n)
		epoch, end := l.EndForEpoch(int32(n))
		return fmt.Sprintf("epoch %d, end %d\n", epoch, end)
	case "checkpoint":
		return result(r.tl.CheckpointHighWatermarks())
	case "crash":
		r.fs, r.tl = r.fs.CrashClone(vfs.CrashOptions{}), nil
		return "crashed\n"
	case "close":
		err := r.tl.Close()
		r.tl = nil
		return result(err)
	case "state":
		return replicaState(t, r)
	}
	td.Fatalf(t, "unknown command %q", td.Cmd)
	return ""
}

func result(err error) string {
	if err != nil {
		return "error: " + errText(err) + "\n"
	}
	return "ok\n"
}

func (e *replEnv) appendLines(t *testing.T, td *datadriven.TestData, r *replica) string {
	var out strings.Builder
	for _, line := range strings.Split(strings.TrimSpace(td.Input), "\n") {
		rows, err := strconv.Atoi(strings.TrimSpace(line))
		if err != nil {
			td.Fatalf(t, "bad row count %q", line)
		}
		e.write++
		e.clock.add(time.Second)
		b := payload(t, int64(e.write)*100, int32(rows), 100-HeaderSize)
		res, err := r.tl.Append([][]Batch{{b}})
		if err != nil {
			fmt.Fprintf(&out, "w%d: error: %s\n", e.write, errText(err))
			continue
		}
		fmt.Fprintf(&out, "w%d[%d,%d) epoch %d\n", e.write, res[0][0].BaseOffset, res[0][0].BaseOffset+int64(rows), b.LeaderEpoch())
	}
	return out.String()
}

// replicaState prints a replica's ends, epochs and batches.
func replicaState(t *testing.T, r *replica) string {
	l := r.tl.Bucket(0)
	st := l.Stats()
	var out strings.Builder
	fmt.Fprintf(&out, "end %d, durable %d, high watermark %d, leader epoch %d\n", st.Next, st.Durable, st.Committed, l.LeaderEpoch())
	var epochs []string
	for _, e := range l.EpochHistory() {
		epochs = append(epochs, fmt.Sprintf("%d@%d", e.Epoch, e.Start))
	}
	fmt.Fprintf(&out, "epochs: %s\n", strings.Join(epochs, " "))
	var all []string
	for _, b := range replicaBatches(t, l, st.Durable) {
		all = append(all, fmt.Sprintf("%s[%d,%d)e%d", strings.TrimSuffix(batchLabel(b), ".0"), b.BaseOffset(), b.NextOffset(), b.LeaderEpoch()))
	}
	fmt.Fprintf(&out, "batches: %s\n", strings.Join(all, " "))
	fmt.Fprintf(&out, "readers see: %d batches\n", len(visibleBatches(t, l)))
	return out.String()
}
