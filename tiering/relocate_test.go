package tiering

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/iceberg-go/table"

	"github.com/lakestream/lakestream/catalog"
	"github.com/lakestream/lakestream/tables"
)

// dataDir is a lakeEnv over one data directory, opened as a node opens it:
// Relocate, then the catalogs and tables, then the service with the
// relocation; stop closes it all, so that the directory can be moved.
type dataDir struct {
	*lakeEnv
	reloc   *Relocation
	stopped bool
}

func openDataDir(t testing.TB, dir string, cfg Config, beforeSwitch func(string) error) *dataDir {
	t.Helper()
	ctx := context.Background()
	wh := "file://" + filepath.Join(dir, "warehouse")
	reloc, err := Relocate(ctx, RelocateConfig{CatalogFile: filepath.Join(dir, "iceberg.db"), Warehouse: wh, BeforeSwitch: beforeSwitch})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	e := &lakeEnv{t: t, dir: dir}
	if e.cat, err = catalog.Open(ctx, filepath.Join(dir, "catalog.db"), catalog.Config{DefaultBucketNum: 1}); err != nil {
		t.Fatal(err)
	}
	if e.store, err = tables.Open(ctx, e.cat, tables.Config{Dir: filepath.Join(dir, "tables")}); err != nil {
		t.Fatal(err)
	}
	if e.ice, err = OpenCatalog(ctx, StorageConfig{Catalog: "sqlite://" + filepath.Join(dir, "iceberg.db"), Warehouse: wh}); err != nil {
		t.Fatal(err)
	}
	cfg.Relocation = reloc
	e.cfg = cfg
	e.startService()
	d := &dataDir{lakeEnv: e, reloc: reloc}
	t.Cleanup(d.stop)
	return d
}

func (d *dataDir) stop() {
	if d.stopped {
		return
	}
	d.stopped = true
	d.store.SetLake(nil)
	errs := []error{d.store.Close(), d.ice.(io.Closer).Close(), d.cat.Close()}
	if err := errors.Join(errs...); err != nil {
		d.t.Fatal(err)
	}
}

func (d *dataDir) lake(name string) *table.Table {
	d.t.Helper()
	lt := d.svc.lookup(d.table(name).Def().ID)
	if lt == nil {
		d.t.Fatalf("%s has no lake", name)
	}
	return lt.state.Load().tbl
}

// fillConfig keeps 5 snapshots at maintenance.
var fillConfig = Config{Maintenance: Maintenance{RetainSnapshots: 5, SnapshotAge: -1}}

// fillBars, with fillConfig, gives bars a lake of several rounds, a compaction, expired
// snapshots, a log head deleted by retention and a tail only in the log.
func fillBars(t *testing.T, d *dataDir) {
	t.Helper()
	d.exec(`CREATE TABLE bars (id BIGINT NOT NULL, amount DOUBLE, kind VARCHAR)
		WITH ('bucket.num'='3', 'bucket.key'='id', 'log.segment.bytes'='1MiB', 'log.retention'='1ms', 'log.compression'='none')`)
	for i := 0; i < 12; i++ {
		d.ingest("bars", i*20_000, 20_000)
		d.round("bars")
	}
	if res, err := d.svc.Maintain(context.Background(), d.table("bars").Def().ID, false); err != nil || res.FilesCompacted == 0 || res.SnapshotsExpired == 0 {
		t.Fatalf("maintenance: %+v, %v; want compacted files and expired snapshots", res, err)
	}
	d.ingest("bars", 240_000, 20_000)
	d.round("bars")
	deleteTieredSegments(t, d.lakeEnv, d.table("bars"))
	d.ingest("bars", 260_000, 1000) // the log-only tail
}

// fileSums is the SHA-256 of every file under dir, by relative path.
func fileSums(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, de fs.DirEntry, err error) error {
		if err != nil || de.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		rel, _ := filepath.Rel(dir, p)
		out[rel] = hex.EncodeToString(sum[:])
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	if out, err := exec.Command("cp", "-a", from, to).CombinedOutput(); err != nil {
		t.Fatalf("cp -a: %v: %s", err, out)
	}
}

// lakeState is what a reader of bars sees: the union, the lake, and every
// bucket's changelog from offset 0 (from the lake's history, then the log).
type barsView struct {
	union, lake totals
	changes     [][]changeRow
}

func viewBars(t *testing.T, d *dataDir) barsView {
	t.Helper()
	v := barsView{union: d.totals("bars"), lake: d.totals("bars$lake")}
	tbl := d.table("bars")
	for b, end := range tbl.Log().CommittedEnds() {
		v.changes = append(v.changes, follow(t, tbl, b, 0, end))
	}
	return v
}

func (v barsView) equal(w barsView) bool {
	return v.union == w.union && v.lake == w.lake && slices.EqualFunc(v.changes, w.changes, slices.Equal)
}

// A data directory moved, or copied, with the node stopped starts at its
// new place with its lake relocated: the same snapshots, manifests and
// entries (every field; paths at the new place), the same rows in the
// union, the lake and the history; rounds, maintenance and the orphan pass
// go on there; a copy leaves its original unchanged byte for byte; and a
// second start relocates nothing.
func TestRelocateMovedAndCopied(t *testing.T) {
	for _, how := range []string{"move", "copy"} {
		t.Run(how, func(t *testing.T) {
			root := t.TempDir()
			a, b := filepath.Join(root, "a"), filepath.Join(root, "b")
			d := openDataDir(t, a, fillConfig, nil)
			fillBars(t, d)
			before := viewBars(t, d)
			dumpA := lakeDump(t, d.lake("bars"), "file://"+a)
			metaA := strings.TrimPrefix(d.lake("bars").MetadataLocation(), "file://"+a)
			if before.union != want(261_000) || before.lake != want(260_000) {
				t.Fatalf("before: union %v, lake %v", before.union, before.lake)
			}
			d.stop()
			var sumsA map[string]string
			if how == "move" {
				if err := os.Rename(a, b); err != nil {
					t.Fatal(err)
				}
			} else {
				copyDir(t, a, b)
				sumsA = fileSums(t, a)
			}

			d = openDataDir(t, b, Config{Maintenance: Maintenance{OrphanAge: 1}}, nil)
			if len(d.reloc.Moved) != 1 || d.reloc.Moved[0].Table != "default.bars" || len(d.store.Quarantined()) != 0 {
				t.Fatalf("relocation: %+v, quarantined %+v", d.reloc.Moved, d.store.Quarantined())
			}
			mv := d.reloc.Moved[0]
			t.Logf("relocated %s: %d snapshots, %d manifests, %d file entries in %v", mv.Table, mv.Snapshots, mv.Manifests, mv.Files, mv.Elapsed)
			tbl := d.lake("bars")
			if dumpB := lakeDump(t, tbl, "file://"+b); dumpB != dumpA {
				t.Fatalf("the relocated lake differs:\n%s", firstDiff(dumpA, dumpB))
			}
			wantMetadataLog(t, tbl, "file://"+b, "file://"+b+metaA)
			if after := viewBars(t, d); !after.equal(before) {
				t.Fatalf("after the %s: union %v, lake %v (before %v, %v), or the changelog differs", how, after.union, after.lake, before.union, before.lake)
			}
			// The orphan pass deletes the old manifests and manifest lists
			// (their paths name the old place) and keeps every file that
			// is referenced.
			if _, err := d.svc.Maintain(context.Background(), d.table("bars").Def().ID, true); err != nil {
				t.Fatal(err)
			}
			wantOnlyReferenced(t, d.lake("bars"), filepath.Join(b, "warehouse"))
			d.ingest("bars", 261_000, 1000)
			d.round("bars")
			if got := d.totals("bars"); got != want(262_000) {
				t.Fatalf("union after a round at the new place: %v", got)
			}
			d.stop()
			if sumsA != nil {
				if got := fileSums(t, a); !maps.Equal(got, sumsA) {
					t.Fatal("the original of the copy changed")
				}
			}
			d = openDataDir(t, b, Config{}, nil)
			if len(d.reloc.Moved) != 0 {
				t.Fatalf("a second start relocated %+v", d.reloc.Moved)
			}
			if got := d.totals("bars"); got != want(262_000) {
				t.Fatalf("union after a restart: %v", got)
			}
		})
	}
}

// A relocation that crashes between writing its files and switching the
// catalog row leaves the row at the old place: the table is quarantined
// (a copy never reads or commits into its original, which stays unchanged),
// and the next start relocates it — here after the copy was moved again —
// and the first attempt's files are orphans that the orphan pass deletes.
func TestRelocateInterrupted(t *testing.T) {
	root := t.TempDir()
	a, b, c := filepath.Join(root, "a"), filepath.Join(root, "b"), filepath.Join(root, "c")
	d := openDataDir(t, a, fillConfig, nil)
	fillBars(t, d)
	before := viewBars(t, d)
	dumpA := lakeDump(t, d.lake("bars"), "file://"+a)
	d.stop()
	copyDir(t, a, b)
	sumsA := fileSums(t, a)

	crash := errors.New("crash before the switch")
	var crashed []string
	d = openDataDir(t, b, Config{}, func(name string) error { crashed = append(crashed, name); return crash })
	if !slices.Equal(crashed, []string{"default.bars"}) || len(d.reloc.Moved) != 0 {
		t.Fatalf("crashed %v, moved %+v", crashed, d.reloc.Moved)
	}
	q := d.store.Quarantined()
	if len(q) != 1 || q[0].Table != "default.bars" || q[0].Part != tables.PartLake || !errors.Is(q[0].Err, ErrLakeElsewhere) {
		t.Fatalf("quarantined %+v, want bars's lake, elsewhere", q)
	}
	if _, err := d.store.Table(context.Background(), "", "bars"); !errors.Is(err, tables.ErrQuarantined) {
		t.Fatalf("read of bars: %v, want ErrQuarantined", err)
	}
	d.stop()
	whB := filepath.Join(b, "warehouse")
	written := countFiles(t, whB, ".avro") - countFiles(t, filepath.Join(a, "warehouse"), ".avro")
	if written == 0 {
		t.Fatal("the interrupted relocation wrote no file")
	}
	if got := fileSums(t, a); !maps.Equal(got, sumsA) {
		t.Fatal("the original changed")
	}

	if err := os.Rename(b, c); err != nil {
		t.Fatal(err)
	}
	d = openDataDir(t, c, Config{Maintenance: Maintenance{OrphanAge: 1}}, nil)
	if len(d.reloc.Moved) != 1 || len(d.store.Quarantined()) != 0 {
		t.Fatalf("relocation: %+v, quarantined %+v", d.reloc.Moved, d.store.Quarantined())
	}
	if got := lakeDump(t, d.lake("bars"), "file://"+c); got != dumpA {
		t.Fatalf("the relocated lake differs:\n%s", firstDiff(dumpA, got))
	}
	if after := viewBars(t, d); !after.equal(before) {
		t.Fatalf("after relocation: union %v, lake %v (before %v, %v), or the changelog differs", after.union, after.lake, before.union, before.lake)
	}
	if _, err := d.svc.Maintain(context.Background(), d.table("bars").Def().ID, true); err != nil {
		t.Fatal(err)
	}
	wantOnlyReferenced(t, d.lake("bars"), filepath.Join(c, "warehouse"))
	if got := fileSums(t, a); !maps.Equal(got, sumsA) {
		t.Fatal("the original changed")
	}
}

// The old place is the longest tail of the old metadata path found under
// the warehouse.
func TestOldPlace(t *testing.T) {
	files := map[string]bool{
		"default.db/bars/metadata/00003-x.metadata.json": true,
		"metadata/00003-x.metadata.json":                 true, // a shorter tail that also exists
	}
	exists := func(rel string) bool { return files[rel] }
	for _, c := range []struct{ uri, want string }{
		{"file:///old/dd/warehouse/default.db/bars/metadata/00003-x.metadata.json", "file:///old/dd/warehouse"},
		{"file:///w/default.db/bars/metadata/00003-x.metadata.json", "file:///w"},
		{"file:///x/y/bars/metadata/00003-x.metadata.json", "file:///x/y/bars"},
		{"file:///default.db/bars/metadata/00003-x.metadata.json", "file:///default.db/bars"}, // the whole path is no tail
		{"file:///metadata/00003-x.metadata.json", ""},                                        // nor is a file name alone
		{"file:///old/other/metadata/00004-y.metadata.json", ""},
		{"s3://bucket/default.db/bars/metadata/00003-x.metadata.json", ""},
	} {
		got, ok := oldPlace(c.uri, exists)
		if got != c.want || ok != (c.want != "") {
			t.Errorf("oldPlace(%s) = %q, %v; want %q", c.uri, got, ok, c.want)
		}
	}
}

// lakeDump describes every field of tbl's metadata, snapshots, manifest
// lists and manifests — but the paths of manifests and manifest lists,
// which a relocation writes anew — with every path relative to root.
func lakeDump(t *testing.T, tbl *table.Table, root string) string {
	t.Helper()
	rel := func(p string) string {
		r, ok := strings.CutPrefix(p, root+"/")
		if !ok {
			t.Fatalf("%s is not under %s", p, root)
		}
		return r
	}
	md := tbl.Metadata()
	var sb strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&sb, format+"\n", args...) }
	w("version %d uuid %s location %s last-column %d last-seq %d", md.Version(), md.TableUUID(), rel(md.Location()), md.LastColumnID(), md.LastSequenceNumber())
	js := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	w("schemas %s current %d", js(md.Schemas()), md.CurrentSchema().ID)
	w("specs %s default %d sort %s", js(md.PartitionSpecs()), md.DefaultPartitionSpec(), js(md.SortOrders()))
	props := md.Properties()
	for _, k := range slices.Sorted(maps.Keys(props)) {
		v := props[k]
		if strings.HasPrefix(v, "file://") {
			v = rel(v)
		}
		w("property %s = %s", k, v)
	}
	w("snapshot log %s refs %s", js(slices.Collect(md.SnapshotLogs())), js(maps.Collect(md.Refs())))
	fsys, err := tbl.FS(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, snap := range md.Snapshots() {
		s := snap
		s.ManifestList = ""
		w("snapshot %s", js(s))
		mfs, err := snap.Manifests(fsys)
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			rel(mf.FilePath())
			w("  manifest v%d spec %d content %v snapshot %d files %d/%d/%d rows %d/%d/%d seq %d min %d key %x first-row %v partitions %s",
				mf.Version(), mf.PartitionSpecID(), mf.ManifestContent(), mf.SnapshotID(),
				mf.AddedDataFiles(), mf.ExistingDataFiles(), mf.DeletedDataFiles(), mf.AddedRows(), mf.ExistingRows(), mf.DeletedRows(),
				mf.SequenceNum(), mf.MinSequenceNum(), mf.KeyMetadata(), deref(mf.FirstRowID()), js(mf.Partitions()))
			for e, err := range mf.Entries(fsys, false) {
				if err != nil {
					t.Fatal(err)
				}
				df := e.DataFile()
				ref := "-"
				if r := df.ReferencedDataFile(); r != nil {
					ref = rel(*r)
				}
				w("    entry %v snapshot %d seq %d file-seq %v: %v %s %s partition %v rows %d size %d sizes %v values %v nulls %v nans %v distinct %v lower %v upper %v key %x splits %v eq %v sort %v spec %d first-row %v ref %s offset %v length %v",
					e.Status(), e.SnapshotID(), e.SequenceNum(), deref(e.FileSequenceNum()),
					df.ContentType(), rel(df.FilePath()), df.FileFormat(), df.Partition(), df.Count(), df.FileSizeBytes(),
					df.ColumnSizes(), df.ValueCounts(), df.NullValueCounts(), df.NaNValueCounts(), df.DistinctValueCounts(),
					df.LowerBoundValues(), df.UpperBoundValues(), df.KeyMetadata(), df.SplitOffsets(), df.EqualityFieldIDs(),
					deref(df.SortOrderID()), df.SpecID(), deref(df.FirstRowID()), ref, deref(df.ContentOffset()), deref(df.ContentSizeInBytes()))
			}
		}
	}
	return sb.String()
}

func deref[T any](p *T) any {
	if p == nil {
		return "nil"
	}
	return *p
}

func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range min(len(al), len(bl)) {
		if al[i] != bl[i] {
			return fmt.Sprintf("line %d:\n before %s\n after  %s", i+1, al[i], bl[i])
		}
	}
	return fmt.Sprintf("%d lines before, %d after", len(al), len(bl))
}

// wantMetadataLog checks that the metadata log names files under root that
// exist, the last being prev, the metadata file before the relocation.
func wantMetadataLog(t *testing.T, tbl *table.Table, root, prev string) {
	t.Helper()
	log := slices.Collect(tbl.Metadata().PreviousFiles())
	if len(log) == 0 {
		t.Fatal("empty metadata log")
	}
	for _, e := range log {
		if !strings.HasPrefix(e.MetadataFile, root+"/") {
			t.Fatalf("metadata log entry %s is not under %s", e.MetadataFile, root)
		}
		if _, err := os.Stat(localPath(e.MetadataFile)); err != nil {
			t.Fatal(err)
		}
	}
	if last := log[len(log)-1].MetadataFile; last != prev {
		t.Fatalf("last metadata log entry %s, want %s", last, prev)
	}
	if !strings.HasPrefix(tbl.MetadataLocation(), root+"/") {
		t.Fatalf("metadata %s is not under %s", tbl.MetadataLocation(), root)
	}
}

// wantOnlyReferenced checks that every file under the warehouse dir is one
// that tbl references, and that every file it references is there.
func wantOnlyReferenced(t *testing.T, tbl *table.Table, dir string) {
	t.Helper()
	refs := map[string]bool{localPath(tbl.MetadataLocation()): true}
	for e := range tbl.Metadata().PreviousFiles() {
		refs[localPath(e.MetadataFile)] = true
	}
	fsys, err := tbl.FS(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, snap := range tbl.Metadata().Snapshots() {
		refs[localPath(snap.ManifestList)] = true
		mfs, err := snap.Manifests(fsys)
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			refs[localPath(mf.FilePath())] = true
			for e, err := range mf.Entries(fsys, true) {
				if err != nil {
					t.Fatal(err)
				}
				refs[localPath(e.DataFile().FilePath())] = true
			}
		}
	}
	found := map[string]bool{}
	filepath.WalkDir(dir, func(p string, de fs.DirEntry, err error) error {
		if err == nil && !de.IsDir() {
			found[p] = true
			if !refs[p] {
				t.Errorf("unreferenced file left: %s", p)
			}
		}
		return nil
	})
	for p := range refs {
		if !found[p] {
			t.Errorf("referenced file missing: %s", p)
		}
	}
}

// BenchmarkRelocate measures Relocate alone for a table of 20 and of 100
// snapshots (one per round, none expired), moving its data directory back
// and forth.
func BenchmarkRelocate(b *testing.B) {
	for _, rounds := range []int{20, 100} {
		b.Run(fmt.Sprintf("snapshots=%d", rounds), func(b *testing.B) {
			root := b.TempDir()
			dirs := [2]string{filepath.Join(root, "a"), filepath.Join(root, "b")}
			d := openDataDir(b, dirs[0], Config{}, nil)
			d.exec(createBars)
			for i := 0; i < rounds; i++ {
				d.ingest("bars", i*1000, 1000)
				d.round("bars")
			}
			d.stop()
			var mv MovedTable
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				from, to := dirs[i%2], dirs[(i+1)%2]
				if err := os.Rename(from, to); err != nil {
					b.Fatal(err)
				}
				r, err := Relocate(context.Background(), RelocateConfig{CatalogFile: filepath.Join(to, "iceberg.db"), Warehouse: "file://" + filepath.Join(to, "warehouse")})
				if err != nil || len(r.Moved) != 1 {
					b.Fatalf("relocate: %+v, %v", r, err)
				}
				mv = r.Moved[0]
			}
			b.ReportMetric(float64(mv.Manifests), "manifests")
			b.ReportMetric(float64(mv.Files), "entries")
		})
	}
}

// A relocation that fails before its switch — here a data file of a
// snapshot is missing at the new place — leaves no file behind and the
// catalog row as it was; the table is quarantined, and once the file is
// back a start relocates it.
func TestRelocateFailsCleanly(t *testing.T) {
	root := t.TempDir()
	a, b := filepath.Join(root, "a"), filepath.Join(root, "b")
	d := openDataDir(t, a, Config{}, nil)
	d.exec(createBars)
	for i := 0; i < 3; i++ {
		d.ingest("bars", i*1000, 1000)
		d.round("bars")
	}
	tasks, err := d.lake("bars").Scan().PlanFiles(context.Background())
	if err != nil || len(tasks) == 0 {
		t.Fatalf("%d files, %v", len(tasks), err)
	}
	hidden := strings.Replace(localPath(tasks[0].File.FilePath()), a, b, 1)
	d.stop()
	if err := os.Rename(a, b); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(hidden, hidden+".away"); err != nil {
		t.Fatal(err)
	}
	sums := fileSums(t, filepath.Join(b, "warehouse"))
	d = openDataDir(t, b, Config{}, nil)
	q := d.store.Quarantined()
	if len(d.reloc.Moved) != 0 || len(q) != 1 || !errors.Is(q[0].Err, ErrLakeElsewhere) || !strings.Contains(q[0].Err.Error(), filepath.Base(hidden)) {
		t.Fatalf("moved %+v, quarantined %+v; want bars quarantined naming the missing file", d.reloc.Moved, q)
	}
	d.stop()
	if got := fileSums(t, filepath.Join(b, "warehouse")); !maps.Equal(got, sums) {
		t.Fatal("the failed relocation left files behind")
	}
	if err := os.Rename(hidden+".away", hidden); err != nil {
		t.Fatal(err)
	}
	d = openDataDir(t, b, Config{}, nil)
	if len(d.reloc.Moved) != 1 || len(d.store.Quarantined()) != 0 {
		t.Fatalf("moved %+v, quarantined %+v", d.reloc.Moved, d.store.Quarantined())
	}
	if got := d.totals("bars"); got != want(3000) {
		t.Fatalf("union: %v", got)
	}
}

// DROP TABLE of a table quarantined outside the data directory drops its
// row from the copy's Iceberg catalog and deletes no file (they are the
// original's); the name can then be used again.
func TestDropTableLeftElsewhere(t *testing.T) {
	root := t.TempDir()
	a, b := filepath.Join(root, "a"), filepath.Join(root, "b")
	d := openDataDir(t, a, Config{}, nil)
	d.exec(createBars)
	d.ingest("bars", 0, 1000)
	d.round("bars")
	d.stop()
	copyDir(t, a, b)
	sumsA := fileSums(t, a)
	d = openDataDir(t, b, Config{}, func(string) error { return errors.New("crash") })
	if q := d.store.Quarantined(); len(q) != 1 || !errors.Is(q[0].Err, ErrLakeElsewhere) {
		t.Fatalf("quarantined %+v", q)
	}
	d.exec(`DROP TABLE bars`)
	if ok, err := d.ice.CheckTableExists(context.Background(), table.Identifier{"default", "bars"}); ok || err != nil {
		t.Fatalf("the Iceberg row of the dropped table: exists %v, %v", ok, err)
	}
	d.exec(createBars)
	d.ingest("bars", 0, 500)
	d.round("bars")
	if got := d.totals("bars$lake"); got != want(500) {
		t.Fatalf("the new table's lake: %v", got)
	}
	d.stop()
	if got := fileSums(t, a); !maps.Equal(got, sumsA) {
		t.Fatal("the original changed")
	}
}
