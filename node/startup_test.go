package node

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"runtime"
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
		measureStart(tb, cfg) // the lake tables evolve to the new width once
	}
}

func quietConfig(dir string) Config {
	return Config{DataDir: dir, Listen: "127.0.0.1:0", HTTP: "off", Tiering: TieringManual, Logger: slog.New(slog.DiscardHandler)}
}

// A table of 10,000 columns adds little to a start: its lake schema was
// compared with its definition by a name lookup that copied the whole
// Iceberg schema per column (quadratic: 19 to 21 s per start before the
// fix, docs/benchmarks.md). Wall-clock ratios swing with the machine's load
// and the race detector, so the test counts work instead: the bytes a
// start of the same node allocates with and without the wide table (each
// the least of three), which depend on neither. The quadratic lookup
// allocated a copy of every field per column, about 1 MB per column; the
// test allows 64 KiB. The times are logged for a person to compare.
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
	const columns = 10000
	createWideTables(t, wideDir, 1, columns)
	narrow, wide := startCost{took: 1 << 62, bytes: 1 << 62}, startCost{took: 1 << 62, bytes: 1 << 62}
	for range 3 {
		narrow = narrow.min(measureStart(t, quietConfig(narrowDir)))
		wide = wide.min(measureStart(t, quietConfig(wideDir)))
	}
	perColumn := float64(wide.bytes-narrow.bytes) / columns
	t.Logf("start-up: narrow table %s, %d bytes allocated; with a %d-column table %s (adds %s), %d bytes (%.0f per column)",
		narrow.took, narrow.bytes, columns, wide.took, wide.took-narrow.took, wide.bytes, perColumn)
	if perColumn > 64<<10 {
		t.Fatalf("a %d-column table makes a start allocate %.0f bytes per column: the start is not linear in the columns", columns, perColumn)
	}
}

// startCost is what one start took, and the bytes it allocated on the Go
// heap.
type startCost struct {
	took  time.Duration
	bytes uint64
}

func (a startCost) min(b startCost) startCost {
	return startCost{took: min(a.took, b.took), bytes: min(a.bytes, b.bytes)}
}

// measureStart starts a node over cfg's data and closes it, and returns
// the start's time and the bytes it allocated (catalog, tables, lake, engine
// and listeners: everything before Serve).
func measureStart(tb testing.TB, cfg Config) startCost {
	tb.Helper()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	began := time.Now()
	n, err := Start(context.Background(), cfg)
	took := time.Since(began)
	runtime.ReadMemStats(&after)
	if err != nil {
		tb.Fatal(err)
	}
	if err := n.close(); err != nil {
		tb.Fatal(err)
	}
	return startCost{took: took, bytes: after.TotalAlloc - before.TotalAlloc}
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
				measureStart(b, cfg)
			}
		})
	}
}
