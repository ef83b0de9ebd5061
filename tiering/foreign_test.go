package tiering

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/table/compaction"

	"github.com/lakestream/lakestream/tables"
)

// externalTable loads the lake table of name as another engine would, from
// the Iceberg catalog.
func externalTable(t *testing.T, e *lakeEnv, name string) *table.Table {
	t.Helper()
	tbl, err := e.ice.LoadTable(context.Background(), table.Identifier{"default", name})
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// externalAppend commits the lake table's own rows again, as another
// engine's append.
func externalAppend(t *testing.T, e *lakeEnv, name string) *table.Table {
	t.Helper()
	ctx := context.Background()
	tbl := externalTable(t, e, name)
	rows, err := tbl.Scan().ToArrowTable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Release()
	tx := tbl.NewTransaction()
	if err := tx.AppendTable(ctx, rows, 1<<20, nil); err != nil {
		t.Fatal(err)
	}
	next, err := tx.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return next
}

// Another engine's append is never merged: union reads go on at
// Lakestream's last snapshot, the next round stops with ErrForeignSnapshot
// naming the snapshot and the rollback, a restart quarantines the lake,
// and once the snapshot is rolled back tiering goes on.
func TestForeignAppendIsNotMerged(t *testing.T) {
	e := newLakeEnv(t, Config{})
	e.exec(`CREATE TABLE ev (id BIGINT NOT NULL, amount DOUBLE) WITH ('bucket.num'='2')`)
	e.ingest("ev", 0, 1000)
	e.round("ev")
	mine := externalTable(t, e, "ev").CurrentSnapshot().SnapshotID
	externalAppend(t, e, "ev")
	if got := e.totals("ev"); got != want(1000) {
		t.Fatalf("union after a foreign append: %v, want %v", got, want(1000))
	}
	e.ingest("ev", 1000, 10)
	_, err := e.svc.Round(context.Background(), e.table("ev").Def().ID)
	if !errors.Is(err, ErrForeignSnapshot) || !strings.Contains(err.Error(), "rollback_to_snapshot") ||
		!strings.Contains(err.Error(), "append") {
		t.Fatalf("round over a foreign append: %v, want ErrForeignSnapshot naming the rollback", err)
	}
	if got := e.totals("ev"); got != want(1010) {
		t.Fatalf("union after the refused round: %v, want %v (lake at Lakestream's snapshot, the rest from the log)", got, want(1010))
	}
	// Rolled back (as Spark's rollback_to_snapshot does), rounds go on.
	ext := externalTable(t, e, "ev")
	tx := ext.NewTransaction()
	if err := tx.RollbackToSnapshot(mine); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.round("ev")
	lake, err := e.store.Table(context.Background(), "", "ev$lake")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := scanTotals(lake); err != nil || got != want(1010) {
		t.Fatalf(`"ev$lake" after the rollback and a round: %v %v, want %v`, got, err, want(1010))
	}
	// A node started with a foreign snapshot on top quarantines the lake.
	externalAppend(t, e, "ev")
	e.restart(e.cfg)
	q := e.store.Quarantined()
	if len(q) != 1 || q[0].Part != tables.PartLake || !errors.Is(q[0].Err, ErrForeignSnapshot) {
		t.Fatalf("Quarantined() = %+v, want ev's lake, foreign", q)
	}
	if _, err := e.store.Table(context.Background(), "", "ev"); !errors.Is(err, tables.ErrQuarantined) || !strings.Contains(err.Error(), "not written by Lakestream") {
		t.Fatalf("read of a table whose lake has a foreign snapshot at start: %v", err)
	}
}

// Another engine's rewrite_data_files then expire_snapshots, which deletes
// every file of the snapshot Lakestream read: reads plan on the new
// metadata (same rows), the committer tiers on, and the history where the
// rewrite dropped the row maps is FailedPrecondition's error.
func TestExternalRewriteAndExpireKeepReadsWorking(t *testing.T) {
	e := newLakeEnv(t, Config{})
	e.exec(`CREATE TABLE ev (id BIGINT NOT NULL, amount DOUBLE) WITH ('log.segment.bytes'='1MiB', 'log.retention'='1ms', 'log.compression'='none')`)
	for i := 0; i < 4; i++ {
		e.ingest("ev", i*30_000, 30_000)
		e.round("ev")
	}
	if got := e.totals("ev"); got != want(120_000) {
		t.Fatalf("before: %v", got)
	}
	ctx := context.Background()
	ext := externalTable(t, e, "ev")
	tasks, err := ext.Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cfg := compaction.DefaultConfig()
	cfg.MinInputFiles = 2
	plan, err := cfg.PlanCompaction(tasks)
	if err != nil || len(plan.Groups) == 0 {
		t.Fatalf("compaction plan: %+v %v", plan, err)
	}
	tx := ext.NewTransaction()
	groups := make([]table.CompactionTaskGroup, len(plan.Groups))
	for i, g := range plan.Groups {
		groups[i] = table.CompactionTaskGroup{PartitionKey: g.PartitionKey, Tasks: g.Tasks, TotalSizeBytes: g.TotalSizeBytes}
	}
	if _, err := tx.RewriteDataFiles(ctx, groups, table.RewriteDataFilesOptions{}); err != nil {
		t.Fatal(err)
	}
	rewritten, err := tx.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Expire every snapshot but the rewrite's, deleting their files.
	tx = rewritten.NewTransaction()
	if err := tx.ExpireSnapshots(table.WithRetainLast(1), table.WithOlderThan(0)); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		if _, err := os.Stat(strings.TrimPrefix(task.File.FilePath(), "file://")); err == nil {
			t.Fatalf("%s still exists: the expiry did not delete the old files", task.File.FilePath())
		}
	}
	// Lakestream's state still names the expired snapshot: the read finds
	// its manifests gone, reloads, and reads the rewrite's files.
	if got := e.totals("ev"); got != want(120_000) {
		t.Fatalf("union after an external rewrite and expiry: %v, want %v", got, want(120_000))
	}
	lake, err := e.store.Table(ctx, "", "ev$lake")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := scanTotals(lake); err != nil || got != want(120_000) {
		t.Fatalf(`"ev$lake" after the rewrite: %v %v`, got, err)
	}
	e.ingest("ev", 120_000, 100)
	e.round("ev")
	if got := e.totals("ev"); got != want(120_100) {
		t.Fatalf("after a round on the rewritten table: %v, want %v", got, want(120_100))
	}
	// The rewritten files have no row map: the history from offset 0 is
	// unavailable, with the error FailedPrecondition is mapped from.
	tbl := e.table("ev")
	deleteTieredSegments(t, e, tbl)
	out := make(chan arrow.RecordBatch, 4)
	err = tbl.Follow(ctx, 0, 0, []int{0}, out)
	if !errors.Is(err, tables.ErrHistoryUnavailable) || !strings.Contains(err.Error(), "no row map") {
		t.Fatalf("history over rewritten files: %v, want ErrHistoryUnavailable", err)
	}
}
