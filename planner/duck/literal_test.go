package duck

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lakestream/lakestream/planner"
)

// literalCases compare a column of each type with literals at and around
// its values, in every form planner's literal rules (planner/literal.go)
// speak of. refused marks what the rules refuse although DuckDB accepts it
// (they take a subset); everything else must be read as DuckDB reads it.
var literalCases = []struct {
	typ     string
	values  []string
	conds   []planner.Condition
	refused []string // conditions, as Condition.String renders them
}{
	{"TINYINT", []string{"-128", "-1", "0", "1", "2", "127", "NULL"}, conds(
		"< 2.5", "> -0.5", "= 0.5", "<> 0.5", "<= -1.5", "< 1e30", "> -1e30", ">= 1e0", "< 2.5e0", "= 1.0",
		"= ' 127 '", "= '+1'", "= '-128'", "= '1000'", "= '1.5'", "= '1e2'", "= 'abc'", "= TRUE"),
		[]string{"x = '1.5'", "x = '1e2'", "x = true"}},
	{"BIGINT", []string{"-9223372036854775808", "-3", "2", "9007199254740992", "9007199254740993", "9223372036854775807"}, conds(
		"= 9007199254740993", "= 9007199254740992e0", "> 9007199254740992e0", ">= 9.3e18", "< -9.3e18",
		"> 9223372036854775807", "<= -2.5", "= '9007199254740993'", "> '-9223372036854775808'"), nil},
	{"DOUBLE", []string{"'-inf'", "-0.5", "0", "0.1", "0.30000000000000004", "2.5", "'nan'", "'inf'"}, conds(
		"= 0.1", "= 1e-1", "< 0.3", "> 0.3e0", "= 'NaN'", "< 'nan'", "= '-nan'", ">= 'Infinity'", "<= '-inf'",
		"= ' 2.5 '", "= '0x10'", "= '1_0'", "> 'abc'"), []string{"x = '1_0'"}},
	{"FLOAT", []string{"0.1", "1", "2", "'nan'", "3.4e38"}, conds(
		"= 0.1", "= 1e-1", "> 1e-1", "= '0.1'", ">= 2", "< 3.5e38", "= 'nan'"), nil},
	{"DECIMAL(10,2)", []string{"-1.50", "0", "1.25", "1.56", "99999.99"}, conds(
		"> 1.25", ">= 1.245", "= 1.555", "= '1.555'", "= '-1.495'", "= ' 1.25 '", "= '1e0'", "< 1e40", "= 1.25e0",
		"= 'abc'", "< 99999.995"), nil},
	{"DECIMAL(18,17)", []string{"0.12345678901234567", "0.3", "-0.1"}, conds(
		"= 0.12345678901234567e0", "= 0.3e0", "> 0.12345678901234566e0", "= -1e-1"), nil},
	{"VARCHAR", []string{"''", "'B'", "'a'", "'b'", "'é'", "NULL"}, conds(
		"< 'a'", "> 'b'", "= ''", "= 'é'", "= 1", "= DATE '2026-01-01'"), []string{"x = 1"}},
	{"BLOB", []string{"''", `'\x00'`, "'A'", "'k1'", `'\xFF'`}, conds(
		`= '\x41'`, `< '\xFF'`, `>= '\x00'`, `= 'k1'`, `= '\x4'`, `= '\\'`, "= 'é'"), nil},
	{"BOOLEAN", []string{"false", "true", "NULL"}, conds(
		"= TRUE", "< true", "= 'yes'", "= 'N'", "= '1'", "= 'T'", "= ' true '", "= 'maybe'", "= 1"),
		[]string{"x = 1"}},
	{"DATE", []string{"'2025-12-31'", "'2026-01-01'", "'2026-01-02'", "'1970-01-01'"}, conds(
		"= '2026-01-01'", "= DATE '2026-1-2'", "> ' 2026-01-01 '", "= TIMESTAMP '2026-01-01 00:00:00'",
		"> TIMESTAMP '2026-01-01 00:00:01'", "< TIMESTAMPTZ '2026-01-01 00:00:00-01'", "< TIMESTAMP '2026-01-01 00:00:00-01'",
		"= TIMESTAMPTZ '2026-01-01 00:00:00+00'", "= '2026-02-30'", "= '2026-01-01 10:00'", "= 'tomorrow'"),
		[]string{"x = '2026-01-01 10:00'"}},
	{"TIME", []string{"'00:00'", "'01:00'", "'10:00'", "'10:00:00.123456'", "'23:59:59.999999'"}, conds(
		"= '10:00'", "> TIME '1:00'", "= '10:00:00.1234567'", ">= '23:59:59.9999999'", "= ' 10:00 '",
		"= '24:00:00'", "= '10:00:00+02'", "= '10'"), []string{"x = '10:00:00+02'", "x = '24:00:00'"}},
	{"TIMESTAMP", []string{"'2025-12-31 23:00:00'", "'2026-01-01 00:00:00'", "'2026-01-01 00:00:00.000001'", "'2026-01-01 01:00:00'", "'2026-01-02'"}, conds(
		">= '2026-01-01'", "= '2026-01-01 01:00:00+02'", "= TIMESTAMP '2026-01-01 01:00:00+02:00'",
		"= TIMESTAMPTZ '2026-01-01 01:00:00+02:00'", "= TIMESTAMPTZ '2026-01-01T01:00:00+01'",
		"> TIMESTAMP '2026-01-01 00:00:00.0000009'", "< DATE '2026-01-02'", "= ' 2026-01-01 1:00 '",
		"= '2026-01-01 01:00:00Z'", "= '2026-01-01 01:00:00 UTC'", "= '2026-01-01 01:00+02'",
		"= '2026-01-01 24:00:00'", "= 'infinity'", "= '2026-01-01 01:00:00 +02:00'", "= TIMESTAMPTZ '2026-01-01 00:00:00 Europe/Paris'"),
		[]string{"x = '2026-01-01 01:00:00 UTC'", "x = '2026-01-01 24:00:00'", "x = 'infinity'",
			"x = TIMESTAMPTZ '2026-01-01 00:00:00 Europe/Paris'"}},
	{"TIMESTAMPTZ", []string{"'2025-12-31 23:00:00+00'", "'2026-01-01 00:00:00+00'", "'2026-01-01 00:00:00.000001+00'", "'2026-01-01 01:00:00+00'", "'2026-01-02 00:00:00+00'"}, conds(
		">= '2026-01-01'", "= '2026-01-01 01:00:00+01'", "= '2026-01-01 00:00:00-0100'", "= TIMESTAMP '2026-01-01 01:00:00+02:00'",
		"= TIMESTAMPTZ '2026-01-01 01:00:00+01:00'", "> TIMESTAMPTZ '2026-01-01 00:30:00+01'", "= TIMESTAMP '2026-01-01 01:00:00'",
		"< DATE '2026-01-02'", "= '2026-01-01 00:00:00Z'", "= '2026-01-01 00:00+01'", "= '2026-01-01 00:00:00 +01'"), nil},
}

// conds parses "op literal" conditions on column x with planner's parser.
func conds(cs ...string) []planner.Condition {
	out := make([]planner.Condition, len(cs))
	for i, c := range cs {
		st, err := planner.Classify("SELECT x FROM changes('t', 'latest') WHERE x " + c)
		if err != nil {
			panic(fmt.Sprintf("%s: %v", c, err))
		}
		out[i] = st.Changes.Where[0]
	}
	return out
}

// TestLiteralRulesMatchDuckDB pins both users of planner's literal rules to
// DuckDB: for each condition, the rows the changes() filter keeps are the
// rows DuckDB's WHERE keeps (or the filter refuses the condition: always
// where DuckDB does, and, among what DuckDB accepts, only for the refused
// forms listed), and the filters pushdown derives from DuckDB's parse tree
// keep every one of those rows and, for exact types, no other.
func TestLiteralRulesMatchDuckDB(t *testing.T) {
	e := newTestEngine(t, newFakeResolver())
	mem := checkedAlloc(t)
	for _, tc := range literalCases {
		var rows []string
		for i, v := range tc.values {
			rows = append(rows, fmt.Sprintf("(%d, CAST(%s AS %s))", i, v, tc.typ))
		}
		data := "(VALUES " + strings.Join(rows, ", ") + ") lit(i, x)"
		rec := firstRecordOf(t, e, "SELECT * FROM "+data)
		for _, c := range tc.conds {
			where := c.String()
			want, duckErr := keptIDs(e, "SELECT i FROM "+data+" WHERE "+where+" ORDER BY i")
			got, filterErr := filterIDs(rec, c, mem)
			refused := slices.Contains(tc.refused, where)
			switch {
			case duckErr != nil && filterErr == nil:
				t.Errorf("%s %s: DuckDB refuses it (%v), the changes() filter keeps %v", tc.typ, where, duckErr, got)
			case duckErr == nil && filterErr != nil && !refused:
				t.Errorf("%s %s: DuckDB keeps %v, the changes() filter refuses it: %v", tc.typ, where, want, filterErr)
			case duckErr == nil && filterErr == nil && refused:
				t.Errorf("%s %s: listed as refused, the changes() filter keeps %v", tc.typ, where, got)
			case duckErr == nil && filterErr == nil && !slices.Equal(got, want):
				t.Errorf("%s %s: the changes() filter keeps %v, DuckDB %v", tc.typ, where, got, want)
			}
			if duckErr == nil {
				checkPushdown(t, e, rec, tc.typ, where, want)
			}
		}
		rec.Release()
	}
}

// checkPushdown: the filters pushed for where keep every row of want, and
// for types compared exactly, only those.
func checkPushdown(t *testing.T, e *Engine, rec arrow.RecordBatch, typ, where string, want []int64) {
	t.Helper()
	tree, err := e.serialize("SELECT * FROM lit WHERE " + where)
	if err != nil {
		t.Fatalf("%s: %v", where, err)
	}
	fs := extractPushdown(tree).filters("", "lit", rec.Schema())
	exact := len(fs) > 0 && !strings.Contains(where, "<>") && typ != "DOUBLE" && typ != "FLOAT"
	for i := range int(rec.NumRows()) {
		ok, err := rowSatisfies(rec, i, fs)
		if err != nil {
			t.Fatalf("%s %s: %v", typ, where, err)
		}
		kept := slices.Contains(want, int64(i))
		switch {
		case kept && !ok:
			t.Errorf("%s %s: pushdown %v drops row %d, which DuckDB keeps", typ, where, fs, i)
		case !kept && ok && exact && rec.Column(1).IsValid(i):
			t.Errorf("%s %s: pushdown %v keeps row %d, which DuckDB drops", typ, where, fs, i)
		}
	}
}

// keptIDs runs sql, which selects the i of the rows kept.
func keptIDs(e *Engine, sql string) ([]int64, error) {
	res, err := tryQuery(e, sql)
	if err != nil {
		return nil, err
	}
	var ids []int64
	for _, r := range res.rows {
		var id int64
		if _, err := fmt.Sscan(r[0], &id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// filterIDs is the i of the rows of rec the changes() filter c keeps.
func filterIDs(rec arrow.RecordBatch, c planner.Condition, mem memory.Allocator) ([]int64, error) {
	read, f, err := planner.BindFilter(rec.Schema(), []int{0, 1}, []planner.Condition{c})
	if err != nil {
		return nil, err
	}
	if len(read) != 2 {
		return nil, fmt.Errorf("read %v", read)
	}
	rec.Retain()
	out, err := f.Apply(rec, mem)
	if err != nil || out == nil {
		return nil, err
	}
	defer out.Release()
	var ids []int64
	for _, v := range out.Column(0).(*array.Int32).Int32Values() {
		ids = append(ids, int64(v))
	}
	return ids, nil
}

// firstRecordOf runs sql, whose result fits one record, and returns it.
func firstRecordOf(t *testing.T, e *Engine, sql string) arrow.RecordBatch {
	t.Helper()
	s, _, err := e.Query(context.Background(), sql)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	defer s.Close()
	rec, err := s.Next()
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	if _, err := s.Next(); !errors.Is(err, io.EOF) {
		t.Fatalf("%s: more than one record (%v)", sql, err)
	}
	return rec
}
