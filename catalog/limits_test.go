package catalog

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

// nestedSQL returns a column type nested depth levels deep in one of the
// spellings of nested types, around BIGINT.
func nestedSQL(kind string, depth int) string {
	var b strings.Builder
	switch kind {
	case "struct":
		b.WriteString(strings.Repeat("STRUCT(a ", depth) + "BIGINT" + strings.Repeat(")", depth))
	case "list":
		b.WriteString(strings.Repeat("LIST(", depth) + "BIGINT" + strings.Repeat(")", depth))
	case "suffix":
		b.WriteString("BIGINT" + strings.Repeat("[]", depth))
	case "map":
		b.WriteString(strings.Repeat("MAP(INT, ", depth) + "BIGINT" + strings.Repeat(")", depth))
	case "mixed":
		b.WriteString(strings.Repeat("STRUCT(a ", depth/2) + "BIGINT" + strings.Repeat("[]", depth-depth/2) + strings.Repeat(")", depth/2))
	}
	return b.String()
}

// A type nested beyond MaxTypeDepth is refused by the parser with an error
// naming the limit, whatever the spelling; one at the limit is accepted.
func TestParseRefusesTypesNestedTooDeep(t *testing.T) {
	for _, kind := range []string{"struct", "list", "suffix", "map", "mixed"} {
		t.Run(kind, func(t *testing.T) {
			at := fmt.Sprintf("CREATE TABLE ns (c %s)", nestedSQL(kind, MaxTypeDepth))
			stmt, err := Parse(at)
			if err != nil {
				t.Fatalf("%d levels: %v", MaxTypeDepth, err)
			}
			if got := typeDepth(stmt.(*CreateTable).Columns[0].Type); got != MaxTypeDepth {
				t.Fatalf("typeDepth = %d, want %d", got, MaxTypeDepth)
			}
			if _, err := stmt.(*CreateTable).Resolve(Config{}); err != nil {
				t.Errorf("resolve %d levels: %v", MaxTypeDepth, err)
			}
			for _, depth := range []int{MaxTypeDepth + 1, 10000} {
				_, err := Parse(fmt.Sprintf("CREATE TABLE ns (c %s)", nestedSQL(kind, depth)))
				var se *SyntaxError
				if !errors.As(err, &se) || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "deeper than the limit of 32 levels") {
					t.Errorf("%d levels: %v, want a syntax error naming the limit", depth, err)
				}
			}
			if _, err := ParseType(nestedSQL(kind, 10000)); !errors.Is(err, ErrInvalid) {
				t.Errorf("ParseType of 10000 levels: %v, want ErrInvalid", err)
			}
		})
	}
}

// The parser stops at the limit: parsing 100,000 levels costs what parsing
// 33 does, not 100,000 levels of recursion, tokens and types.
func TestParseStopsAtTheDepthLimit(t *testing.T) {
	for _, kind := range []string{"struct", "suffix"} {
		sql := fmt.Sprintf("CREATE TABLE ns (c %s)", nestedSQL(kind, 100000))
		allocs := testing.AllocsPerRun(1, func() {
			if _, err := Parse(sql); err == nil {
				t.Fatal("no error")
			}
		})
		if allocs > 1000 {
			t.Errorf("%s: parsing 100,000 levels took %.0f allocations; the parser must stop at the limit", kind, allocs)
		}
	}
}

func TestParseRefusesTooManyColumnsAndFields(t *testing.T) {
	cols := func(n int) string {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = fmt.Sprintf("c%d INT", i)
		}
		return "CREATE TABLE wide (" + strings.Join(parts, ", ") + ")"
	}
	stmt, err := Parse(cols(MaxColumns))
	if err != nil {
		t.Fatalf("%d columns: %v", MaxColumns, err)
	}
	if _, err := stmt.(*CreateTable).Resolve(Config{}); err != nil {
		t.Fatalf("resolve %d columns: %v", MaxColumns, err)
	}
	if _, err := Parse(cols(MaxColumns + 1)); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "more than 1000 columns") {
		t.Errorf("%d columns: %v", MaxColumns+1, err)
	}
	fields := func(n int) string {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = fmt.Sprintf("f%d INT", i)
		}
		return "CREATE TABLE wide (s STRUCT(" + strings.Join(parts, ", ") + "))"
	}
	if _, err := Parse(fields(MaxFields - 1)); err != nil {
		t.Errorf("%d fields: %v", MaxFields, err)
	}
	if _, err := Parse(fields(MaxFields)); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "more than 10000 fields") {
		t.Errorf("%d fields: %v", MaxFields+1, err)
	}
	opts := make([]string, maxOptions+1)
	for i := range opts {
		opts[i] = fmt.Sprintf("'o%d'='1'", i)
	}
	if _, err := Parse("CREATE TABLE t (a INT) WITH (" + strings.Join(opts, ", ") + ")"); err == nil || !strings.Contains(err.Error(), "more than 64 options") {
		t.Errorf("%d options: %v", maxOptions+1, err)
	}
}

// Names: what each kind of name takes (limits.go), with errors that say why.
func TestNameRules(t *testing.T) {
	long := strings.Repeat("n", MaxNameBytes)
	tests := []struct {
		sql  string
		want string // "" : accepted
	}{
		{`CREATE TABLE "café_2024-q1" (a INT)`, ""},
		{`CREATE TABLE ` + long + ` (a INT)`, ""},
		{`CREATE TABLE ` + long + `x (a INT)`, "longer than the limit of 128 bytes"},
		{`CREATE TABLE "x.t" (a INT)`, `table name "x.t" must not contain "."`},
		{`CREATE TABLE "t$lake" (a INT)`, `table name "t$lake" must not contain "$"`},
		{`CREATE TABLE "t$changelog" (a INT)`, `must not contain "$"`},
		{`CREATE TABLE "Region Targets" (a INT)`, ""},
		{`CREATE TABLE "a/b" (a INT)`, `must not contain '/'`},
		{`CREATE TABLE "a\b" (a INT)`, `must not contain '\\'`},
		{`CREATE TABLE "%%%" (a INT)`, `must not contain '%'`},
		{"CREATE TABLE \"a\tb\" (a INT)", `contains the non-printing character U+0009`},
		{"CREATE TABLE \"a\u200bb\" (a INT)", `contains the non-printing character U+200B`},
		{"CREATE TABLE \"a\xffb\" (a INT)", `not valid UTF-8`},
		{`CREATE TABLE t ("unit price" INT, "Größe" INT, "a$b" INT)`, ""},
		{`CREATE TABLE t ("a.b" INT)`, `column name "a.b" must not contain "."`},
		{"CREATE TABLE t (\"a\nb\" INT)", `column name "a\nb" contains the non-printing character U+000A`},
		{`CREATE TABLE t (` + long + `x INT)`, `column name "nnnn`},
		{`CREATE TABLE t (s STRUCT("x.y" INT))`, `STRUCT field name "x.y" must not contain "."`},
		{`CREATE TABLE t (s STRUCT(a INT, "A" INT))`, `STRUCT field name "A" is repeated`},
		{`CREATE TABLE t (s STRUCT(a MAP(INT, STRUCT("" INT))))`, `empty quoted identifier`},
		// A partition or bucket column's name becomes a directory name in
		// the lake, URL-escaped.
		{`CREATE TABLE t ("` + strings.Repeat("é", 40) + `" DATE) PARTITIONED BY (day("` + strings.Repeat("é", 40) + `"))`, "once URL-escaped"},
		{`CREATE TABLE t ("` + strings.Repeat("é", 40) + `" INT PRIMARY KEY)`, "bucket key column"},
	}
	for _, tt := range tests {
		var err error
		stmt, perr := Parse(tt.sql)
		if perr != nil {
			err = perr
		} else {
			_, err = stmt.(*CreateTable).Resolve(Config{})
		}
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%.80s: %v", tt.sql, err)
		case tt.want != "" && (err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%.80s:\n got %v\nwant ErrInvalid with %q", tt.sql, err, tt.want)
		}
	}
}

func TestDatabaseNameRules(t *testing.T) { forEachBackend(t, testDatabaseNameRules) }

func testDatabaseNameRules(t *testing.T, b backend) {
	c, _ := b.newCatalog(t)
	for name, want := range map[string]string{
		"default.x": `must not contain "."`,
		"a$b":       `must not contain "$"`,
		"":          "name is empty",
		"a\x00":     "U+0000",
		"a%20b":     `must not contain '%'`,
	} {
		if err := c.CreateDatabase(context.Background(), name, false); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), want) {
			t.Errorf("CREATE DATABASE %q: %v, want ErrInvalid with %q", name, err, want)
		}
	}
	exec(t, c, `CREATE DATABASE "Sales_EU-1"`)
}

// ADD COLUMN keeps to the same limits: the name rules, the depth, and the
// table's column and field counts.
func TestAddColumnLimits(t *testing.T) { forEachBackend(t, testAddColumnLimits) }

func testAddColumnLimits(t *testing.T, b backend) {
	c, _ := b.newCatalog(t)
	ctx := context.Background()
	parts := make([]string, MaxColumns)
	for i := range parts {
		parts[i] = fmt.Sprintf("c%d INT", i)
	}
	exec(t, c, "CREATE TABLE wide ("+strings.Join(parts, ", ")+")")
	exec(t, c, "CREATE TABLE narrow (a INT)")
	deep := Prim(KindBigInt)
	for range 10000 {
		deep = StructOf(StructField{Name: "a", Type: deep})
	}
	for _, tt := range []struct {
		table string
		col   Column
		want  string
	}{
		{"wide", Column{Name: "one_more", Type: Prim(KindInteger)}, "has 1001 columns; the limit is 1000"},
		{"narrow", Column{Name: "deep", Type: deep}, "deeper than the limit of 32 levels"},
		{"narrow", Column{Name: "a.b", Type: Prim(KindInteger)}, `must not contain "."`},
		{"narrow", Column{Name: "x\x7f", Type: Prim(KindInteger)}, "non-printing character U+007F"},
	} {
		if _, err := c.AddColumn(ctx, "", tt.table, tt.col); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ADD COLUMN %.20q to %s: %v, want ErrInvalid with %q", tt.col.Name, tt.table, err, tt.want)
		}
	}
	wideStruct := make([]StructField, MaxFields)
	for i := range wideStruct {
		wideStruct[i] = StructField{Name: fmt.Sprint("f", i), Type: Prim(KindInteger)}
	}
	if _, err := c.AddColumn(ctx, "", "narrow", Column{Name: "s", Type: StructOf(wideStruct...)}); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "10002 fields") {
		t.Errorf("ADD COLUMN of %d fields: %v", MaxFields, err)
	}
	if tbl, _ := c.Table(ctx, "", "narrow"); tbl.SchemaID != 0 {
		t.Errorf("refused ADD COLUMNs made schema version %d", tbl.SchemaID)
	}
}

// ColumnsFromArrow, the way an ingest creates a table, keeps to the limits
// and the name rules too, and stops converting at them.
func TestColumnsFromArrowLimits(t *testing.T) {
	var deep arrow.DataType = arrow.PrimitiveTypes.Int64
	for range 10000 {
		deep = arrow.StructOf(arrow.Field{Name: "a", Type: deep, Nullable: true})
	}
	wide := make([]arrow.Field, MaxFields)
	for i := range wide {
		wide[i] = arrow.Field{Name: fmt.Sprint("f", i), Type: arrow.PrimitiveTypes.Int32}
	}
	many := make([]arrow.Field, MaxColumns+1)
	for i := range many {
		many[i] = arrow.Field{Name: fmt.Sprint("c", i), Type: arrow.PrimitiveTypes.Int32}
	}
	tests := []struct {
		name   string
		fields []arrow.Field
		want   string
	}{
		{"deep", []arrow.Field{{Name: "d", Type: deep}}, "deeper than the limit of 32 levels"},
		{"deep list", []arrow.Field{{Name: "d", Type: deepList(10000)}}, "deeper than the limit of 32 levels"},
		{"wide struct", []arrow.Field{{Name: "s", Type: arrow.StructOf(wide...)}}, "more than 10000 fields"},
		{"many columns", many, "1001 columns; the limit is 1000"},
		{"dotted name", []arrow.Field{{Name: "a.b", Type: arrow.PrimitiveTypes.Int32}}, `must not contain "."`},
		{"control character", []arrow.Field{{Name: "a\x1b[31m", Type: arrow.PrimitiveTypes.Int32}}, "U+001B"},
		{"nested name", []arrow.Field{{Name: "s", Type: arrow.StructOf(arrow.Field{Name: "x.y", Type: arrow.PrimitiveTypes.Int32})}}, `"x.y" must not contain "."`},
		{"case duplicate", []arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int32}, {Name: "A", Type: arrow.PrimitiveTypes.Int32}}, "more than once"},
	}
	for _, tt := range tests {
		_, err := ColumnsFromArrow(arrow.NewSchema(tt.fields, nil))
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %.300v, want ErrInvalid with %q", tt.name, err, tt.want)
		}
	}
	if _, err := ColumnsFromArrow(arrow.NewSchema([]arrow.Field{{Name: "d", Type: deepList(MaxTypeDepth)}}, nil)); err != nil {
		t.Errorf("%d levels: %v", MaxTypeDepth, err)
	}
}

func deepList(depth int) arrow.DataType {
	var dt arrow.DataType = arrow.PrimitiveTypes.Int64
	for range depth {
		dt = arrow.ListOf(dt)
	}
	return dt
}
