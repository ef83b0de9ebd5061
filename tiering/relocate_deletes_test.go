package tiering

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
)

// posIdent names an Iceberg table of the embedded lake, written by iceberg-go
// alone (no Lakestream table), partitioned by part, with format-v2 position
// delete files — partition-scoped ones with truncated file_path bounds, a
// file-scoped one with exact bounds and a referenced data file, one of two
// row groups — over three snapshots.
var posIdent = table.Identifier{"default", "pos"}

var posSchema = iceberg.NewSchema(0,
	iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
	iceberg.NestedField{ID: 2, Name: "part", Type: iceberg.PrimitiveTypes.Int32, Required: true},
	iceberg.NestedField{ID: 3, Name: "name", Type: iceberg.PrimitiveTypes.String},
)

var posSpec = iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{2}, FieldID: 1000, Name: "part", Transform: iceberg.IdentityTransform{}})

func openLakeCatalog(t *testing.T, dir string) icecatalog.Catalog {
	t.Helper()
	cat, err := OpenCatalog(context.Background(), StorageConfig{Catalog: "sqlite://" + filepath.Join(dir, "iceberg.db"), Warehouse: "file://" + filepath.Join(dir, "warehouse")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cat.(io.Closer).Close() })
	return cat
}

// writeParquet writes rec to the file uri in row groups of rgRows rows and
// returns its DataFile.
func writeParquet(t *testing.T, uri string, rec arrow.RecordBatch, rgRows int64, args table.DataFileArgs) iceberg.DataFile {
	t.Helper()
	p := localPath(uri)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	fw, err := pqarrow.NewFileWriter(rec.Schema(), f, parquet.NewWriterProperties(parquet.WithStats(true)), pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	tbl := array.NewTableFromRecords(rec.Schema(), []arrow.RecordBatch{rec})
	defer tbl.Release()
	if err := fw.WriteTable(tbl, rgRows); err != nil {
		t.Fatal(err)
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if args.Metadata, err = fw.FileMetadata(); err != nil {
		t.Fatal(err)
	}
	args.FilePath, args.FileSize, args.Format, args.FormatVersion = uri, fi.Size(), iceberg.ParquetFile, 2
	df, err := table.DataFileFromMetadata(args)
	if err != nil {
		t.Fatal(err)
	}
	return df
}

// posData writes a data file of partition part with the ids from..to-1.
func posData(t *testing.T, tbl *table.Table, part int32, name string, from, to int64) iceberg.DataFile {
	t.Helper()
	sc, err := table.SchemaToArrowSchema(posSchema, nil, true, false)
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for id := from; id < to; id++ {
		b.Field(0).(*array.Int64Builder).Append(id)
		b.Field(1).(*array.Int32Builder).Append(part)
		b.Field(2).(*array.StringBuilder).Append(fmt.Sprintf("row-%d", id))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	uri := tbl.Location() + fmt.Sprintf("/data/part=%d/%s.parquet", part, name)
	return writeParquet(t, uri, rec, 1<<20, table.DataFileArgs{Schema: posSchema, Spec: posSpec, Content: iceberg.EntryContentData, PartitionValues: map[int]any{1000: part}})
}

type posDelete struct {
	file iceberg.DataFile
	pos  int64
}

// writeRelocDeletes writes a position delete file of partition part deleting
// dels (sorted by path, then position), in row groups of rgRows; a
// file-scoped one names its single data file.
func writeRelocDeletes(t *testing.T, tbl *table.Table, part int32, name string, rgRows int64, fileScoped bool, dels ...posDelete) iceberg.DataFile {
	t.Helper()
	slices.SortFunc(dels, func(a, b posDelete) int {
		if c := strings.Compare(a.file.FilePath(), b.file.FilePath()); c != 0 {
			return c
		}
		return int(a.pos - b.pos)
	})
	b := array.NewRecordBuilder(memory.DefaultAllocator, table.PositionalDeleteArrowSchema)
	defer b.Release()
	for _, d := range dels {
		b.Field(0).(*array.StringBuilder).Append(d.file.FilePath())
		b.Field(1).(*array.Int64Builder).Append(d.pos)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	args := table.DataFileArgs{Schema: iceberg.PositionalDeleteSchema, Spec: posSpec, Content: iceberg.EntryContentPosDeletes, PartitionValues: map[int]any{1000: part}}
	if fileScoped {
		ref := dels[0].file.FilePath()
		args.ReferencedDataFile = &ref
	}
	uri := tbl.Location() + fmt.Sprintf("/data/part=%d/%s-deletes.parquet", part, name)
	return writeParquet(t, uri, rec, rgRows, args)
}

func commitDelta(t *testing.T, tbl *table.Table, rows, deletes []iceberg.DataFile) *table.Table {
	t.Helper()
	tx := tbl.NewTransaction()
	if err := tx.NewRowDelta(nil).AddRows(rows...).AddDeletes(deletes...).Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	tbl, err := tx.Commit(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

func positions(f iceberg.DataFile, ps ...int64) []posDelete {
	out := make([]posDelete, len(ps))
	for i, p := range ps {
		out[i] = posDelete{f, p}
	}
	return out
}

// createPosTable fills the data directory dir with posTable: 250 rows in
// three data files, 26 of them deleted by three delete files.
func createPosTable(t *testing.T, dir string) {
	t.Helper()
	ctx := context.Background()
	cat := openLakeCatalog(t, dir)
	if err := cat.CreateNamespace(ctx, table.Identifier{"default"}, nil); err != nil {
		t.Fatal(err)
	}
	tbl, err := cat.CreateTable(ctx, posIdent, posSchema, icecatalog.WithPartitionSpec(&posSpec),
		icecatalog.WithProperties(iceberg.Properties{table.PropertyFormatVersion: "2"}))
	if err != nil {
		t.Fatal(err)
	}
	d0, d1 := posData(t, tbl, 0, "d0", 0, 100), posData(t, tbl, 1, "d1", 100, 200)
	tbl = commitDelta(t, tbl, []iceberg.DataFile{d0, d1}, nil)
	d2 := posData(t, tbl, 0, "d2", 200, 250)
	del0 := writeRelocDeletes(t, tbl, 0, "del0", 4, false, append(positions(d0, 3, 5, 7, 9, 11), positions(d2, 0, 1, 49)...)...)
	del1 := writeRelocDeletes(t, tbl, 1, "del1", 1<<20, true, positions(d1, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19)...)
	tbl = commitDelta(t, tbl, []iceberg.DataFile{d2}, []iceberg.DataFile{del0, del1})
	del2 := writeRelocDeletes(t, tbl, 0, "del2", 1<<20, false, positions(d0, 50, 51, 52, 53, 54, 55, 56, 57)...)
	commitDelta(t, tbl, nil, []iceberg.DataFile{del2})
	cat.(io.Closer).Close()
}

// posRows are the rows iceberg-go's scanner returns for the table in the
// data directory dir (position deletes applied), sorted.
func posRows(t *testing.T, dir string) []string {
	t.Helper()
	cat := openLakeCatalog(t, dir)
	defer cat.(io.Closer).Close()
	tbl, err := cat.LoadTable(context.Background(), posIdent)
	if err != nil {
		t.Fatal(err)
	}
	at, err := tbl.Scan().ToArrowTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	rd := array.NewTableReader(at, 0)
	defer rd.Release()
	var out []string
	for rd.Next() {
		rec := rd.RecordBatch()
		ids, parts, names := rec.Column(0).(*array.Int64), rec.Column(1).(*array.Int32), rec.Column(2).(*array.String)
		for i := range int(rec.NumRows()) {
			out = append(out, fmt.Sprintf("%d/%d/%s", ids.Value(i), parts.Value(i), names.Value(i)))
		}
	}
	slices.Sort(out)
	return out
}

// deleteFiles describes every position delete file that a snapshot of the
// table in dir lists, live or not, by its name before any relocation: its
// rows (paths relative to dir), in order. It checks what a relocation must
// keep true: each file exists under dir with the size its entry gives, its
// columns carry the reserved field ids, its rows and entry count agree, its
// file_path bounds (if any) hold its paths — exact when it is file-scoped
// or relocated — and a referenced data file is under dir.
func deleteFiles(t *testing.T, dir string) map[string][]string {
	t.Helper()
	cat := openLakeCatalog(t, dir)
	defer cat.(io.Closer).Close()
	tbl, err := cat.LoadTable(context.Background(), posIdent)
	if err != nil {
		t.Fatal(err)
	}
	fsys, err := tbl.FS(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	root := "file://" + dir + "/"
	out := map[string][]string{}
	for _, snap := range tbl.Metadata().Snapshots() {
		mfs, err := snap.Manifests(fsys)
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.ManifestContent() != iceberg.ManifestContentDeletes {
				continue
			}
			for e, err := range mf.Entries(fsys, false) {
				if err != nil {
					t.Fatal(err)
				}
				df := e.DataFile()
				name := path.Base(df.FilePath())
				relocated := strings.HasPrefix(name, "reloc-")
				if relocated {
					name = name[len("reloc-")+37:]
				}
				rows, lo, hi := readDeletes(t, df, root)
				if prev, ok := out[name]; ok && !slices.Equal(prev, rows) {
					t.Fatalf("%s: two different files", name)
				}
				out[name] = rows
				if lower, ok := df.LowerBoundValues()[posDeleteFilePathID]; ok {
					upper := df.UpperBoundValues()[posDeleteFilePathID]
					exact := relocated || df.ReferencedDataFile() != nil
					if string(lower) > lo || string(upper) < hi || exact && (string(lower) != lo || string(upper) != hi) {
						t.Fatalf("%s: file_path bounds %q..%q, paths %q..%q", df.FilePath(), lower, upper, lo, hi)
					}
				}
				if ref := df.ReferencedDataFile(); ref != nil && (!strings.HasPrefix(*ref, root) || *ref != lo || *ref != hi) {
					t.Fatalf("%s: referenced data file %s, paths %s..%s", df.FilePath(), *ref, lo, hi)
				}
			}
		}
	}
	return out
}

// entryDump describes every manifest and entry of every snapshot of the
// table in dir but what a relocation changes: paths, and a delete file's
// size, column sizes, split offsets and bounds.
func entryDump(t *testing.T, dir string) string {
	t.Helper()
	cat := openLakeCatalog(t, dir)
	defer cat.(io.Closer).Close()
	tbl, err := cat.LoadTable(context.Background(), posIdent)
	if err != nil {
		t.Fatal(err)
	}
	fsys, err := tbl.FS(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	js := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	var sb strings.Builder
	for _, snap := range tbl.Metadata().Snapshots() {
		fmt.Fprintf(&sb, "snapshot %d parent %v seq %d summary %v\n", snap.SnapshotID, deref(snap.ParentSnapshotID), snap.SequenceNumber, snap.Summary)
		mfs, err := snap.Manifests(fsys)
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			fmt.Fprintf(&sb, "  manifest v%d spec %d content %v snapshot %d files %d/%d/%d rows %d/%d/%d seq %d min %d partitions %v\n",
				mf.Version(), mf.PartitionSpecID(), mf.ManifestContent(), mf.SnapshotID(),
				mf.AddedDataFiles(), mf.ExistingDataFiles(), mf.DeletedDataFiles(), mf.AddedRows(), mf.ExistingRows(), mf.DeletedRows(),
				mf.SequenceNum(), mf.MinSequenceNum(), js(mf.Partitions()))
			for e, err := range mf.Entries(fsys, false) {
				if err != nil {
					t.Fatal(err)
				}
				df := e.DataFile()
				fmt.Fprintf(&sb, "    entry %v snapshot %d seq %d file-seq %v: %v %s partition %v rows %d values %v nulls %v spec %d\n",
					e.Status(), e.SnapshotID(), e.SequenceNum(), deref(e.FileSequenceNum()), df.ContentType(), df.FileFormat(),
					df.Partition(), df.Count(), df.ValueCounts(), df.NullValueCounts(), df.SpecID())
				if df.ContentType() == iceberg.EntryContentData {
					fmt.Fprintf(&sb, "      size %d sizes %v lower %v upper %v splits %v\n", df.FileSizeBytes(), df.ColumnSizes(), df.LowerBoundValues(), df.UpperBoundValues(), df.SplitOffsets())
				}
			}
		}
	}
	return sb.String()
}

// readDeletes reads the position delete file df under root.
func readDeletes(t *testing.T, df iceberg.DataFile, root string) (rows []string, lo, hi string) {
	t.Helper()
	if !strings.HasPrefix(df.FilePath(), root) {
		t.Fatalf("%s is not under %s", df.FilePath(), root)
	}
	p := localPath(df.FilePath())
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() != df.FileSizeBytes() {
		t.Fatalf("%s: %d bytes, its entry says %d", p, fi.Size(), df.FileSizeBytes())
	}
	pf, err := file.OpenParquetFile(p, false)
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	sc := pf.MetaData().Schema
	if sc.NumColumns() != 2 || sc.Column(0).SchemaNode().FieldID() != posDeleteFilePathID || sc.Column(1).SchemaNode().FieldID() != posDeletePosID {
		t.Fatalf("%s: schema %s", p, sc)
	}
	if want := df.SplitOffsets(); want != nil {
		var got []int64
		for rg := range pf.NumRowGroups() {
			got = append(got, pf.MetaData().RowGroup(rg).FileOffset())
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%s: row groups at %v, split offsets %v", p, got, want)
		}
	}
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	at, err := fr.ReadTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	rd := array.NewTableReader(at, 0)
	defer rd.Release()
	for rd.Next() {
		rec := rd.RecordBatch()
		paths, pos := rec.Column(0).(*array.String), rec.Column(1).(*array.Int64)
		for i := range int(rec.NumRows()) {
			fp := paths.Value(i)
			rel, ok := strings.CutPrefix(fp, root)
			if !ok {
				t.Fatalf("%s: file_path %s is not under %s", p, fp, root)
			}
			if lo == "" || fp < lo {
				lo = fp
			}
			hi = max(hi, fp)
			rows = append(rows, fmt.Sprintf("%s#%d", rel, pos.Value(i)))
		}
	}
	if int64(len(rows)) != df.Count() {
		t.Fatalf("%s: %d rows, its entry says %d", p, len(rows), df.Count())
	}
	return rows, lo, hi
}

func relocateDir(t *testing.T, dir string, beforeSwitch func(string) error) *Relocation {
	t.Helper()
	r, err := Relocate(context.Background(), RelocateConfig{CatalogFile: filepath.Join(dir, "iceberg.db"), Warehouse: "file://" + filepath.Join(dir, "warehouse"), BeforeSwitch: beforeSwitch})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func countRelocated(t *testing.T, dir string) int {
	t.Helper()
	n := 0
	filepath.WalkDir(dir, func(p string, _ os.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(filepath.Base(p), "reloc-") {
			n++
		}
		return nil
	})
	return n
}

// A table with position delete files moved, or copied, is relocated: its
// delete files are written anew with every file_path at the new place (same
// rows in the same order, same field ids, row groups, new sizes and exact
// bounds), iceberg-go's scanner returns the same rows there (the deletes
// applied), the original of a copy is unchanged byte for byte, and moving
// it again relocates the relocated files (their names do not grow).
func TestRelocatePositionDeletes(t *testing.T) {
	for _, how := range []string{"move", "copy"} {
		t.Run(how, func(t *testing.T) {
			root := t.TempDir()
			a, b, c := filepath.Join(root, "a"), filepath.Join(root, "b"), filepath.Join(root, "c")
			createPosTable(t, a)
			rows := posRows(t, a)
			if len(rows) != 250-26 {
				t.Fatalf("%d rows before, want 224 (are the deletes applied?)", len(rows))
			}
			dels, dump := deleteFiles(t, a), entryDump(t, a)
			if len(dels) != 3 {
				t.Fatalf("delete files %v", slices.Collect(maps.Keys(dels)))
			}
			var sumsA map[string]string
			if how == "move" {
				if err := os.Rename(a, b); err != nil {
					t.Fatal(err)
				}
			} else {
				copyDir(t, a, b)
				sumsA = fileSums(t, a)
			}
			r := relocateDir(t, b, nil)
			if len(r.Moved) != 1 || r.Moved[0].Deletes != 3 || r.Elsewhere(posIdent) != nil {
				t.Fatalf("relocation %+v, elsewhere %v", r.Moved, r.Elsewhere(posIdent))
			}
			if got := deleteFiles(t, b); !maps.EqualFunc(got, dels, slices.Equal) {
				t.Fatalf("delete files after the %s:\n%v\nbefore:\n%v", how, got, dels)
			}
			if got := entryDump(t, b); got != dump {
				t.Fatalf("manifests after the %s differ:\n%s", how, firstDiff(dump, got))
			}
			if how == "copy" {
				// The copy reads nothing of the original.
				if err := os.Rename(a, a+".away"); err != nil {
					t.Fatal(err)
				}
			}
			if got := posRows(t, b); !slices.Equal(got, rows) {
				t.Fatalf("rows after the %s: %d, before %d", how, len(got), len(rows))
			}
			if how == "copy" {
				if err := os.Rename(a+".away", a); err != nil {
					t.Fatal(err)
				}
				if got := fileSums(t, a); !maps.Equal(got, sumsA) {
					t.Fatal("the original of the copy changed")
				}
			}
			if r := relocateDir(t, b, nil); len(r.Moved) != 0 {
				t.Fatalf("a second start relocated %+v", r.Moved)
			}

			if err := os.Rename(b, c); err != nil {
				t.Fatal(err)
			}
			if r := relocateDir(t, c, nil); len(r.Moved) != 1 || r.Moved[0].Deletes != 3 {
				t.Fatalf("relocation again: %+v, %v", r.Moved, r.Elsewhere(posIdent))
			}
			if got := deleteFiles(t, c); !maps.EqualFunc(got, dels, slices.Equal) {
				t.Fatalf("delete files after moving again:\n%v\nbefore:\n%v", got, dels)
			}
			if got := entryDump(t, c); got != dump {
				t.Fatalf("manifests after moving again differ:\n%s", firstDiff(dump, got))
			}
			if got := posRows(t, c); !slices.Equal(got, rows) {
				t.Fatalf("rows after moving again: %d, before %d", len(got), len(rows))
			}
		})
	}
}

// A relocation of a table with position deletes interrupted between its
// files and its switch leaves the row at the old place (the table is
// elsewhere, the original unchanged); the next start, after a further
// move, relocates it, and the first attempt's delete files are referenced
// by nothing.
func TestRelocatePositionDeletesInterrupted(t *testing.T) {
	root := t.TempDir()
	a, b, c := filepath.Join(root, "a"), filepath.Join(root, "b"), filepath.Join(root, "c")
	createPosTable(t, a)
	rows, dels := posRows(t, a), deleteFiles(t, a)
	copyDir(t, a, b)
	sumsA := fileSums(t, a)
	crash := errors.New("crash before the switch")
	r := relocateDir(t, b, func(string) error { return crash })
	if len(r.Moved) != 0 || !errors.Is(r.Elsewhere(posIdent), ErrLakeElsewhere) {
		t.Fatalf("moved %+v, elsewhere %v", r.Moved, r.Elsewhere(posIdent))
	}
	if n := countRelocated(t, b); n != 3 {
		t.Fatalf("the interrupted relocation wrote %d delete files, want 3", n)
	}
	if got := fileSums(t, a); !maps.Equal(got, sumsA) {
		t.Fatal("the original changed")
	}
	if err := os.Rename(b, c); err != nil {
		t.Fatal(err)
	}
	r = relocateDir(t, c, nil)
	if len(r.Moved) != 1 || r.Moved[0].Deletes != 3 || r.Elsewhere(posIdent) != nil {
		t.Fatalf("relocation: %+v, elsewhere %v", r.Moved, r.Elsewhere(posIdent))
	}
	if got := deleteFiles(t, c); !maps.EqualFunc(got, dels, slices.Equal) {
		t.Fatalf("delete files:\n%v\nbefore:\n%v", got, dels)
	}
	if got := posRows(t, c); !slices.Equal(got, rows) {
		t.Fatalf("rows after relocation: %d, before %d", len(got), len(rows))
	}
	if n := countRelocated(t, c); n != 6 {
		t.Fatalf("%d relocated delete files, want 3 orphans and 3 referenced", n)
	}
	if got := fileSums(t, a); !maps.Equal(got, sumsA) {
		t.Fatal("the original changed")
	}
}

// A format-version 3 table is not relocated: it stays elsewhere, with an
// error that says why.
func TestRelocateRefusesFormatV3(t *testing.T) {
	root := t.TempDir()
	a, b := filepath.Join(root, "a"), filepath.Join(root, "b")
	ctx := context.Background()
	cat := openLakeCatalog(t, a)
	if err := cat.CreateNamespace(ctx, table.Identifier{"default"}, nil); err != nil {
		t.Fatal(err)
	}
	tbl, err := cat.CreateTable(ctx, posIdent, posSchema, icecatalog.WithPartitionSpec(&posSpec),
		icecatalog.WithProperties(iceberg.Properties{table.PropertyFormatVersion: "3"}))
	if err != nil {
		t.Fatal(err)
	}
	commitDelta(t, tbl, []iceberg.DataFile{posData(t, tbl, 0, "d0", 0, 10)}, nil)
	cat.(io.Closer).Close()
	if err := os.Rename(a, b); err != nil {
		t.Fatal(err)
	}
	sums := fileSums(t, b)
	r := relocateDir(t, b, nil)
	if err := r.Elsewhere(posIdent); len(r.Moved) != 0 || !errors.Is(err, ErrLakeElsewhere) || !strings.Contains(fmt.Sprint(err), "format version 3") {
		t.Fatalf("moved %+v, elsewhere %v", r.Moved, err)
	}
	if got := fileSums(t, b); !maps.Equal(got, sums) {
		t.Fatal("the refused relocation left files behind")
	}
}
