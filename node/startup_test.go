package node

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// wideColumnsJSON is the stored column list (catalog table_schemas) of n
// BIGINT columns c0..c(n-1).
func wideColumnsJSON(n int) string {
	cols := make([]map[string]string, n)
	for i := range cols {
		cols[i] = map[string]string{"name": fmt.Sprintf("c%d", i), "type": "BIGINT"}
	}
	raw, err := json.Marshal(cols)
	if err != nil {
		panic(err)
	}
	return string(raw)
}

// createWideTables makes tables w0..w(count-1) of columns BIGINT columns
// each in a node's data directory, and leaves the node stopped after a
// start that has brought their lake tables up to date. Beyond
// catalog.MaxColumns (which DDL refuses) the definitions are widened in
// catalog.db directly, as a catalog written before the limit holds them:
// such tables load.
func createWideTables(tb testing.TB, dir string, count, columns int) {
	tb.Helper()
	cfg := quietConfig(dir)
	n, stop, done := startNodeWith(tb, cfg)
	cl := client(tb, n.Addr())
	ddlColumns := min(columns, 1000)
	var cols []string
	for i := range ddlColumns {
		cols = append(cols, fmt.Sprintf("c%d BIGINT", i))
	}
	for i := range count {
		mustExec(tb, cl, fmt.Sprintf("CREATE TABLE w%d (%s)", i, strings.Join(cols, ", ")))
	}
	stop()
	if err := <-done; err != nil {
		tb.Fatal(err)
	}
	if columns > ddlColumns {
		rawCatalog(tb, dir, "UPDATE table_schemas SET columns = '"+wideColumnsJSON(columns)+"' WHERE table_id IN (SELECT id FROM tables WHERE name LIKE 'w%')")
		openClose(tb, cfg) // the lake tables evolve to the new width once
	}
}

func quietConfig(dir string) Config {
	return Config{DataDir: dir, Listen: "127.0.0.1:0", HTTP: "off", Tiering: TieringManual, Logger: slog.New(slog.DiscardHandler)}
}

// openClose starts a node over cfg's data and closes it, and returns how
// long the start took: catalog, tables (log recovery), lake, engine and
// listeners, everything before Serve.
func openClose(tb testing.TB, cfg Config) time.Duration {
	tb.Helper()
	start := time.Now()
	n, err := Start(context.Background(), cfg)
	took := time.Since(start)
	if err != nil {
		tb.Fatal(err)
	}
	if err := n.close(); err != nil {
		tb.Fatal(err)
	}
	return took
}

// A table of 10,000 columns adds little to a start: its lake schema was
// compared with its definition by a name lookup that copied the whole
// Iceberg schema per column (quadratic: 19 to 21 s per start before the
// fix, docs/benchmarks.md). The test compares, in the same run, the start
// of a node holding one narrow table with the start of the same node plus
// the wide table, each the fastest of three, so that the machine's speed
// and the race detector cancel out: the wide start must stay within a
// multiple of the narrow one that the quadratic lookup was far above (a
// thousand times it; the fixed start is about ten times it without the race
// detector).
func TestWideTableStartsFast(t *testing.T) {
	narrowDir, wideDir := t.TempDir(), t.TempDir()
	for _, dir := range []string{narrowDir, wideDir} {
		n, stop, done := startNodeWith(t, quietConfig(dir))
		mustExec(t, client(t, n.Addr()), "CREATE TABLE narrow (id BIGINT, v VARCHAR)", "INSERT INTO narrow SELECT range, 'x' FROM range(100)")
		stop()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	createWideTables(t, wideDir, 1, 10000)
	narrow, wide := time.Duration(1<<62), time.Duration(1<<62)
	for range 3 {
		narrow = min(narrow, openClose(t, quietConfig(narrowDir)))
		wide = min(wide, openClose(t, quietConfig(wideDir)))
	}
	t.Logf("start-up: narrow table %s, narrow and 10,000-column table %s (adds %s)", narrow, wide, wide-narrow)
	if wide > 60*narrow {
		t.Fatalf("a 10,000-column table makes the start %.1f times slower (%s against %s)", float64(wide)/float64(narrow), wide, narrow)
	}
}

// BenchmarkStartup measures a node's start over wide tables without data
// to recover: what a start costs per table and per column.
func BenchmarkStartup(b *testing.B) {
	for _, shape := range []struct{ tables, columns int }{{100, 1000}, {1, 10000}, {1, 10}} {
		b.Run(fmt.Sprintf("tables=%d/columns=%d", shape.tables, shape.columns), func(b *testing.B) {
			dir := b.TempDir()
			createWideTables(b, dir, shape.tables, shape.columns)
			cfg := quietConfig(dir)
			b.ResetTimer()
			for b.Loop() {
				openClose(b, cfg)
			}
		})
	}
}
