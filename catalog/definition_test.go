package catalog

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func resolve(t *testing.T, sql string, cfg Config) (*Table, error) {
	t.Helper()
	stmt, err := Parse(sql)
	if err != nil {
		t.Fatalf("Parse(%q): %v", sql, err)
	}
	return stmt.(*CreateTable).Resolve(cfg)
}

func TestResolveDefaults(t *testing.T) {
	tbl, err := resolve(t, `CREATE TABLE orders (id BIGINT PRIMARY KEY, day DATE, v VARCHAR)`, Config{DefaultBucketNum: 8})
	if err != nil {
		t.Fatal(err)
	}
	if tbl.DB != DefaultDatabase || tbl.Name != "orders" {
		t.Errorf("name = %s", tbl.FullName())
	}
	if !tbl.Columns[0].NotNull || tbl.Columns[1].NotNull {
		t.Errorf("primary key column must become NOT NULL, others not: %+v", tbl.Columns)
	}
	o := tbl.Options
	if o.BucketNum != 8 || !reflect.DeepEqual(o.BucketKey, []string{"id"}) || o.MergeEngine != MergeEngineLastRow {
		t.Errorf("options = %+v, want 8 buckets on id, last_row", o)
	}
	if got := tbl.BucketKeyIndexes(); !reflect.DeepEqual(got, []int{0}) {
		t.Errorf("BucketKeyIndexes = %v", got)
	}
	if f := tbl.ArrowSchema().Field(0); f.Nullable {
		t.Errorf("arrow field id is nullable")
	}

	logTbl, err := resolve(t, `CREATE TABLE logs (msg VARCHAR) WITH ('bucket.key' = 'MSG')`, Config{})
	if err != nil {
		t.Fatal(err)
	}
	if o := logTbl.Options; o.BucketNum != 1 || o.MergeEngine != MergeEngineNone || !reflect.DeepEqual(o.BucketKey, []string{"msg"}) {
		t.Errorf("log table options = %+v, want 1 bucket, no merge engine, bucket key msg (case-folded)", o)
	}
	noKey, _ := resolve(t, `CREATE TABLE logs (msg VARCHAR)`, Config{})
	if len(noKey.Options.BucketKey) != 0 || len(noKey.BucketKeyIndexes()) != 0 {
		t.Errorf("log table without bucket.key must have none, got %v", noKey.Options.BucketKey)
	}
}

func TestResolveReportsEveryProblem(t *testing.T) {
	sql := `CREATE TABLE "a$b" (
		id BIGINT, id INT, f DOUBLE, tags VARCHAR[], ts TIMESTAMP, d DATE, _offset BIGINT, ver VARCHAR,
		PRIMARY KEY (id, nope, tags, id)
	) PARTITIONED BY (missing, hour(d), day(f), ts, ts)
	WITH ('bucket.key' = 'f, ghost, ts', 'merge-engine' = 'versioned', 'bucket.nmu' = '2',
	      'merge-engine.versioned.ver-column' = 'ver', 'log.compression' = 'brotli')`
	_, err := resolve(t, sql, Config{})
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("err = %v, want ErrInvalid", err)
	}
	for _, want := range []string{
		`table name "a$b" must not contain "$"`,
		`column "id" is defined more than once`,
		`column name "_offset" is reserved for changelog metadata`,
		`primary key column "nope" does not exist`,
		`primary key column "tags" has type VARCHAR[]: LIST, STRUCT and MAP cannot be keys`,
		`primary key column "id" is listed more than once`,
		`partition column "missing" does not exist`,
		`partition field hour(d): hour() needs a TIMESTAMP or TIMESTAMPTZ column, not DATE`,
		`partition field day(f): day() needs a DATE, TIMESTAMP or TIMESTAMPTZ column, not DOUBLE`,
		`partition field ts is listed more than once`,
		`partition column "f" must be part of the primary key`,
		`unknown option "bucket.nmu" (did you mean "bucket.num"?)`,
		`option "log.compression": invalid value "brotli"`,
		`option "bucket.key": column "ghost" does not exist`,
		`option "bucket.key": column "f" has type DOUBLE, which cannot be hashed into buckets`,
		`option "bucket.key": column "ts" is not in the primary key`,
		`option "merge-engine.versioned.ver-column": column "ver" has type VARCHAR; a version column must be INTEGER, BIGINT, TIMESTAMP or TIMESTAMPTZ`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not contain %q", want)
		}
	}
	if t.Failed() {
		t.Logf("error:\n%v", err)
	}
}

func TestResolveMergeEngineRules(t *testing.T) {
	tests := []struct{ sql, want string }{
		{`CREATE TABLE t (a INT) WITH ('merge-engine' = 'first_row')`, `option "merge-engine" applies only to primary-key tables`},
		{`CREATE TABLE t (a INT PRIMARY KEY) WITH ('merge-engine' = 'versioned')`,
			`merge-engine "versioned" requires option "merge-engine.versioned.ver-column"`},
		{`CREATE TABLE t (a INT PRIMARY KEY, v INT) WITH ('merge-engine.versioned.ver-column' = 'v')`,
			`option "merge-engine.versioned.ver-column" needs "merge-engine" = "versioned"`},
		{`CREATE TABLE t (a INT PRIMARY KEY) WITH ('merge-engine' = 'versioned', 'merge-engine.versioned.ver-column' = 'x')`,
			`option "merge-engine.versioned.ver-column": column "x" does not exist`},
	}
	for _, tt := range tests {
		_, err := resolve(t, tt.sql, Config{})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s:\n got %v\nwant %q", tt.sql, err, tt.want)
		}
	}
	tbl, err := resolve(t, `CREATE TABLE t (a INT PRIMARY KEY, "V" BIGINT) WITH ('merge-engine' = 'versioned', 'merge-engine.versioned.ver-column' = 'v')`, Config{})
	if err != nil {
		t.Fatal(err)
	}
	if tbl.Options.MergeEngine != MergeEngineVersioned || tbl.Options.VersionColumn != "V" {
		t.Errorf("options = %+v", tbl.Options)
	}
}

func TestResolveChecksCodeBuiltColumns(t *testing.T) {
	s := &CreateTable{Table: TableName{Name: "t"}, Columns: []Column{
		{Name: "", Type: Prim(KindInteger)},
		{Name: "z", Type: Type{}},
		{Name: "d", Type: Decimal(50, 2)},
		{Name: "s", Type: StructOf()},
		{Name: "m", Type: MapOf(ListOf(Prim(KindInteger)), Prim(KindInteger))},
	}}
	_, err := s.Resolve(Config{})
	for _, want := range []string{
		`a column name is empty`, `column "z": invalid type kind 0`,
		`column "d": DECIMAL(50,2) needs a precision of 1..38`, `column "s": STRUCT without fields`,
		`column "m": MAP key must be a primitive type, not INTEGER[]`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not contain %q", err, want)
		}
	}
	if _, err := (&CreateTable{Table: TableName{Name: "t"}}).Resolve(Config{}); err == nil || !strings.Contains(err.Error(), `table "t" has no columns`) {
		t.Errorf("empty table: %v", err)
	}
}

func TestResolvePartitionedPrimaryKeyTable(t *testing.T) {
	tbl, err := resolve(t, `CREATE TABLE t (id BIGINT, ts TIMESTAMPTZ, PRIMARY KEY (id, ts)) PARTITIONED BY (day(ts)) WITH ('bucket.key' = 'id')`, Config{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(tbl.Partition, []PartitionField{{Column: "ts", Transform: TransformDay}}) {
		t.Errorf("partition = %v", tbl.Partition)
	}
	if !reflect.DeepEqual(tbl.PrimaryKeyIndexes(), []int{0, 1}) {
		t.Errorf("PrimaryKeyIndexes = %v", tbl.PrimaryKeyIndexes())
	}
}

func TestColumnNamesDifferingOnlyInCase(t *testing.T) {
	stmt, err := Parse(`CREATE TABLE dup ("a" INTEGER, "A" INTEGER)`)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stmt.(*CreateTable).Resolve(Config{}); err == nil || !strings.Contains(err.Error(), "more than once") {
		t.Fatalf("columns a and A accepted: %v", err)
	}
}

func TestResolveRefusesTwoTimeTransformsOfOneColumn(t *testing.T) {
	st, err := Parse("CREATE TABLE t (ts TIMESTAMP, k INTEGER) PARTITIONED BY (day(ts), hour(ts), k)")
	if err != nil {
		t.Fatal(err)
	}
	_, err = st.(*CreateTable).Resolve(Config{DefaultBucketNum: 1})
	if err == nil || !strings.Contains(err.Error(), "one time transform") {
		t.Fatalf("resolve: %v, want the one-time-transform error", err)
	}
}

func TestResolvePrimaryKeyTableRules(t *testing.T) {
	tests := []struct{ sql, want string }{
		{`CREATE TABLE t (a DOUBLE PRIMARY KEY)`, `primary key column "a" has type DOUBLE: FLOAT and DOUBLE cannot be keys`},
		{`CREATE TABLE t (a FLOAT, b INT, PRIMARY KEY (b, a))`, `primary key column "a" has type FLOAT`},
		{`CREATE TABLE t (a INT PRIMARY KEY, v INT) WITH ('fields.v.agg' = 'sum')`,
			`options fields.<column>.agg and fields.<column>.listagg-delimiter need "merge-engine" = "aggregation"`},
		{`CREATE TABLE t (a INT PRIMARY KEY, v INT) WITH ('merge-engine' = 'aggregation', 'fields.v.agg' = 'median')`,
			`option "fields.v.agg": invalid value "median": expected one of sum, min, max`},
		{`CREATE TABLE t (a INT PRIMARY KEY, v VARCHAR) WITH ('merge-engine' = 'aggregation', 'fields.v.agg' = 'sum')`,
			`option "fields.v.agg": sum cannot aggregate column "v" of type VARCHAR: it needs a number`},
		{`CREATE TABLE t (a INT PRIMARY KEY, v INT) WITH ('merge-engine' = 'aggregation', 'fields.a.agg' = 'max')`,
			`option "fields.a.agg": column "a" is part of the primary key, which is not aggregated`},
		{`CREATE TABLE t (a INT PRIMARY KEY, v INT) WITH ('merge-engine' = 'aggregation', 'fields.w.agg' = 'max')`,
			`option "fields.w.agg": column "w" does not exist`},
		{`CREATE TABLE t (a INT PRIMARY KEY, v INT) WITH ('merge-engine' = 'aggregation', 'fields.v.listagg-delimiter' = ';')`,
			`option "fields.v.listagg-delimiter" applies only to a column whose function is listagg`},
		{`CREATE TABLE t (a INT PRIMARY KEY, v BIGINT) WITH ('merge-engine' = 'aggregation', 'fields.v.agg' = 'bool_or')`,
			`bool_or cannot aggregate column "v" of type BIGINT: it needs BOOLEAN`},
		{`CREATE TABLE t (a INT PRIMARY KEY, v VARCHAR) WITH ('merge-engine' = 'aggregation', 'fields.v.agg' = 'count')`,
			`count cannot aggregate column "v" of type VARCHAR: it needs INTEGER or BIGINT`},
	}
	for _, tt := range tests {
		_, err := resolve(t, tt.sql, Config{})
		if err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, ErrInvalid) {
			t.Errorf("%s:\n got %v\nwant %q", tt.sql, err, tt.want)
		}
	}
	tbl, err := resolve(t, `CREATE TABLE t (a INT PRIMARY KEY, "Tags" VARCHAR, n BIGINT, s VARCHAR)
		WITH ('merge-engine' = 'aggregation', 'fields.tags.agg' = 'LISTAGG', 'fields.tags.listagg-delimiter' = ' | ',
		      'fields.n.agg' = 'sum', 'fields.s.listagg-delimiter' = '-', 'fields.s.agg' = 'listagg')`, Config{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]FieldAgg{"Tags": {Func: "listagg", Delimiter: " | "}, "n": {Func: "sum"}, "s": {Func: "listagg", Delimiter: "-"}}
	if o := tbl.Options; o.MergeEngine != MergeEngineAggregation || !reflect.DeepEqual(o.FieldAgg, want) {
		t.Errorf("options = %+v, want aggregation with %v", o, want)
	}
}
