package catalog

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata/")

const goldenDDL = `
-- A primary-key table using most of the grammar.
CREATE TABLE IF NOT EXISTS shop."Orders" (
    order_id   BIGINT,
    region     VARCHAR(8) NOT NULL,
    ts         TIMESTAMP WITH TIME ZONE,
    amount     NUMERIC(12, 2),
    ver        INT8,
    tags       TEXT[],
    attrs      MAP(STRING, DOUBLE PRECISION),
    "Payload"  STRUCT(kind VARCHAR, items LIST(STRUCT(sku BIGINT, qty INT))),
    PRIMARY KEY (order_id, region, ts)
) PARTITIONED BY (region, day(ts))
  WITH ('bucket.num' = '16', 'bucket.key' = 'order_id',
        'merge-engine' = 'versioned', 'merge-engine.versioned.ver-column' = 'VER',
        'log.compression' = 'lz4', 'log.segment.bytes' = '64MiB', 'datalake.enabled' = 'false');
`

// TestGoldenCreateTable pins the full resolution of a parsed CREATE TABLE
// (columns, types, Arrow schema, options with defaults, DDL) and checks that
// the generated DDL parses back to the same definition.
func TestGoldenCreateTable(t *testing.T) { forEachBackend(t, testGoldenCreateTable) }

func testGoldenCreateTable(t *testing.T, b backend) {
	c, _ := b.newCatalog(t)
	exec(t, c, "CREATE DATABASE shop")
	tbl := exec(t, c, goldenDDL).Table
	got := describe(tbl)

	path := filepath.Join("testdata", "create_table.golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("resolved table differs from %s (go test -update to accept):\n%s", path, got)
	}

	// Round trip: the generated DDL recreates the same definition.
	exec(t, c, "DROP TABLE shop.\"Orders\"")
	again := exec(t, c, tbl.DDL()).Table
	if again.ID == tbl.ID {
		t.Errorf("recreated table reused id %d", tbl.ID)
	}
	gotAgain := strings.Replace(describe(again), fmt.Sprintf("id: %d\n", again.ID), fmt.Sprintf("id: %d\n", tbl.ID), 1)
	if gotAgain != got {
		t.Errorf("DDL round trip differs:\n%s", gotAgain)
	}
}
