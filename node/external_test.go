package node

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"

	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/table/compaction"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Another engine's rewrite_data_files and expire_snapshots (which deletes
// the files of the snapshot the node read) never make a read fail: the
// node reloads the metadata and reads the rewrite. changes() from
// 'earliest', whose history was in the rewritten files, is
// FailedPrecondition naming the missing row map, not Internal; from the
// retained log it still serves.
func TestExternalMaintenanceOverFlight(t *testing.T) {
	cfg := Config{DataDir: t.TempDir(), Listen: "127.0.0.1:0", HTTP: "off", Tiering: TieringManual, Logger: slog.New(slog.DiscardHandler)}
	n, stop, done := startNodeWith(t, cfg)
	defer func() { stop(); <-done }()
	cl := client(t, n.Addr())
	ctx := context.Background()
	mustExec(t, cl, `CREATE TABLE t (id BIGINT NOT NULL, v VARCHAR)
		WITH ('bucket.num'='2', 'log.segment.bytes'='1MiB', 'log.retention'='1ms', 'log.compression'='none')`)
	tbl, err := n.Tables().Get(ctx, "", "t")
	if err != nil {
		t.Fatal(err)
	}
	const per = 40_000
	for r := range 4 {
		mustExec(t, cl, fmt.Sprintf("INSERT INTO t SELECT range, 'v' || range FROM range(%d, %d)", r*per, (r+1)*per))
		if _, err := n.Lake().Round(ctx, tbl.Def().ID); err != nil {
			t.Fatal(err)
		}
	}
	if deleted, err := n.Tables().ApplyRetention(); err != nil || deleted == 0 {
		t.Fatalf("retention deleted %d segments (%v)", deleted, err)
	}
	// The other engine: rewrite every file, then expire all but that.
	ext, err := n.LakeCatalog().LoadTable(ctx, table.Identifier{"default", "t"})
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := ext.Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cc := compaction.DefaultConfig()
	cc.MinInputFiles = 2
	plan, err := cc.PlanCompaction(tasks)
	if err != nil || len(plan.Groups) == 0 {
		t.Fatalf("compaction plan %+v: %v", plan, err)
	}
	var groups []table.CompactionTaskGroup
	for _, g := range plan.Groups {
		groups = append(groups, table.CompactionTaskGroup{PartitionKey: g.PartitionKey, Tasks: g.Tasks, TotalSizeBytes: g.TotalSizeBytes})
	}
	tx := ext.NewTransaction()
	if _, err := tx.RewriteDataFiles(ctx, groups, table.RewriteDataFilesOptions{}); err != nil {
		t.Fatal(err)
	}
	if ext, err = tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	tx = ext.NewTransaction()
	if err := tx.ExpireSnapshots(table.WithRetainLast(1), table.WithOlderThan(0)); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	const rows = 4 * per
	for _, sql := range []string{"SELECT count(*)::BIGINT FROM t", `SELECT count(*)::BIGINT FROM "t$lake"`, "SELECT count(DISTINCT id)::BIGINT FROM t"} {
		if got, err := query(ctx, cl, sql); err != nil || got != rows {
			t.Fatalf("%s after external maintenance: %d, %v; want %d", sql, got, err, rows)
		}
	}
	err = readChanges(t, cl, "SELECT id FROM changes('t', 'earliest')")
	if status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "no row map") {
		t.Fatalf("changes from 'earliest' over rewritten files: %v, want FailedPrecondition naming the row map", err)
	}
	// Tiering goes on over the rewritten table.
	mustExec(t, cl, fmt.Sprintf("INSERT INTO t SELECT range, 'v' FROM range(%d, %d)", rows, rows+100))
	if _, err := n.Lake().Round(ctx, tbl.Def().ID); err != nil {
		t.Fatal(err)
	}
	if got, err := query(ctx, cl, `SELECT count(*)::BIGINT FROM "t$lake"`); err != nil || got != rows+100 {
		t.Fatalf(`"t$lake" after a round: %d, %v`, got, err)
	}
}

// readChanges reads a subscription until its first error, which it
// returns (a subscription that succeeds does not end: the test's deadline
// ends it).
func readChanges(t *testing.T, cl *flightsql.Client, sql string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return queryErr(ctx, cl, sql) // remote_test.go
}
