package node

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// relocateRows is the number of rows tiered before the move.
const relocateRows = 300_000

// A node's data directory moved with the node stopped starts at its new
// place: union reads (SQL and plain scans), "t$lake" and
// changes('t', 'earliest') — from the lake's history, retention having
// deleted the log's head — return exactly the rows they did, and a new
// round commits there. A cp -a copy whose relocation crashes between
// writing its files and switching the catalog row answers
// FailedPrecondition, never reading its original, which stays unchanged;
// the next start relocates it and serves it.
func TestMovedDataDirectory(t *testing.T) {
	root := t.TempDir()
	a, b, c := filepath.Join(root, "a"), filepath.Join(root, "b"), filepath.Join(root, "c")
	cfg := func(dir string) Config {
		return Config{DataDir: dir, Listen: "127.0.0.1:0", HTTP: "off", Tiering: TieringManual, Logger: slog.New(slog.DiscardHandler)}
	}
	ctx := context.Background()
	n, stop, done := startNodeWith(t, cfg(a))
	cl := client(t, n.Addr())
	mustExec(t, cl, `CREATE TABLE t (id BIGINT NOT NULL, v VARCHAR)
		WITH ('bucket.num'='4', 'bucket.key'='id', 'log.segment.bytes'='1MiB', 'log.retention'='1ms', 'log.compression'='none')`)
	tbl, err := n.Tables().Get(ctx, "", "t")
	if err != nil {
		t.Fatal(err)
	}
	id := tbl.Def().ID
	const per = relocateRows / 6
	for r := range 6 {
		mustExec(t, cl, fmt.Sprintf("INSERT INTO t SELECT range, 'v' || range FROM range(%d, %d)", r*per, (r+1)*per))
		if _, err := n.Lake().Round(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := n.Lake().Maintain(ctx, id, false); err != nil {
		t.Fatal(err)
	}
	if deleted, err := n.Tables().ApplyRetention(); err != nil || deleted == 0 {
		t.Fatalf("retention deleted %d segments (%v); the changelog would not read the lake's history", deleted, err)
	}
	mustExec(t, cl, fmt.Sprintf("INSERT INTO t SELECT range, 'v' || range FROM range(%d, %d)", relocateRows, relocateRows+10_000))
	wantTable(t, cl, relocateRows+10_000, relocateRows)
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	if err := os.Rename(a, b); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	n, stop, done = startNodeWith(t, cfg(b))
	t.Logf("start after the move (relocation included): %v", time.Since(start))
	cl = client(t, n.Addr())
	wantTable(t, cl, relocateRows+10_000, relocateRows)
	mustExec(t, cl, fmt.Sprintf("INSERT INTO t SELECT range, 'v' || range FROM range(%d, %d)", relocateRows+10_000, relocateRows+20_000))
	if res, err := n.Lake().Round(ctx, id); err != nil || res.Rows != 20_000 {
		t.Fatalf("round at the new place: %d rows, %v; want 20000", res.Rows, err)
	}
	wantTable(t, cl, relocateRows+20_000, relocateRows+20_000)
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	if out, err := exec.Command("cp", "-a", b, c).CombinedOutput(); err != nil {
		t.Fatalf("cp -a: %v: %s", err, out)
	}
	sumsB := dirSums(t, b)
	crashCfg := cfg(c)
	crashCfg.relocateBeforeSwitch = func(string) error { return errors.New("crash before the switch") }
	n, stop, done = startNodeWith(t, crashCfg)
	cl = client(t, n.Addr())
	for _, sql := range []string{"SELECT count(*) FROM t", `SELECT count(*) FROM "t$lake"`, "SELECT id FROM t", "SELECT * FROM changes('t', 'earliest')"} {
		_, err := cl.Execute(ctx, sql)
		if status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "outside the data directory") {
			t.Errorf("%s on the copy whose relocation crashed: %v, want FailedPrecondition naming the lake outside the data directory", sql, err)
		}
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(dirSums(t, b), sumsB) {
		t.Fatal("the original of the copy changed")
	}
	n, stop, done = startNodeWith(t, cfg(c))
	defer func() { stop(); <-done }()
	cl = client(t, n.Addr())
	wantTable(t, cl, relocateRows+20_000, relocateRows+20_000)
	if !maps.Equal(dirSums(t, b), sumsB) {
		t.Fatal("the original of the copy changed")
	}
}

// wantTable checks that t holds ids [0, rows) once each, read as a query,
// as a plain scan and from changes('t', 'earliest'), and that "t$lake"
// holds ids [0, lake).
func wantTable(t *testing.T, cl *flightsql.Client, rows, lake int64) {
	t.Helper()
	sum := func(n int64) int64 { return n * (n - 1) / 2 }
	for sql, want := range map[string]int64{
		"SELECT count(DISTINCT id)::BIGINT FROM t":           rows,
		"SELECT sum(id)::BIGINT FROM t":                      sum(rows),
		`SELECT count(*)::BIGINT FROM "t$lake"`:              lake,
		`SELECT sum(id)::BIGINT FROM "t$lake"`:               sum(lake),
		"SELECT count(*)::BIGINT FROM t WHERE v = 'v' || id": rows,
	} {
		if got := queryInt64(t, cl, sql); got != want {
			t.Errorf("%s = %d, want %d", sql, got, want)
		}
	}
	if n, s := scanIDs(t, cl, "SELECT id FROM t", -1); n != rows || s != sum(rows) {
		t.Errorf("plain scan: %d rows, sum %d; want %d, %d", n, s, rows, sum(rows))
	}
	if n, s := scanIDs(t, cl, "SELECT id FROM changes('t', 'earliest')", rows); n != rows || s != sum(rows) {
		t.Errorf("changes from earliest: %d rows, sum %d; want %d, %d", n, s, rows, sum(rows))
	}
}

// scanIDs reads the first column (an id) of every endpoint of sql, or of a
// subscription its first limit rows, and returns their count and sum;
// it fails on a repeated id.
func scanIDs(t *testing.T, cl *flightsql.Client, sql string, limit int64) (n, sum int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	info, err := cl.Execute(ctx, sql)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	seen := map[int64]bool{}
	for _, ep := range info.Endpoint {
		rdr, err := cl.DoGet(ctx, ep.Ticket)
		if err != nil {
			t.Fatal(err)
		}
		for (limit < 0 || n < limit) && rdr.Next() {
			ids := rdr.RecordBatch().Column(0).(*array.Int64)
			for i := range ids.Len() {
				if v := ids.Value(i); seen[v] {
					t.Fatalf("%s: id %d twice", sql, v)
				} else {
					seen[v] = true
					n++
					sum += v
				}
			}
		}
		if limit < 0 && rdr.Err() != nil {
			t.Fatalf("%s: %v", sql, rdr.Err())
		}
		rdr.Release()
	}
	return n, sum
}

// dirSums is the SHA-256 of every file under dir, by path.
func dirSums(t *testing.T, dir string) map[string][32]byte {
	t.Helper()
	out := map[string][32]byte{}
	err := filepath.WalkDir(dir, func(p string, de fs.DirEntry, err error) error {
		if err != nil || de.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		out[p] = sha256.Sum256(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Only the embedded lake — a SQLite catalog and a file:// warehouse, both
// inside the data directory — is relocated at start-up.
func TestEmbeddedLake(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		catalog, warehouse string
		want               bool
	}{
		{"", "", true}, // the defaults
		{"sqlite://" + dir + "/lake/ice.db", "file://" + dir + "/wh", true},
		{"sqlite://" + dir + "/iceberg.db", "s3://bucket/prefix", false},
		{"postgres://u@host/db", "file://" + dir + "/warehouse", false},
		{"http://rest.example", "", false},
		{"sqlite://" + filepath.Dir(dir) + "/iceberg.db", "", false},
		{"", "file://" + filepath.Dir(dir) + "/warehouse", false},
		{"", "file://" + dir, false}, // the data directory itself is no warehouse inside it
	} {
		cfg := Config{DataDir: dir, Catalog: c.catalog, Warehouse: c.warehouse}
		cfg.EnsureDefaults()
		if _, _, ok := cfg.embeddedLake(); ok != c.want {
			t.Errorf("catalog %q, warehouse %q: embedded %v, want %v", cfg.Catalog, cfg.Warehouse, ok, c.want)
		}
	}
}
