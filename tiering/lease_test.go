package tiering

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/lakestream/lakestream/catalog"
	"github.com/lakestream/lakestream/tables"
)

// leaseBoard is a metadata store's committer leases in memory: one holder
// per table, and a token that grows with every new holder.
type leaseBoard struct {
	mu     sync.Mutex
	holder map[int64]string
	token  map[int64]int64
}

func newLeaseBoard() *leaseBoard {
	return &leaseBoard{holder: map[int64]string{}, token: map[int64]int64{}}
}

// give makes node the table's holder under a new token.
func (b *leaseBoard) give(tableID int64, node string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.holder[tableID] = node
	b.token[tableID]++
}

// boardLeases is one node's view of a leaseBoard (Leases).
type boardLeases struct {
	b    *leaseBoard
	self string
}

func (l boardLeases) Acquire(_ context.Context, tableID int64) (Lease, bool, error) {
	l.b.mu.Lock()
	defer l.b.mu.Unlock()
	if l.b.holder[tableID] != l.self {
		return Lease{}, false, nil
	}
	return Lease{TableID: tableID, Token: l.b.token[tableID], Expires: time.Now().Add(time.Hour)}, true, nil
}

func (l boardLeases) Release(context.Context, Lease) error { return nil }

// sharedLakeEnvs are two nodes' storage — each its own table catalog and
// log, holding the same rows at the same offsets as replicas do — over
// one Iceberg catalog and warehouse, each node's Service with its view of
// one leaseBoard.
func sharedLakeEnvs(t *testing.T) (a, b *lakeEnv, board *leaseBoard) {
	board = newLeaseBoard()
	a = newLakeEnv(t, Config{Leases: boardLeases{board, "a"}})
	b = &lakeEnv{t: t, dir: t.TempDir(), cfg: Config{Leases: boardLeases{board, "b"}}, ice: a.ice}
	ctx := context.Background()
	var err error
	if b.cat, err = catalog.Open(ctx, filepath.Join(b.dir, "catalog.db"), catalog.Config{DefaultBucketNum: 1}); err != nil {
		t.Fatal(err)
	}
	if b.store, err = tables.Open(ctx, b.cat, tables.Config{Dir: filepath.Join(b.dir, "tables")}); err != nil {
		t.Fatal(err)
	}
	b.startService()
	t.Cleanup(func() {
		b.store.Close()
		b.cat.Close()
	})
	for _, e := range []*lakeEnv{a, b} {
		e.exec(createBars) // the second finds the Iceberg table the first created
	}
	if a.table("bars").Def().ID != b.table("bars").Def().ID {
		t.Fatal("the two nodes' tables have different ids")
	}
	return a, b, board
}

// ingestBoth writes the same rows on both nodes, as replication would.
func ingestBoth(from, n int, envs ...*lakeEnv) {
	for _, e := range envs {
		e.ingest("bars", from, n)
	}
}

// tryRound runs a round of bars on e and returns its error.
func (e *lakeEnv) tryRound() (RoundResult, error) {
	e.svc.renewLeases(context.Background())
	return e.svc.Round(context.Background(), e.table("bars").Def().ID)
}

// A table of a shared lake is committed by the holder of its lease only;
// the lease moves, the new holder goes on from the lake's offsets, and a
// holder that lost its lease commits nothing once the new one committed:
// every row is in the lake exactly once, on both nodes' reads.
func TestSharedLakeOneCommitterPerTable(t *testing.T) {
	a, b, board := sharedLakeEnvs(t)
	id := a.table("bars").Def().ID
	board.give(id, "a")
	ingestBoth(0, 1000, a, b)

	if _, err := b.tryRound(); !errors.Is(err, ErrNotCommitter) {
		t.Fatalf("round on the node without the lease: %v, want ErrNotCommitter", err)
	}
	if res, err := a.tryRound(); err != nil || res.Rows != 1000 {
		t.Fatalf("holder's round: %+v, %v", res, err)
	}
	// b follows a's commit: its reads and retention see the lake.
	if err := b.svc.follow(context.Background(), b.svc.lookup(id)); err != nil {
		t.Fatal(err)
	}
	for _, e := range []*lakeEnv{a, b} {
		if got := e.totals("bars$lake"); got != want(1000) {
			t.Fatalf("lake after a's round: %v", got)
		}
		if got := e.totals("bars"); got != want(1000) {
			t.Fatalf("union after a's round: %v", got)
		}
	}

	// The lease moves to b; a still believes it holds its old one.
	ingestBoth(1000, 500, a, b)
	board.give(id, "b")
	if res, err := b.tryRound(); err != nil || res.Rows != 500 || res.From[0]+res.From[1]+res.From[2] != 1000 {
		t.Fatalf("new holder's round: %+v, %v", res, err)
	}
	ingestBoth(1500, 300, a, b)
	if _, err := a.svc.Round(context.Background(), id); !errors.Is(err, ErrNotCommitter) {
		t.Fatalf("round of the stale holder after the new one committed: %v, want ErrNotCommitter", err)
	}
	if _, err := a.svc.Maintain(context.Background(), id, true); !errors.Is(err, ErrNotCommitter) {
		t.Fatalf("maintenance of the stale holder: %v, want ErrNotCommitter", err)
	}
	if res, err := b.tryRound(); err != nil || res.Rows != 300 {
		t.Fatalf("holder's next round: %+v, %v", res, err)
	}
	if err := a.svc.follow(context.Background(), a.svc.lookup(id)); err != nil {
		t.Fatal(err)
	}
	for _, e := range []*lakeEnv{a, b} {
		if got := e.totals("bars$lake"); got != want(1800) {
			t.Fatalf("lake after the move: %v", got)
		}
		if got := e.totals("bars"); got != want(1800) {
			t.Fatalf("union after the move: %v", got)
		}
	}
	checkSnapshotOffsets(t, b.svc.lookup(id).state.Load().tbl, 1800)
}

// A holder that lost its lease and commits before the new holder's first
// commit is ordered before it: the new holder's commit fails the lake's
// snapshot assertion, and it tiers again from the stale holder's offsets.
// Nothing is tiered twice.
func TestSharedLakeStaleCommitBeforeNewHolder(t *testing.T) {
	a, b, board := sharedLakeEnvs(t)
	id := a.table("bars").Def().ID
	board.give(id, "a")
	ingestBoth(0, 1000, a, b)
	if _, err := a.tryRound(); err != nil {
		t.Fatal(err)
	}
	ingestBoth(1000, 700, a, b)
	board.give(id, "b")
	// b takes over (it reads the lake) but does not commit yet: its round
	// stops before the commit.
	b.svc.cfg.faults.beforeCommit = func() error { return errors.New("paused") }
	if _, err := b.tryRound(); err == nil {
		t.Fatal("b's paused round committed")
	}
	b.svc.cfg.faults.beforeCommit = nil
	// a, whose lease has not run out on its clock, commits the same rows.
	if res, err := a.svc.Round(context.Background(), id); err != nil || res.Rows != 700 {
		t.Fatalf("stale holder's round: %+v, %v", res, err)
	}
	// b's round now starts from the state it read, is refused by the
	// catalog, reloads, and finds nothing left to tier.
	res, err := b.tryRound()
	if err != nil || res.Rows != 0 {
		t.Fatalf("new holder's round after the stale commit: %+v, %v", res, err)
	}
	ingestBoth(1700, 100, a, b)
	if res, err := b.tryRound(); err != nil || res.Rows != 100 {
		t.Fatalf("new holder's next round: %+v, %v", res, err)
	}
	if _, err := a.svc.Round(context.Background(), id); !errors.Is(err, ErrNotCommitter) {
		t.Fatalf("stale holder after the new holder committed: %v, want ErrNotCommitter", err)
	}
	if got := b.totals("bars$lake"); got != want(1800) {
		t.Fatalf("lake: %v", got)
	}
	checkSnapshotOffsets(t, b.svc.lookup(id).state.Load().tbl, 1800)
}

// A holder whose lease ran out on its own clock commits nothing.
func TestSharedLakeExpiredLeaseCommitsNothing(t *testing.T) {
	a, _, board := sharedLakeEnvs(t)
	id := a.table("bars").Def().ID
	board.give(id, "a")
	a.svc.renewLeases(context.Background())
	a.svc.leases.mu.Lock()
	l := a.svc.leases.held[id]
	l.Expires = time.Now().Add(leaseMargin / 2)
	a.svc.leases.held[id] = l
	a.svc.leases.mu.Unlock()
	ingestBoth(0, 100, a)
	if _, err := a.svc.Round(context.Background(), id); !errors.Is(err, ErrNotCommitter) {
		t.Fatalf("round under an expiring lease: %v, want ErrNotCommitter", err)
	}
	if got := a.totals("bars$lake"); got != want(0) {
		t.Fatalf("lake: %v", got)
	}
}

// checkSnapshotOffsets walks the table's snapshots from the first: every
// one carries the tiered offsets, they never decrease, each append adds
// exactly the rows between its parent's offsets and its own — so no range
// of offsets is in the lake twice — and maintenance keeps rows and
// offsets; they hold rows in all.
func checkSnapshotOffsets(t *testing.T, tbl *table.Table, rows int64) {
	t.Helper()
	var chain []table.Snapshot
	for s := tbl.CurrentSnapshot(); s != nil; {
		chain = append([]table.Snapshot{*s}, chain...)
		if s.ParentSnapshotID == nil {
			break
		}
		s = tbl.Metadata().SnapshotByID(*s.ParentSnapshotID)
	}
	n := tbl.Metadata().Properties()
	prev := make([]int64, 3)
	var total int64
	for _, s := range chain {
		o, err := parseOffsets(s.Summary.Properties[offsetsKey], 3)
		if err != nil {
			t.Fatal(err)
		}
		var delta int64
		for b := range o {
			if o[b] < prev[b] {
				t.Fatalf("snapshot %d: offsets %v below its parent's %v", s.SnapshotID, o, prev)
			}
			delta += o[b] - prev[b]
		}
		added, _ := strconv.ParseInt(s.Summary.Properties["added-records"], 10, 64)
		deleted, _ := strconv.ParseInt(s.Summary.Properties["deleted-records"], 10, 64)
		if s.Summary.Operation != table.OpAppend && (delta != 0 || added != deleted) {
			// Maintenance (a compaction's replace) keeps rows and offsets.
			t.Fatalf("%s snapshot %d: offsets moved by %d, %d records added and %d deleted", s.Summary.Operation, s.SnapshotID, delta, added, deleted)
		}
		if s.Summary.Operation == table.OpAppend && added != delta {
			t.Fatalf("snapshot %d adds %d records for %d offsets", s.SnapshotID, added, delta)
		}
		total += added - deleted
		prev = o
	}
	if total != rows {
		t.Fatalf("snapshots add %d rows, want %d (table properties %v)", total, rows, n)
	}
}

// Both nodes' services run (their lease and committer loops) while rows
// arrive and the lease moves back and forth: each row is in the lake once,
// and both nodes read all of them in the union and in the lake.
func TestSharedLakeRunWhileTheLeaseMoves(t *testing.T) {
	a, b, board := sharedLakeEnvs(t)
	for _, e := range []*lakeEnv{a, b} {
		e.exec(`CREATE TABLE fresh (id BIGINT NOT NULL, amount DOUBLE, kind VARCHAR)
			WITH ('bucket.num'='3', 'bucket.key'='id', 'datalake.freshness'='50ms')`)
	}
	id := a.table("fresh").Def().ID
	board.give(id, "a")
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, e := range []*lakeEnv{a, b} {
		wg.Add(1)
		go func() { defer wg.Done(); e.svc.Run(ctx) }()
	}
	defer func() { cancel(); wg.Wait() }()
	const batches, rows = 20, 100
	holders := []string{"a", "b"}
	for i := range batches {
		for _, e := range []*lakeEnv{a, b} {
			e.ingest("fresh", i*rows, rows)
		}
		if i%4 == 3 {
			board.give(id, holders[(i/4+1)%2])
		}
		// Let a round or two run under this holder: wait until the lake
		// of the node that holds the lease has this batch.
		holder := map[string]*lakeEnv{"a": a, "b": b}[board.holderOf(id)]
		waitFor(t, time.Minute, "the holder's round", func() error {
			if got := holder.totals("fresh$lake"); got.n != int64((i+1)*rows) {
				return fmt.Errorf("the holder's lake holds %v, want %d rows", got, (i+1)*rows)
			}
			return nil
		})
	}
	for _, e := range []*lakeEnv{a, b} {
		waitFor(t, time.Minute, "the lake on both nodes", func() error {
			if got := e.totals("fresh$lake"); got != want(batches*rows) {
				return fmt.Errorf("lake %v, want %v", got, want(batches*rows))
			}
			return nil
		})
		if got := e.totals("fresh"); got != want(batches*rows) {
			t.Fatalf("union: %v", got)
		}
	}
	checkSnapshotOffsets(t, b.svc.lookup(id).state.Load().tbl, batches*rows)
}

func (b *leaseBoard) holderOf(tableID int64) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.holder[tableID]
}

// A follower takes a primary-key table's newer lake state only once its
// own published state reaches the lake's offsets: its reads keep the lake
// rows its state says are live, so a state behind the lake would hide the
// newer keys.
func TestSharedLakeFollowerPKWaitsForItsState(t *testing.T) {
	a, b, board := sharedLakeEnvs(t)
	for _, e := range []*lakeEnv{a, b} {
		e.exec(fmt.Sprintf(createTierKV, 2, ""))
	}
	id := a.table("kv").Def().ID
	board.give(id, "a")
	ma, mb := pkModel{}, pkModel{}
	a.upsert("kv", ma, []int64{1, 2, 3, 4}, 1, "x")
	b.upsert("kv", mb, []int64{1, 2, 3, 4}, 1, "x")
	a.upsert("kv", ma, []int64{2, 5, 6}, 2, "y") // b's replica has not this write yet
	a.svc.renewLeases(context.Background())
	if res, err := a.svc.Round(context.Background(), id); err != nil || res.Rows == 0 {
		t.Fatalf("holder's round: %+v, %v", res, err)
	}
	lt := b.svc.lookup(id)
	if err := b.svc.follow(context.Background(), lt); err != nil {
		t.Fatal(err)
	}
	if o := lt.state.Load().offsets; o[0]+o[1] != 0 {
		t.Fatalf("the follower took the lake at offsets %v, beyond its state", o)
	}
	if got := b.totals("kv"); got.n != 4 {
		t.Fatalf("follower's union before it caught up: %v", got)
	}
	b.upsert("kv", mb, []int64{2, 5, 6}, 2, "y")
	if err := b.svc.follow(context.Background(), lt); err != nil {
		t.Fatal(err)
	}
	if o := lt.state.Load().offsets; o[0]+o[1] == 0 {
		t.Fatal("the follower did not take the lake once its state reached it")
	}
	if got := b.totals("kv"); got != want(7).withoutZero() {
		t.Fatalf("follower's union: %v", got)
	}
}

// withoutZero is the totals of ids [1, n).
func (tot totals) withoutZero() totals {
	return totals{n: tot.n - 1, sum: tot.sum, distinct: tot.distinct - 1}
}
