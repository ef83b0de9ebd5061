package catalog

import (
	"errors"
	"reflect"
	"testing"
)

// FuzzParse feeds arbitrary text to the DDL parser, through the exported
// API only, as a client of the package would (the file is in package
// catalog because TestImports holds every file here to the package's
// imports). Nothing may panic; an error matches ErrInvalid, and a
// *SyntaxError points into the text; a statement it accepts starts with a
// word IsDDL routes to it; and what is parsed comes back through its
// printers: a table definition through Table.DDL (which must parse and
// resolve to the same DDL), names through TableName.String and QuoteIdent,
// types through Type.String and ParseType.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"CREATE DATABASE sales",
		"create database if not exists Sales;",
		`DROP DATABASE IF EXISTS "My""Db" CASCADE`,
		"DROP TABLE IF EXISTS db.t",
		`ALTER TABLE d."T" ADD COLUMN c DECIMAL(12, 2)`,
		"-- comment\n/* block */ DROP TABLE t",
		`CREATE TABLE shop."Orders" (order_id BIGINT NOT NULL, region VARCHAR, ts TIMESTAMPTZ,
			amount DECIMAL(12,2), tags VARCHAR[], attrs MAP(VARCHAR, DOUBLE),
			"Payload" STRUCT(kind VARCHAR, items STRUCT(sku BIGINT, qty INTEGER)[]),
			PRIMARY KEY (order_id, region, ts))
		 PARTITIONED BY (region, day(ts))
		 WITH ('bucket.num' = '16', 'bucket.key' = 'order_id', 'log.compression' = 'lz4')`,
		"CREATE TABLE t (primary INT, key INT)",
		"CREATE TABLE t (a INT",
		"SELECT 1",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, sql string) {
		stmt, err := Parse(sql)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Parse(%q): %v does not match ErrInvalid", sql, err)
			}
			var se *SyntaxError
			if errors.As(err, &se) && (se.Pos < 0 || se.Pos > len(sql)) {
				t.Fatalf("Parse(%q): syntax error at %d, outside the text", sql, se.Pos)
			}
			return
		}
		if !IsDDL(sql) {
			t.Fatalf("Parse(%q) accepted a statement IsDDL does not route to it", sql)
		}
		switch s := stmt.(type) {
		case *CreateTable:
			checkDDL(t, s)
		case *DropTable:
			reparse(t, "DROP TABLE "+s.Table.String(), &DropTable{Table: s.Table})
		case *AddColumn:
			reparse(t, "ALTER TABLE "+s.Table.String()+" ADD COLUMN "+QuoteIdent(s.Column.Name)+" "+s.Column.Type.String(), s)
		case *CreateDatabase:
			reparse(t, "CREATE DATABASE "+QuoteIdent(s.Name), &CreateDatabase{Name: s.Name})
		case *DropDatabase:
			reparse(t, "DROP DATABASE "+QuoteIdent(s.Name), &DropDatabase{Name: s.Name})
		default:
			t.Fatalf("Parse(%q) returned a %T", sql, stmt)
		}
	})
}

// checkDDL resolves a parsed CREATE TABLE and, if it is valid, checks that
// its DDL parses and resolves to a table with the same DDL, and that every
// column type prints and parses back to itself.
func checkDDL(t *testing.T, s *CreateTable) {
	def, err := s.Resolve(Config{})
	if err != nil {
		if !errors.Is(err, ErrInvalid) {
			t.Fatalf("Resolve: %v does not match ErrInvalid", err)
		}
		return
	}
	for _, c := range def.Columns {
		typ, err := ParseType(c.Type.String())
		if err != nil || !typ.Equal(c.Type) {
			t.Fatalf("type %s of column %q comes back as %s, %v", c.Type, c.Name, typ, err)
		}
	}
	ddl := def.DDL()
	again, err := Parse(ddl)
	if err != nil {
		t.Fatalf("the DDL of a valid table does not parse: %v\n%s", err, ddl)
	}
	ct, ok := again.(*CreateTable)
	if !ok {
		t.Fatalf("the DDL of a table parses to a %T", again)
	}
	def2, err := ct.Resolve(Config{})
	if err != nil {
		t.Fatalf("the DDL of a valid table does not resolve: %v\n%s", err, ddl)
	}
	if got := def2.DDL(); got != ddl {
		t.Fatalf("DDL changed through Parse and Resolve:\n got %s\nwant %s", got, ddl)
	}
}

// reparse parses sql, printed from a parsed statement, and wants want.
func reparse(t *testing.T, sql string, want Statement) {
	got, err := Parse(sql)
	if err != nil {
		t.Fatalf("Parse(%q), printed from a parsed statement: %v", sql, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Parse(%q) = %#v, want %#v", sql, got, want)
	}
}
