package tiering

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"math/big"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	"github.com/apache/iceberg-go/table"
	_ "modernc.org/sqlite" // database/sql driver "sqlite"

	"github.com/lakestream/lakestream/catalog"
	"github.com/lakestream/lakestream/internal/bucket"
)

// everyTypeDDL has a column of each SQL type of catalog/types_arrow.go, with
// TINYINT and SMALLINT also inside a map, a struct and a list of structs,
// where they must be cast back from Iceberg's int too.
const everyTypeDDL = `CREATE TABLE everything (
	id BIGINT NOT NULL, b BOOLEAN, i8 TINYINT, i16 SMALLINT NOT NULL, i32 INTEGER, i64 BIGINT,
	f32 FLOAT, f64 DOUBLE, d10 DECIMAL(10,2), d38 DECIMAL(38,0), s VARCHAR, bin BLOB,
	dt DATE, tm TIME, ts TIMESTAMP, tz TIMESTAMPTZ,
	tags VARCHAR[], grid INTEGER[][], attrs MAP(VARCHAR, SMALLINT),
	pt STRUCT(x TINYINT, y VARCHAR, z DECIMAL(5,1)[]),
	items STRUCT(sku VARCHAR, qty SMALLINT)[]
) PARTITIONED BY (day(ts)) WITH ('bucket.key' = 'id', 'bucket.num' = '4')`

func TestSchemaMapping(t *testing.T) {
	def := resolveTable(t, everyTypeDDL)
	sch, err := icebergSchema(def)
	if err != nil {
		t.Fatal(err)
	}
	// iceberg-go numbers fields depth first: a nested type's fields take
	// the ids after its column's.
	want := []struct {
		id       int
		typ      string
		required bool
	}{
		{1, "long", true}, {2, "boolean", false}, {3, "int", false}, {4, "int", true}, {5, "int", false},
		{6, "long", false}, {7, "float", false}, {8, "double", false},
		{9, "decimal(10, 2)", false}, {10, "decimal(38, 0)", false}, {11, "string", false}, {12, "binary", false},
		{13, "date", false}, {14, "time", false}, {15, "timestamp", false}, {16, "timestamptz", false},
		{17, "list<string>", false}, {19, "list<list<int>>", false}, {22, "map<string, int>", false},
		{25, "struct<26: x: optional int, 27: y: optional string, 28: z: optional list<decimal(5, 1)>>", false},
		{30, "list<struct<32: sku: optional string, 33: qty: optional int>>", false},
	}
	fields := sch.Fields()
	if len(fields) != len(want) {
		t.Fatalf("schema has %d fields, want %d:\n%s", len(fields), len(want), sch)
	}
	for i, f := range fields {
		w := want[i]
		if f.ID != w.id || f.Name != def.Columns[i].Name || f.Type.String() != w.typ || f.Required != w.required {
			t.Errorf("field %d = %d %s %s required=%v, want %d %s %s required=%v",
				i, f.ID, f.Name, f.Type, f.Required, w.id, def.Columns[i].Name, w.typ, w.required)
		}
	}
	// Every nested field has an id of its own: 21 columns, tags' element,
	// grid's two elements, attrs' key and value, pt's 3 fields and z's
	// element, items' element and its 2 fields.
	if got := sch.HighestFieldID(); got != 21+1+2+2+4+3 {
		t.Errorf("highest field id = %d, want %d", got, 21+1+2+2+4+3)
	}
	if f := fields[18].Type.(*iceberg.MapType); f.ValueRequired || f.KeyID == 0 || f.ValueID == 0 {
		t.Errorf("map type %+v: want an optional value and both ids assigned", f)
	}

	// iceberg-go's own conversion of the table's Arrow schema agrees.
	fromArrow, err := table.ArrowSchemaToIcebergWithFreshIDs(def.ArrowSchema(), false)
	if err != nil {
		t.Fatal(err)
	}
	if !fromArrow.Equals(sch) {
		t.Errorf("ArrowSchemaToIcebergWithFreshIDs differs:\n%s\nwant\n%s", fromArrow, sch)
	}
}

func TestSchemaRoundTripEveryType(t *testing.T) {
	ctx := context.Background()
	def := resolveTable(t, everyTypeDDL)
	lake := newLake(t)
	tbl := createLakeTable(t, lake, "everything", def)
	if got := tbl.Spec().String(); !strings.Contains(got, "ts_day") || !strings.Contains(got, "id_bucket") {
		t.Errorf("lake table spec = %s, want ts_day and id_bucket", got)
	}

	mem := checkedMem(t)
	r := rand.New(rand.NewPCG(1, 2))
	in1 := randomRecord(t, def.ArrowSchema(), 0, 150, r)
	defer in1.Release()
	in2 := randomRecord(t, def.ArrowSchema(), 150, 150, r)
	defer in2.Release()
	tbl = appendLake(t, tbl, in1, in2)

	got := readLake(ctx, t, tbl, def.ArrowSchema(), mem)
	defer releaseRows(got)
	if len(got) < 2 {
		t.Errorf("read %d files, want several (day and bucket partitions)", len(got))
	}
	checkRows(t, got, []arrow.RecordBatch{in1, in2}, def.ArrowSchema())

	// What conformLakeRecord had to change: iceberg-go reads the same
	// types as the table's, nested names included, except int32 for
	// TINYINT and SMALLINT, also inside nested columns.
	var differ []string
	for i, f := range got[0].read.Fields() {
		if !exactType(f.Type, def.ArrowSchema().Field(i).Type) {
			differ = append(differ, f.Name)
		}
	}
	if want := []string{"i8", "i16", "attrs", "pt", "items"}; !slices.Equal(differ, want) {
		t.Errorf("iceberg-go reads columns %q with other types than the table's, want %q; read schema:\n%s", differ, want, got[0].read)
	}
}

func TestConformProjection(t *testing.T) {
	// A projection of the table's schema, in another order, conforms too.
	ctx := context.Background()
	def := resolveTable(t, everyTypeDDL)
	tbl := createLakeTable(t, newLake(t), "everything", def)
	in := randomRecord(t, def.ArrowSchema(), 0, 40, rand.New(rand.NewPCG(3, 4)))
	defer in.Release()
	tbl = appendLake(t, tbl, in)

	full := def.ArrowSchema()
	pick := []string{"items", "id", "i8", "attrs"}
	fields := make([]arrow.Field, len(pick))
	cols := make([]arrow.Array, len(pick))
	for i, name := range pick {
		idx := full.FieldIndices(name)[0]
		fields[i], cols[i] = full.Field(idx), in.Column(idx)
	}
	target := arrow.NewSchema(fields, nil)
	want := array.NewRecordBatch(target, cols, in.NumRows())
	defer want.Release()

	mem := checkedMem(t)
	got := readLake(ctx, t, tbl, target, mem)
	defer releaseRows(got)
	checkRows(t, got, []arrow.RecordBatch{want}, target)
}

func TestPartitionSpec(t *testing.T) {
	tests := []struct {
		name, ddl string
		want      []string // field id, name, transform, source column
		wantErr   string
	}{
		{"day and single-column bucket key",
			`CREATE TABLE t (id BIGINT, ts TIMESTAMP, v VARCHAR) PARTITIONED BY (day(ts))
			 WITH ('bucket.key' = 'id', 'bucket.num' = '4')`,
			[]string{"1000 ts_day day ts", "1001 id_bucket bucket[4] id"}, ""},
		{"multi-column bucket key: no Iceberg equivalent",
			`CREATE TABLE t (id BIGINT, ts TIMESTAMP, v VARCHAR) PARTITIONED BY (day(ts))
			 WITH ('bucket.key' = 'id, v', 'bucket.num' = '4')`,
			[]string{"1000 ts_day day ts"}, ""},
		{"keyless",
			`CREATE TABLE t (id BIGINT, ts TIMESTAMP) PARTITIONED BY (day(ts)) WITH ('bucket.num' = '4')`,
			[]string{"1000 ts_day day ts"}, ""},
		{"one bucket",
			`CREATE TABLE t (id BIGINT, ts TIMESTAMP) WITH ('bucket.key' = 'id', 'bucket.num' = '1')`,
			nil, ""},
		{"primary key as bucket key, every transform",
			`CREATE TABLE t (id INT, region VARCHAR, d DATE, m TIMESTAMP, h TIMESTAMPTZ, v DOUBLE,
			   PRIMARY KEY (id, region, d, m, h))
			 PARTITIONED BY (region, year(d), month(m), hour(h)) WITH ('bucket.key' = 'ID', 'bucket.num' = '8')`,
			[]string{"1000 region identity region", "1001 d_year year d", "1002 m_month month m",
				"1003 h_hour hour h", "1004 id_bucket bucket[8] id"}, ""},
		{"partition name taken by a column",
			`CREATE TABLE t (id VARCHAR, id_bucket INT, ts TIMESTAMP, ts_day DATE) PARTITIONED BY (day(ts), id_bucket)
			 WITH ('bucket.key' = 'id', 'bucket.num' = '16')`,
			[]string{"1000 ts_day_ day ts", "1001 id_bucket identity id_bucket", "1002 id_bucket_ bucket[16] id"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			def := resolveTable(t, tt.ddl)
			sch, err := icebergSchema(def)
			if err != nil {
				t.Fatal(err)
			}
			spec, err := partitionSpec(def, sch)
			if tt.wantErr != "" || err != nil {
				if err == nil || tt.wantErr == "" || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("partitionSpec: %v, want error %q", err, tt.wantErr)
				}
				return
			}
			var got []string
			for _, f := range spec.Fields() {
				src, _ := sch.FindColumnName(f.SourceID())
				got = append(got, fmt.Sprintf("%d %s %s %s", f.FieldID, f.Name, f.Transform, src))
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("spec fields = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestPartitionBucketsMatchLog checks that lake partition id_bucket=b holds
// exactly the rows the log puts in bucket b, so that a union read can pair
// them. A null key is the exception: the log puts it in bucket 0, Iceberg's
// bucket transform in the null partition.
func TestPartitionBucketsMatchLog(t *testing.T) {
	ctx := context.Background()
	for _, typ := range []string{"BIGINT", "INTEGER", "VARCHAR"} {
		t.Run(typ, func(t *testing.T) {
			def := resolveTable(t, fmt.Sprintf(`CREATE TABLE t (id BIGINT NOT NULL, k %s, v DOUBLE)
				WITH ('bucket.key' = 'k', 'bucket.num' = '5')`, typ))
			tbl := createLakeTable(t, newLake(t), "t", def)
			in := randomRecord(t, def.ArrowSchema(), 0, 400, rand.New(rand.NewPCG(5, 6)))
			defer in.Release()
			tbl = appendLake(t, tbl, in)

			assigner, err := bucket.NewAssigner(def.ArrowSchema(), def.BucketKeyIndexes(), def.Options.BucketNum)
			if err != nil {
				t.Fatal(err)
			}
			mem := checkedMem(t)
			files := readLake(ctx, t, tbl, def.ArrowSchema(), mem)
			defer releaseRows(files)
			seen := map[any]bool{}
			for _, f := range files {
				part := f.partition[iceberg.PartitionDataIDStart]
				seen[part] = true
				key := f.rec.Column(1)
				for i, b := range assigner.Assign(f.rec, nil) {
					switch {
					case key.IsNull(i) && (part != nil || b != 0):
						t.Errorf("null key in partition %v, log bucket %d; want partition null, log bucket 0", part, b)
					case key.IsValid(i) && part != b:
						t.Errorf("row %s is in lake partition k_bucket=%v, log bucket %d", key.ValueStr(i), part, b)
					}
				}
			}
			if len(seen) != def.Options.BucketNum+1 {
				t.Errorf("partitions %v, want %d buckets and null", seen, def.Options.BucketNum)
			}
			checkRows(t, files, []arrow.RecordBatch{in}, def.ArrowSchema())
		})
	}
}

func TestEvolveSchema(t *testing.T) {
	// The tierer may commit the new schema on its own or with the first
	// rows that have the new columns; both must work.
	for _, sameTx := range []bool{false, true} {
		t.Run(fmt.Sprintf("append in the same transaction=%v", sameTx), func(t *testing.T) {
			testEvolveSchema(t, sameTx)
		})
	}
}

func testEvolveSchema(t *testing.T, sameTx bool) {
	ctx := context.Background()
	cat, err := catalog.Open(ctx, filepath.Join(t.TempDir(), "catalog.db"), catalog.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cat.Close() })
	v0 := execDDL(t, cat, "CREATE TABLE t (id BIGINT NOT NULL, v VARCHAR)")
	tbl := createLakeTable(t, newLake(t), "t", v0)
	r := rand.New(rand.NewPCG(7, 8))
	old := randomRecord(t, v0.ArrowSchema(), 0, 50, r)
	defer old.Release()
	tbl = appendLake(t, tbl, old)

	tx := tbl.NewTransaction()
	if added, err := evolveSchema(tx, tbl.Schema(), v0); added || err != nil {
		t.Fatalf("evolve to the same definition: added=%v, %v", added, err)
	}
	execDDL(t, cat, "ALTER TABLE t ADD COLUMN n SMALLINT")
	v2 := execDDL(t, cat, "ALTER TABLE t ADD COLUMN tags MAP(VARCHAR, TINYINT[])")
	added, err := evolveSchema(tx, tbl.Schema(), v2)
	if !added || err != nil {
		t.Fatalf("evolveSchema: added=%v, %v", added, err)
	}
	newer := randomRecord(t, v2.ArrowSchema(), 50, 50, r)
	defer newer.Release()
	if sameTx {
		appendTx(t, tx, newer)
	}
	if tbl, err = tx.Commit(ctx); err != nil {
		t.Fatalf("commit: %v", err)
	}
	// The lake schema is the one a table created at v2 would have, ids too.
	if want, _ := icebergSchema(v2); !tbl.Schema().Equals(want) {
		t.Errorf("evolved schema\n%s\nwant\n%s", tbl.Schema(), want)
	}
	if added, err := evolveSchema(tbl.NewTransaction(), tbl.Schema(), v2); added || err != nil {
		t.Errorf("evolve again: added=%v, %v", added, err)
	}
	if !sameTx {
		tbl = appendLake(t, tbl, newer)
	}

	// Old rows read back with nulls in the new columns.
	oldCols := append(slices.Clone(old.Columns()),
		array.MakeArrayOfNull(memory.DefaultAllocator, v2.ArrowSchema().Field(2).Type, int(old.NumRows())),
		array.MakeArrayOfNull(memory.DefaultAllocator, v2.ArrowSchema().Field(3).Type, int(old.NumRows())))
	oldV2 := array.NewRecordBatch(v2.ArrowSchema(), oldCols, old.NumRows())
	defer oldV2.Release()
	oldCols[2].Release()
	oldCols[3].Release()

	mem := checkedMem(t)
	got := readLake(ctx, t, tbl, v2.ArrowSchema(), mem)
	defer releaseRows(got)
	if len(got) != 2 {
		t.Errorf("read %d files, want the old one and the new one", len(got))
	}
	checkRows(t, got, []arrow.RecordBatch{oldV2, newer}, v2.ArrowSchema())
}

func TestEvolveSchemaMatchesNamesIgnoringCase(t *testing.T) {
	def := resolveTable(t, "CREATE TABLE t (id BIGINT NOT NULL, v VARCHAR)")
	sch := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "ID", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "V", Type: iceberg.PrimitiveTypes.String})
	// No column is missing, so the transaction is not touched.
	if added, err := evolveSchema(nil, sch, def); added || err != nil {
		t.Errorf("evolveSchema: added=%v, %v", added, err)
	}
	noID := iceberg.NewSchema(0, iceberg.NestedField{ID: 2, Name: "v", Type: iceberg.PrimitiveTypes.String})
	if _, err := evolveSchema(nil, noID, def); err == nil || !strings.Contains(err.Error(), `NOT NULL column "id" is missing`) {
		t.Errorf("missing NOT NULL column: %v", err)
	}
}

func TestConformLakeRecord(t *testing.T) {
	mem := checkedMem(t)
	target := arrow.NewSchema([]arrow.Field{
		{Name: "a", Type: arrow.PrimitiveTypes.Int8},
		{Name: "tags", Type: arrow.ListOfField(arrow.Field{Name: "element", Type: arrow.PrimitiveTypes.Int16, Nullable: true}), Nullable: true},
		{Name: "m", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int16), Nullable: true},
		{Name: "st", Type: arrow.StructOf(arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Int8, Nullable: true},
			arrow.Field{Name: "gone", Type: arrow.BinaryTypes.String, Nullable: true}), Nullable: true},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
		{Name: "added", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
		{Name: "names", Type: arrow.ListOfField(arrow.Field{Name: "element", Type: arrow.BinaryTypes.String, Nullable: true}), Nullable: true},
	}, nil)
	id := func(n string) arrow.Metadata { return arrow.NewMetadata([]string{"PARQUET:field_id"}, []string{n}) }
	// The same data, as a reader with other conventions could produce it:
	// int32 for the small ints, other nested names, field ids, "+00:00".
	lake := arrow.NewSchema([]arrow.Field{
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "+00:00"}, Nullable: true},
		{Name: "A", Type: arrow.PrimitiveTypes.Int32, Metadata: id("1")},
		{Name: "tags", Type: arrow.ListOfField(arrow.Field{Name: "item", Type: arrow.PrimitiveTypes.Int32, Nullable: true, Metadata: id("7")}), Nullable: true},
		{Name: "m", Type: arrow.MapOfFields(arrow.Field{Name: "k", Type: arrow.BinaryTypes.String, Metadata: id("8")},
			arrow.Field{Name: "v", Type: arrow.PrimitiveTypes.Int32, Nullable: true}), Nullable: true},
		{Name: "St", Type: arrow.StructOf(arrow.Field{Name: "X", Type: arrow.PrimitiveTypes.Int32, Nullable: true}), Nullable: true},
		// Equal to the target for arrow.TypeEqual, which ignores the name.
		{Name: "names", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
	}, nil)
	rows := `[
		{"ts": 1, "A": -128, "tags": [1, null, -32768], "m": [{"key": "a", "value": 7}], "St": {"X": 5}, "names": ["x"]},
		{"ts": null, "A": 127, "tags": null, "m": null, "St": null, "names": null},
		{"ts": 3, "A": 0, "tags": [], "m": [{"key": "b", "value": null}, {"key": "c", "value": 32767}], "St": {"X": null}, "names": [null, "y"]}
	]`
	in := recordFromJSON(t, mem, lake, rows)
	defer in.Release()
	// Also a slice, so that offsets into the buffers are honoured.
	for _, rec := range []arrow.RecordBatch{in, in.NewSlice(1, 3)} {
		got, err := conformLakeRecord(rec, target, mem)
		if err != nil {
			t.Fatal(err)
		}
		wantRows := `[
			{"ts": 1, "a": -128, "tags": [1, null, -32768], "m": [{"key": "a", "value": 7}], "st": {"x": 5, "gone": null}, "added": null, "names": ["x"]},
			{"ts": null, "a": 127, "tags": null, "m": null, "st": null, "added": null, "names": null},
			{"ts": 3, "a": 0, "tags": [], "m": [{"key": "b", "value": null}, {"key": "c", "value": 32767}], "st": {"x": null, "gone": null}, "added": null, "names": [null, "y"]}
		]`
		want := recordFromJSON(t, mem, target, wantRows)
		if rec != in {
			sliced := want.NewSlice(1, 3)
			want.Release()
			want = sliced
			rec.Release()
		}
		if got.Schema() != target || !array.RecordEqual(got, want) {
			t.Errorf("conformLakeRecord =\n%v\nwant\n%v", got, want)
		}
		checkExactTypes(t, got, target)
		got.Release()
		want.Release()
	}
}

func TestConformLakeRecordErrors(t *testing.T) {
	mem := checkedMem(t)
	lake := arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int32, Nullable: true}}, nil)
	in := recordFromJSON(t, mem, lake, `[{"a": 1}, {"a": 300}, {"a": null}]`)
	defer in.Release()
	for _, tt := range []struct {
		field arrow.Field
		want  string
	}{
		{arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int8, Nullable: true}, `column "a": cast int32 to int8`},
		{arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int32}, `column "a": NOT NULL column has 1 nulls`},
		{arrow.Field{Name: "b", Type: arrow.PrimitiveTypes.Int32}, `column "b": NOT NULL column is missing`},
		{arrow.Field{Name: "a", Type: arrow.StructOf(arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Int32}), Nullable: true},
			`column "a": cannot read int32 as struct`},
	} {
		got, err := conformLakeRecord(in, arrow.NewSchema([]arrow.Field{tt.field}, nil), mem)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("conform to %s: %v, want %q", tt.field, err, tt.want)
		}
		if got != nil {
			got.Release()
		}
	}
}

// --- helpers ---

func resolveTable(t *testing.T, ddl string) *catalog.Table {
	t.Helper()
	stmt, err := catalog.Parse(ddl)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	def, err := stmt.(*catalog.CreateTable).Resolve(catalog.Config{})
	if err != nil {
		t.Fatalf("Resolve: %v", err)
	}
	return def
}

func execDDL(t *testing.T, cat *catalog.Catalog, ddl string) *catalog.Table {
	t.Helper()
	stmt, err := catalog.Parse(ddl)
	if err != nil {
		t.Fatalf("Parse(%q): %v", ddl, err)
	}
	res, err := cat.Exec(context.Background(), stmt)
	if err != nil {
		t.Fatalf("Exec(%q): %v", ddl, err)
	}
	return res.Table
}

// newLake returns an iceberg-go SQL catalog on SQLite with namespace "lake",
// its warehouse in a temporary directory.
func newLake(t *testing.T) *sqlcat.Catalog {
	t.Helper()
	dir := t.TempDir()
	db, err := sql.Open("sqlite", filepath.Join(dir, "iceberg.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	cat, err := sqlcat.NewCatalog("lakestream", db, sqlcat.SQLite, iceberg.Properties{"warehouse": "file://" + dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cat.Close() })
	if err := cat.CreateNamespace(context.Background(), table.Identifier{"lake"}, nil); err != nil {
		t.Fatal(err)
	}
	return cat
}

func createLakeTable(t *testing.T, cat *sqlcat.Catalog, name string, def *catalog.Table) *table.Table {
	t.Helper()
	sch, err := icebergSchema(def)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := partitionSpec(def, sch)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := cat.CreateTable(context.Background(), table.Identifier{"lake", name}, sch, icecat.WithPartitionSpec(&spec))
	if err != nil {
		t.Fatalf("CreateTable: %v", err)
	}
	return tbl
}

// appendLake appends recs in one transaction and returns the committed
// table.
func appendLake(t *testing.T, tbl *table.Table, recs ...arrow.RecordBatch) *table.Table {
	t.Helper()
	tx := tbl.NewTransaction()
	appendTx(t, tx, recs...)
	out, err := tx.Commit(context.Background())
	if err != nil {
		t.Fatalf("Commit: %v", err)
	}
	return out
}

// lakeRows are the conformed rows of one data file.
type lakeRows struct {
	partition map[int]any
	read      *arrow.Schema // as iceberg-go read them
	rec       arrow.RecordBatch
}

func appendTx(t *testing.T, tx *table.Transaction, recs ...arrow.RecordBatch) {
	t.Helper()
	rdr, err := array.NewRecordReader(recs[0].Schema(), recs)
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Release()
	if err := tx.Append(context.Background(), rdr, nil); err != nil {
		t.Fatalf("Append: %v", err)
	}
}

func releaseRows(rows []lakeRows) {
	for _, r := range rows {
		r.rec.Release()
	}
}

// readLake reads every data file of tbl as one task and conforms its
// records to target, one batch per file.
func readLake(ctx context.Context, t *testing.T, tbl *table.Table, target *arrow.Schema, mem memory.Allocator) []lakeRows {
	t.Helper()
	scan := tbl.Scan()
	defer func() { _ = scan.Close() }()
	tasks, err := scan.PlanFiles(ctx)
	if err != nil {
		t.Fatalf("PlanFiles: %v", err)
	}
	var out []lakeRows
	for _, task := range tasks {
		schema, recs, err := scan.ReadTasks(ctx, []table.FileScanTask{task})
		if err != nil {
			t.Fatalf("ReadTasks: %v", err)
		}
		var parts []arrow.RecordBatch
		for rec, err := range recs {
			if err != nil {
				t.Fatalf("read %s: %v", task.File.FilePath(), err)
			}
			conformed, err := conformLakeRecord(rec, target, mem)
			rec.Release()
			if err != nil {
				t.Fatalf("conformLakeRecord: %v", err)
			}
			parts = append(parts, conformed)
		}
		out = append(out, lakeRows{partition: task.File.Partition(), read: schema, rec: concat(t, target, parts, mem)})
	}
	return out
}

// concat returns recs as one batch, releasing them.
func concat(t *testing.T, schema *arrow.Schema, recs []arrow.RecordBatch, mem memory.Allocator) arrow.RecordBatch {
	t.Helper()
	if len(recs) == 1 {
		return recs[0]
	}
	cols := make([]arrow.Array, schema.NumFields())
	var rows int64
	for _, r := range recs {
		rows += r.NumRows()
	}
	for i := range cols {
		parts := make([]arrow.Array, len(recs))
		for j, r := range recs {
			parts[j] = r.Column(i)
		}
		var err error
		if cols[i], err = array.Concatenate(parts, mem); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range recs {
		r.Release()
	}
	out := array.NewRecordBatch(schema, cols, rows)
	for _, c := range cols {
		c.Release()
	}
	return out
}

// checkRows checks that got holds exactly the rows of want, in any order,
// matched by their "id" column (the first row of want is id 0, and so on),
// and that every column has exactly the target's type.
func checkRows(t *testing.T, got []lakeRows, want []arrow.RecordBatch, target *arrow.Schema) {
	t.Helper()
	type row struct {
		rec arrow.RecordBatch
		i   int
	}
	var byID []row
	for _, w := range want {
		for i := range int(w.NumRows()) {
			byID = append(byID, row{w, i})
		}
	}
	seen := make([]bool, len(byID))
	errs := 0
	for _, g := range got {
		if g.rec.Schema() != target {
			t.Fatalf("record schema %s, want the target", g.rec.Schema())
		}
		checkExactTypes(t, g.rec, target)
		ids := g.rec.Column(target.FieldIndices("id")[0]).(*array.Int64)
		for i := range ids.Len() {
			id := ids.Value(i)
			if id < 0 || int(id) >= len(byID) || seen[id] {
				t.Fatalf("unexpected or repeated id %d", id)
			}
			seen[id] = true
			w := byID[id]
			for c := range target.NumFields() {
				if !array.SliceEqual(w.rec.Column(c), int64(w.i), int64(w.i+1), g.rec.Column(c), int64(i), int64(i+1)) && errs < 10 {
					errs++
					t.Errorf("id %d column %s = %s, want %s", id, target.Field(c).Name,
						g.rec.Column(c).ValueStr(i), w.rec.Column(c).ValueStr(w.i))
				}
			}
		}
	}
	if n := len(slices.DeleteFunc(seen, func(b bool) bool { return b })); n > 0 {
		t.Errorf("%d of %d rows were not read back", n, len(byID))
	}
}

// checkExactTypes checks each column's type against the target's, nested
// field names, nullability and metadata included, which arrow.TypeEqual
// does not all compare.
func checkExactTypes(t *testing.T, rec arrow.RecordBatch, target *arrow.Schema) {
	t.Helper()
	for i, f := range target.Fields() {
		if got := rec.Column(i).DataType(); !exactType(got, f.Type) {
			t.Errorf("column %s has type %s, want exactly %s", f.Name, got, f.Type)
		}
	}
}

func exactType(a, b arrow.DataType) bool {
	if !arrow.TypeEqual(a, b, arrow.CheckMetadata()) {
		return false
	}
	na, ok := a.(arrow.NestedType)
	if !ok {
		return true
	}
	fa, fb := na.Fields(), b.(arrow.NestedType).Fields()
	if len(fa) != len(fb) {
		return false
	}
	for i := range fa {
		if fa[i].Name != fb[i].Name || fa[i].Nullable != fb[i].Nullable ||
			!fa[i].Metadata.Equal(fb[i].Metadata) || !exactType(fa[i].Type, fb[i].Type) {
			return false
		}
	}
	return true
}

func checkedMem(t *testing.T) *memory.CheckedAllocator {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	return mem
}

func recordFromJSON(t *testing.T, mem memory.Allocator, schema *arrow.Schema, rows string) arrow.RecordBatch {
	t.Helper()
	rec, _, err := array.RecordFromJSON(mem, schema, strings.NewReader(rows))
	if err != nil {
		t.Fatalf("RecordFromJSON: %v", err)
	}
	return rec
}

// randomRecord returns rows random rows of schema, column 0 (BIGINT NOT
// NULL) numbering them from firstID, about one value in six null where the
// field is nullable.
func randomRecord(t *testing.T, schema *arrow.Schema, firstID, rows int, r *rand.Rand) arrow.RecordBatch {
	t.Helper()
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for i := range rows {
		b.Field(0).(*array.Int64Builder).Append(int64(firstID + i))
	}
	for c := 1; c < schema.NumFields(); c++ {
		for range rows {
			appendRandom(t, b.Field(c), r, schema.Field(c).Nullable)
		}
	}
	return b.NewRecordBatch()
}

var day0 = time.Date(2024, 2, 28, 0, 0, 0, 0, time.UTC).UnixMicro()

func appendRandom(t *testing.T, b array.Builder, r *rand.Rand, nullable bool) {
	if nullable && r.IntN(6) == 0 {
		b.AppendNull()
		return
	}
	switch b := b.(type) {
	case *array.BooleanBuilder:
		b.Append(r.IntN(2) == 0)
	case *array.Int8Builder:
		b.Append(int8(r.Uint32()))
	case *array.Int16Builder:
		b.Append(int16(r.Uint32()))
	case *array.Int32Builder:
		b.Append(int32(r.Uint32()) >> r.IntN(32))
	case *array.Int64Builder:
		b.Append(int64(r.Uint64()) >> r.IntN(64))
	case *array.Float32Builder:
		b.Append(float32(r.NormFloat64() * 1e3))
	case *array.Float64Builder:
		b.Append(r.NormFloat64() * 1e9)
	case *array.Decimal128Builder:
		b.Append(randomDecimal(r, int(b.Type().(*arrow.Decimal128Type).Precision)))
	case *array.StringBuilder:
		b.Append(strings.Repeat(string(rune('a'+r.IntN(26))), r.IntN(6)) + "é")
	case *array.BinaryBuilder:
		b.Append(bytes.Repeat([]byte{byte(r.Uint32())}, r.IntN(9)))
	case *array.Date32Builder:
		b.Append(arrow.Date32(r.Int32N(40000) - 10000))
	case *array.Time64Builder:
		b.Append(arrow.Time64(r.Int64N(86400e6)))
	case *array.TimestampBuilder:
		// Three days, so that day(ts) makes a few partitions, not hundreds.
		b.Append(arrow.Timestamp(day0 + r.Int64N(3*86400e6)))
	default:
		appendNested(t, b, r)
	}
}

func appendNested(t *testing.T, b array.Builder, r *rand.Rand) {
	switch b := b.(type) {
	case *array.MapBuilder:
		b.Append(true)
		for k := range r.IntN(4) {
			b.KeyBuilder().(*array.StringBuilder).Append(fmt.Sprintf("k%d", k))
			appendRandom(t, b.ItemBuilder(), r, true)
		}
	case *array.ListBuilder:
		b.Append(true)
		for range r.IntN(4) {
			appendRandom(t, b.ValueBuilder(), r, true)
		}
	case *array.StructBuilder:
		b.Append(true)
		for i := range b.NumField() {
			appendRandom(t, b.FieldBuilder(i), r, true)
		}
	default:
		t.Fatalf("no random values for %T", b)
	}
}

// randomDecimal returns a decimal of up to precision digits, either sign.
func randomDecimal(r *rand.Rand, precision int) decimal128.Num {
	v := new(big.Int)
	for range r.IntN(precision) + 1 {
		v.Mul(v, big.NewInt(10))
		v.Add(v, big.NewInt(r.Int64N(10)))
	}
	if r.IntN(2) == 0 {
		v.Neg(v)
	}
	return decimal128.FromBigInt(v)
}
