package tiering

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/lakestream/lakestream/catalog"
	"github.com/lakestream/lakestream/tables"
)

// servingRemote is the tables.Remote of a node that reads the buckets
// listed in remote from another node's store, calling its ServeRemote
// directly; it counts the reads.
type servingRemote struct {
	src    *tables.Store
	mu     sync.Mutex
	remote []int
	reads  int
}

func (r *servingRemote) RemoteBuckets(context.Context, int64) ([]tables.RemoteBucket, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []tables.RemoteBucket
	for _, b := range r.remote {
		out = append(out, tables.RemoteBucket{Bucket: b, Nodes: []string{"a"}})
	}
	return out, nil
}

func (r *servingRemote) ServesAll(int64, int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.remote) == 0
}

func (r *servingRemote) ReadRemote(ctx context.Context, rb tables.RemoteBucket, req []byte, frame func([]byte) error) error {
	r.mu.Lock()
	r.reads++
	r.mu.Unlock()
	return r.src.ServeRemote(ctx, req, func(f []byte) error { return frame(slices.Clone(f)) })
}

func (r *servingRemote) readCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reads
}

// remoteLakeEnvs are two nodes over one lake: a holds every bucket of
// bars, b holds none (its log stays empty) and reads them from a; b holds
// the committer lease, its rounds bounded to maxRows rows.
func remoteLakeEnvs(t *testing.T, maxRows int64) (a, b *lakeEnv, rem *servingRemote) {
	board := newLeaseBoard()
	a = newLakeEnv(t, Config{Leases: boardLeases{board, "a"}})
	rem = &servingRemote{src: a.store, remote: []int{0, 1, 2}}
	b = &lakeEnv{t: t, dir: t.TempDir(), cfg: Config{Leases: boardLeases{board, "b"}, MaxRoundRows: maxRows}, ice: a.ice}
	ctx := context.Background()
	var err error
	if b.cat, err = catalog.Open(ctx, filepath.Join(b.dir, "catalog.db"), catalog.Config{DefaultBucketNum: 1}); err != nil {
		t.Fatal(err)
	}
	if b.store, err = tables.Open(ctx, b.cat, tables.Config{Dir: filepath.Join(b.dir, "tables"), Remote: rem}); err != nil {
		t.Fatal(err)
	}
	b.startService()
	t.Cleanup(func() {
		b.store.Close()
		b.cat.Close()
	})
	for _, e := range []*lakeEnv{a, b} {
		e.exec(createBars)
	}
	board.give(a.table("bars").Def().ID, "b")
	return a, b, rem
}

// roundsUntilDone runs rounds of bars on e until one tiers nothing, and
// returns the rows tiered.
func roundsUntilDone(t *testing.T, e *lakeEnv) int64 {
	t.Helper()
	var rows int64
	for i := 0; ; i++ {
		res, err := e.tryRound()
		if err != nil {
			t.Fatal(err)
		}
		if res.Rows == 0 {
			return rows
		}
		if i > 100 {
			t.Fatal("rounds go on tiering rows")
		}
		rows += res.Rows
	}
}

// A committer holding no replica of a table's buckets tiers them read
// from the node that does, in rounds of bounded size: every row is in the
// lake exactly once, with the offsets of the serving node's log, and the
// lake and the union read them all.
func TestSharedLakeCommitterReadsOtherNodesBuckets(t *testing.T) {
	a, b, rem := remoteLakeEnvs(t, 120)
	for i := range 20 {
		a.ingest("bars", i*50, 50)
	}
	if got := roundsUntilDone(t, b); got != 1000 {
		t.Fatalf("rounds tiered %d rows, want 1000", got)
	}
	if rem.readCount() == 0 {
		t.Fatal("no bucket was read from the other node")
	}
	id := b.table("bars").Def().ID
	lt := b.svc.lookup(id)
	if got, want := lt.state.Load().offsets, a.table("bars").Log().CommittedEnds(); !slices.Equal(got, want) {
		t.Fatalf("lake offsets %v, want the serving log's ends %v", got, want)
	}
	checkSnapshotOffsets(t, lt.state.Load().tbl, 1000)
	if got := b.totals("bars$lake"); got != want(1000) {
		t.Fatalf("lake: %v", got)
	}

	// More rows; bucket 0 is now read here (b holds the same rows there,
	// as a replica would), the others still from a.
	for i := 20; i < 30; i++ {
		a.ingest("bars", i*50, 50)
	}
	for i := range 30 {
		// b's log: the same writes, so the same batches at the same
		// offsets, as replication makes them.
		b.ingest("bars", i*50, 50)
	}
	rem.mu.Lock()
	rem.remote = []int{1, 2}
	rem.mu.Unlock()
	if got := roundsUntilDone(t, b); got != 500 {
		t.Fatalf("second rounds tiered %d rows, want 500", got)
	}
	checkSnapshotOffsets(t, lt.state.Load().tbl, 1500)
	if err := a.svc.follow(context.Background(), a.svc.lookup(id)); err != nil {
		t.Fatal(err)
	}
	for _, e := range []*lakeEnv{a, b} {
		if got := e.totals("bars$lake"); got != want(1500) {
			t.Fatalf("lake after the second rounds: %v", got)
		}
	}
	if got := a.totals("bars"); got != want(1500) {
		t.Fatalf("union on the serving node: %v", got)
	}
}

// A serving replica whose log does not reach down to the lake's offset
// (its retained log starts above it) fails the round: the committer
// skips no offset, and commits nothing.
func TestSharedLakeRemoteGapFailsTheRound(t *testing.T) {
	a, b, _ := remoteLakeEnvs(t, 1<<20)
	if _, err := b.tryRound(); err != nil { // b takes the lake over
		t.Fatal(err)
	}
	a.ingest("bars", 0, 300)
	id := b.table("bars").Def().ID
	lt := b.svc.lookup(id)
	// The lake says bucket 0 is tiered to offset 0, but the round starts
	// it one row further down the serving log than it is: pretend the
	// lake is at -1 there.
	st := lt.state.Load()
	bad := *st
	bad.offsets = slices.Clone(st.offsets)
	bad.offsets[0] = -1
	lt.state.Store(&bad)
	if _, err := b.tryRound(); err == nil || !strings.Contains(err.Error(), "offset 0 where -1 was due") {
		t.Fatalf("a round over a gap in the serving log: %v, want the gap named", err)
	}
	lt.state.Store(st)
	if got := roundsUntilDone(t, b); got != 300 {
		t.Fatalf("rounds tiered %d rows, want 300", got)
	}
	checkSnapshotOffsets(t, lt.state.Load().tbl, 300)
}
