package catalog

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The limits on definitions (docs/sql.md, "Limits"). They are checked before
// anything is stored or converted, for DDL, for tables an ingest creates
// from an Arrow schema (ColumnsFromArrow) and for ADD COLUMN; the parser
// stops at the depth and width limits instead of building what it would
// refuse. A definition stored by an older release with a column type the
// parser refuses now (nested deeper than MaxTypeDepth, or of more than
// MaxFields fields) does not load (Catalog.BrokenTables); the other limits
// and the name rules apply to new definitions only.
//
// What others allow, and why these:
//
//   - Nesting: PostgreSQL and DuckDB set no type nesting limit, Iceberg none;
//     Arrow C++'s IPC reader (pyarrow, ADBC) refuses more than 64 levels by
//     default (max_recursion_depth). Every layer below
//     (Arrow, Parquet, Iceberg's schema visitors) recurses per level, and
//     iceberg-go's schema conversion is superlinear in depth: a 10,000-level
//     STRUCT made it run out of memory. 32 levels is far beyond any real
//     schema and well inside Arrow's 64.
//   - Columns: PostgreSQL allows 1,600 per table, Oracle 1,000, SQL Server
//     1,024, MySQL 4,096, DuckDB and Iceberg set no limit. Each column has
//     per-batch statistics in the log and every schema version is stored
//     whole (ADD COLUMN), so we take the common 1,000. Nested fields (each
//     takes an Iceberg field id and an Arrow child) are bounded in total by
//     MaxFields.
//   - Names: PostgreSQL truncates identifiers to 63 bytes, DuckDB and
//     Iceberg set no length limit, Fluss allows 200 characters of ASCII
//     letters, digits, '_' and '-' in database and table names. Names
//     become parts of paths in the lake (the Iceberg table location, the
//     partition directories "col_day=..." with the column name URL-escaped)
//     where 255 bytes is the usual file name limit, so a name is at most
//     128 bytes of UTF-8.
//   - Database and table names take any printable UTF-8 (quoted names such
//     as "Region Targets" come from pandas and spreadsheets), but not '.':
//     "db.table" is how a table is named in logs, metrics and the Iceberg
//     catalog, so `"default.x".t` and `default."x.t"` would both be
//     "default.x.t" (the duplicate made /metrics fail). Not '$': it
//     separates a table's name from its virtual layers, "t$lake" and
//     "t$changelog" (LakeSuffix, ChangelogSuffix), so no base name can end
//     with one of them. Not '/' or '\', which would split the name into
//     directories of the lake's table location, and no control or other
//     non-printing characters.
//   - Column and STRUCT field names take any printable UTF-8 (ingests
//     bring names like "unit price"), but no control or other
//     non-printing characters, and not '.': Iceberg joins nested field
//     names with '.', so a column "a.b" next to a STRUCT column "a" with
//     a field "b" is a schema Iceberg refuses.
const (
	// MaxTypeDepth is how deeply LIST, STRUCT and MAP types may nest:
	// BIGINT is depth 0, BIGINT[] 1, STRUCT(a BIGINT[]) 2.
	MaxTypeDepth = 32
	// MaxColumns is the most columns a table may have.
	MaxColumns = 1000
	// MaxFields is the most fields a table's schema may have in all:
	// every column, STRUCT field, LIST element and MAP key and value.
	MaxFields = 10000
	// MaxNameBytes is the longest name of a database, table, column or
	// STRUCT field, in bytes of UTF-8.
	MaxNameBytes = 128
)

// maxListItems bounds the other lists of a statement: primary key columns,
// partition fields. maxOptions bounds the WITH options (there are far
// fewer known ones: the rest are errors).
const (
	maxListItems = MaxColumns
	maxOptions   = 64
)

// quoteName quotes a name for an error message, shortened: the name may be
// the over-long one the message is about.
func quoteName(name string) string {
	const max = 64
	if len(name) <= max {
		return strconv.Quote(name)
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(name[cut]) {
		cut--
	}
	return strconv.Quote(name[:cut]) + fmt.Sprintf("... (%d bytes)", len(name))
}

// checkObjectName checks a database or table name; what is "database" or
// "table".
func checkObjectName(what, name string) error {
	if err := checkNameLength(what, name); err != nil {
		return err
	}
	for _, r := range name {
		switch {
		case r == '$':
			return invalidf(`%s name %s must not contain "$": it is reserved for the virtual names of a table, such as "t%s" and "t%s"`, what, quoteName(name), LakeSuffix, ChangelogSuffix)
		case r == '.':
			return invalidf(`%s name %s must not contain ".": "db.table" names a table, and the dot would make it ambiguous`, what, quoteName(name))
		case r == '/' || r == '\\' || r == '%':
			// '%' too: the lake's table location is a URL, where it
			// starts an escape ("a%20b" would name the directory "a b").
			return invalidf(`%s name %s must not contain %q: the name is a directory of the lake's table location`, what, quoteName(name), r)
		case !unicode.IsPrint(r):
			return invalidf("%s name %s contains %s", what, quoteName(name), describeRune(r))
		}
	}
	return nil
}

// checkFieldName checks a column or STRUCT field name; what is "column" or
// "STRUCT field".
func checkFieldName(what, name string) error {
	if err := checkNameLength(what, name); err != nil {
		return err
	}
	for _, r := range name {
		switch {
		case r == '.':
			return invalidf(`%s name %s must not contain ".": the lake (Iceberg) joins nested field names with "."`, what, quoteName(name))
		case !unicode.IsPrint(r):
			return invalidf("%s name %s contains %s", what, quoteName(name), describeRune(r))
		}
	}
	return nil
}

func checkNameLength(what, name string) error {
	switch {
	case name == "":
		return invalidf("a %s name is empty", what)
	case len(name) > MaxNameBytes:
		return invalidf("%s name %s is longer than the limit of %d bytes", what, quoteName(name), MaxNameBytes)
	case !utf8.ValidString(name):
		return invalidf("%s name %s is not valid UTF-8", what, quoteName(name))
	}
	return nil
}

// describeRune names a character for an error message.
func describeRune(r rune) string {
	if unicode.IsPrint(r) {
		return fmt.Sprintf("%q", r)
	}
	return fmt.Sprintf("the non-printing character %U", r)
}

// checkPathName checks that a column whose name becomes a directory name
// in the lake (a partition or bucket column: "col_day=...", URL-escaped)
// fits a file name.
func checkPathName(what, name string) error {
	if n := len(url.QueryEscape(name)); n > MaxNameBytes {
		return invalidf("%s %s is %d bytes once URL-escaped for the lake's directory names; the limit is %d", what, quoteName(name), n, MaxNameBytes)
	}
	return nil
}

// typeDepth is how deeply t nests LIST, STRUCT and MAP types: 0 for a
// primitive type.
func typeDepth(t Type) int {
	switch t.Kind {
	case KindList:
		if t.Elem == nil {
			return 1
		}
		return 1 + typeDepth(*t.Elem)
	case KindMap:
		d := 0
		for _, c := range []*Type{t.Key, t.Value} {
			if c != nil {
				d = max(d, typeDepth(*c))
			}
		}
		return 1 + d
	case KindStruct:
		d := 0
		for _, f := range t.Fields {
			d = max(d, typeDepth(f.Type))
		}
		return 1 + d
	}
	return 0
}

// fieldCount is the fields of columns as MaxFields counts them: each
// column, and each STRUCT field, LIST element and MAP key and value in
// their types.
func fieldCount(cols []Column) int {
	n := 0
	for _, c := range cols {
		n += 1 + childFields(c.Type)
	}
	return n
}

func childFields(t Type) int {
	switch t.Kind {
	case KindList:
		if t.Elem == nil {
			return 1
		}
		return 1 + childFields(*t.Elem)
	case KindMap:
		n := 2
		for _, c := range []*Type{t.Key, t.Value} {
			if c != nil {
				n += childFields(*c)
			}
		}
		return n
	case KindStruct:
		n := len(t.Fields)
		for _, f := range t.Fields {
			n += childFields(f.Type)
		}
		return n
	}
	return 0
}

// checkWidth checks the column and field counts of a table's columns.
func checkWidth(table string, cols []Column) error {
	var errs []string
	if len(cols) > MaxColumns {
		errs = append(errs, fmt.Sprintf("table %s has %d columns; the limit is %d", table, len(cols), MaxColumns))
	}
	if n := fieldCount(cols); n > MaxFields {
		errs = append(errs, fmt.Sprintf("table %s has %d fields (columns and their nested fields); the limit is %d", table, n, MaxFields))
	}
	if len(errs) == 0 {
		return nil
	}
	return invalidf("%s", strings.Join(errs, "; "))
}

// errTooDeep is the error for a type nested deeper than MaxTypeDepth.
func errTooDeep(col string) string {
	return fmt.Sprintf("type%s nests LIST, STRUCT and MAP deeper than the limit of %d levels", forColumn(col), MaxTypeDepth)
}
