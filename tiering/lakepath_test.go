package tiering

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go/table"

	"github.com/lakestream/lakestream/internal/scan"
)

// oddRegions are partition values that Iceberg's PartitionToPath
// URL-escapes: non-ASCII, a space, a slash, a percent sign, what looks like
// an escape already, URL delimiters, and the escape mark of lakepath.go.
var oddRegions = []string{"ü", "a b", "a/b", "%", "a%2Fb", "x?y#z", "1+1=2", "~7E", "plain"}

// regionRows is a lake table's rows, by region and id: the amount.
type regionRows map[string]float64

func regionKey(region string, id int64) string { return fmt.Sprintf("%q/%d", region, id) }

func TestPathSegmentEscapes(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"region=plain", "region=plain"},
		{"region=ü", "region=~C3~BC"},
		{"region=a b", "region=a~20b"},
		{"region=a/b", "region=a~2Fb"},
		{"region=%", "region=~25"},
		{"region=a=b", "region=a~3Db"},
		{"Mixed Case=x.y-z_1", "Mixed~20Case=x.y-z_1"},
		{"region=~", "region=~7E"},
	} {
		if got := pathSegment(c.in); got != c.want {
			t.Errorf("pathSegment(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	// A long value keeps its head and ends with a hash of the whole: two
	// values of one head are two directories, each a valid file name.
	a, b := pathSegment("region="+strings.Repeat("ü", 200)), pathSegment("region="+strings.Repeat("ü", 201))
	if a == b || len(a) > maxPathSegment || len(b) > maxPathSegment || strings.Contains(a, "%") {
		t.Errorf("long segments %q and %q", a, b)
	}
	i := strings.Index(a, "~~")
	if j := strings.LastIndexByte(a[:max(i, 0)], '~'); i < 0 || j >= 0 && i-j < 3 {
		t.Errorf("the head of %q is cut inside an escape", a)
	}
}

// Partition values that need URL escaping: every data and delete file is
// where its manifest entry says, whether the reader takes the path as
// written (pyiceberg, Spark, DuckDB) or URL-decodes it (iceberg-go), for a
// log table and a primary-key table, after rounds, a compaction, and a move
// of the data directory (relocation). iceberg-go's scanner and Lakestream's
// own reads return the rows; the orphan pass deletes none of the files.
func TestPartitionValuesNeedingEscapes(t *testing.T) {
	root := t.TempDir()
	a, b := filepath.Join(root, "a"), filepath.Join(root, "b")
	cfg := Config{Maintenance: Maintenance{CompactMinFiles: 2, OrphanAge: 1}}
	d := openDataDir(t, a, cfg, nil)
	d.exec(`CREATE TABLE lg (region VARCHAR, id BIGINT, amount DOUBLE) PARTITIONED BY (region)
		WITH ('bucket.num'='2', 'bucket.key'='id', 'datalake.freshness'='1h', 'log.retention'='1ms')`)
	d.exec(`CREATE TABLE pk (region VARCHAR NOT NULL, id BIGINT NOT NULL, amount DOUBLE, PRIMARY KEY (region, id))
		PARTITIONED BY (region) WITH ('bucket.num'='2', 'bucket.key'='id', 'datalake.freshness'='1h', 'log.retention'='1ms')`)
	lg, pk := regionRows{}, regionRows{}
	for round := range 3 {
		for _, r := range oddRegions {
			writeRegionRows(t, d.lakeEnv, "lg", lg, r, int64(round*10), 10, float64(round))
			writeRegionRows(t, d.lakeEnv, "pk", pk, r, 0, 10+int64(round)*5, float64(round))
		}
		deleteRegionRows(t, d.lakeEnv, "pk", pk, oddRegions[round], 0, 3)
		d.round("lg")
		d.round("pk")
	}
	checkRegionTables(t, d, "after rounds", lg, pk)
	for _, name := range []string{"lg", "pk"} {
		res, err := d.svc.Maintain(context.Background(), d.table(name).Def().ID, true)
		if err != nil {
			t.Fatal(err)
		}
		if res.FilesCompacted == 0 {
			t.Errorf("%s: maintenance compacted nothing", name)
		}
	}
	checkRegionTables(t, d, "after compaction", lg, pk)
	d.stop()
	if err := os.Rename(a, b); err != nil {
		t.Fatal(err)
	}
	d = openDataDir(t, b, cfg, nil)
	if len(d.reloc.Moved) != 2 || len(d.store.Quarantined()) != 0 {
		t.Fatalf("relocation %+v, quarantined %+v", d.reloc.Moved, d.store.Quarantined())
	}
	checkRegionTables(t, d, "after the move", lg, pk)
	writeRegionRows(t, d.lakeEnv, "pk", pk, "ü", 100, 5, 9)
	d.round("pk")
	checkRegionTables(t, d, "after a round at the new place", lg, pk)
}

// writeRegionRows writes ids [from, from+n) of region with amount.
func writeRegionRows(t *testing.T, e *lakeEnv, name string, m regionRows, region string, from, n int64, amount float64) {
	t.Helper()
	tbl := e.table(name)
	b := array.NewRecordBuilder(memory.DefaultAllocator, tbl.Schema())
	defer b.Release()
	for id := from; id < from+n; id++ {
		b.Field(0).(*array.StringBuilder).Append(region)
		b.Field(1).(*array.Int64Builder).Append(id)
		b.Field(2).(*array.Float64Builder).Append(amount)
		m[regionKey(region, id)] = amount
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	if _, err := tbl.Write(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
}

// deleteRegionRows deletes ids [from, from+n) of region.
func deleteRegionRows(t *testing.T, e *lakeEnv, name string, m regionRows, region string, from, n int64) {
	t.Helper()
	sch := arrow.NewSchema([]arrow.Field{{Name: "region", Type: arrow.BinaryTypes.String}, {Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sch)
	defer b.Release()
	for id := from; id < from+n; id++ {
		b.Field(0).(*array.StringBuilder).Append(region)
		b.Field(1).(*array.Int64Builder).Append(id)
		delete(m, regionKey(region, id))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	if _, err := e.table(name).Delete(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
}

// checkRegionTables checks both tables' lake files and rows.
func checkRegionTables(t *testing.T, d *dataDir, when string, lg, pk regionRows) {
	t.Helper()
	for name, want := range map[string]regionRows{"lg": lg, "pk": pk} {
		tbl := d.lake(name)
		deletes := checkFilePaths(t, tbl, fmt.Sprintf("%s, %s", name, when))
		if name == "pk" && deletes == 0 && when == "after rounds" {
			t.Errorf("pk, %s: no delete file planned", when)
		}
		got, err := icebergRegionRows(tbl)
		if err != nil {
			t.Fatalf("%s, %s: iceberg-go's scan: %v", name, when, err)
		}
		if !maps.Equal(got, want) {
			t.Errorf("%s, %s: iceberg-go reads %d rows, want %d", name, when, len(got), len(want))
		}
		st, err := d.store.Table(context.Background(), "", name)
		if err != nil {
			t.Fatal(err)
		}
		own, err := ownRegionRows(st)
		if err != nil {
			t.Fatalf("%s, %s: Lakestream's read: %v", name, when, err)
		}
		if !maps.Equal(own, want) {
			t.Errorf("%s, %s: Lakestream reads %d rows, want %d", name, when, len(own), len(want))
		}
	}
}

// checkFilePaths checks that every data and delete file the scanner plans
// is where its path says, read as written and read URL-decoded, and that
// the partition directories are the escaped ones. It returns the number of
// delete files.
func checkFilePaths(t *testing.T, tbl *table.Table, what string) int {
	t.Helper()
	tasks, err := tbl.Scan().PlanFiles(context.Background())
	if err != nil {
		t.Fatalf("%s: plan: %v", what, err)
	}
	var paths []string
	deletes, missing := map[string]bool{}, 0
	check := func(p string) {
		asWritten, decoded := strings.TrimPrefix(p, "file://"), localPath(p)
		for _, f := range []string{asWritten, decoded} {
			if _, err := os.Stat(f); err != nil && missing == 0 {
				t.Errorf("%s: the manifest names %s, and %s is not there: %v", what, p, f, err)
			}
			if err != nil {
				missing++
			}
		}
		paths = append(paths, decoded)
	}
	for _, task := range tasks {
		check(task.File.FilePath())
		for _, df := range task.DeleteFiles {
			deletes[df.FilePath()] = true
			check(df.FilePath())
		}
	}
	if missing > 1 {
		t.Errorf("%s: %d paths in all name no file", what, missing)
	}
	for _, r := range oddRegions {
		seg := "/" + pathSegment("region="+r) + "/"
		if !slices.ContainsFunc(paths, func(p string) bool { return strings.Contains(p, seg) }) {
			t.Errorf("%s: no file in a directory %s (partition %q); files: %v", what, seg, r, paths)
		}
	}
	return len(deletes)
}

// icebergRegionRows reads a lake table through iceberg-go's scanner
// (position deletes applied).
func icebergRegionRows(tbl *table.Table) (regionRows, error) {
	at, err := tbl.Scan().ToArrowTable(context.Background())
	if err != nil {
		return nil, err
	}
	defer at.Release()
	rd := array.NewTableReader(at, 0)
	defer rd.Release()
	out := regionRows{}
	for rd.Next() {
		if err := addRegionRows(out, rd.RecordBatch()); err != nil {
			return nil, err
		}
	}
	return out, rd.Err()
}

// ownRegionRows reads a table through Lakestream's union read.
func ownRegionRows(st scan.Table) (regionRows, error) {
	ctx := context.Background()
	p, err := st.Plan(ctx, scan.Request{Columns: []int{0, 1, 2}})
	if err != nil {
		return nil, err
	}
	out := regionRows{}
	for _, part := range p.Parts() {
		rs, err := part.Open(ctx)
		if err != nil {
			return nil, err
		}
		for {
			rec, err := rs.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err == nil {
				err = addRegionRows(out, rec)
				rec.Release()
			}
			if err != nil {
				rs.Close()
				return nil, err
			}
		}
		rs.Close()
	}
	return out, nil
}

func addRegionRows(m regionRows, rec arrow.RecordBatch) error {
	region, id, amount := rec.Column(0).(*array.String), rec.Column(1).(*array.Int64), rec.Column(2).(*array.Float64)
	for i := range int(rec.NumRows()) {
		k := regionKey(region.Value(i), id.Value(i))
		if _, dup := m[k]; dup {
			return fmt.Errorf("row %s read twice", k)
		}
		m[k] = amount.Value(i)
	}
	return nil
}
