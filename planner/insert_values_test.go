package planner

import (
	"testing"

	"github.com/lakestream/lakestream/catalog"
)

func TestCastValues(t *testing.T) {
	target := []catalog.Column{{Name: "id", Type: catalog.Prim(catalog.KindBigInt)}, {Name: "s", Type: catalog.Prim(catalog.KindVarchar)}}
	for _, tc := range []struct{ in, want string }{
		{"VALUES (?, ?)", "VALUES (CAST(? AS BIGINT), CAST(? AS VARCHAR))"},
		{"values (1, 'a, b'), ($1, concat('x', 'y'))", "VALUES (CAST(1 AS BIGINT), CAST('a, b' AS VARCHAR)), (CAST($1 AS BIGINT), CAST(concat('x', 'y') AS VARCHAR))"},
		{"VALUES ((1 + 2) * 3, [1, 2]::VARCHAR)", "VALUES (CAST((1 + 2) * 3 AS BIGINT), CAST([1, 2]::VARCHAR AS VARCHAR))"},
		// Not a plain VALUES list of two: unchanged, DuckDB says what is wrong.
		{"VALUES (1)", "VALUES (1)"},
		{"VALUES (1, 2) ORDER BY 1", "VALUES (1, 2) ORDER BY 1"},
		{"SELECT 1, 2", "SELECT 1, 2"},
		{"VALUES (1, )", "VALUES (1, )"},
	} {
		if got, _ := castValues(tc.in, target); got != tc.want {
			t.Errorf("castValues(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
