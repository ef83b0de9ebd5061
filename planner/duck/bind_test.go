package duck

import (
	"errors"
	"testing"
)

// A client can call lakestream_scan itself. DuckDB's GetVarchar of a NULL
// argument throws a C++ exception, which across cgo aborted the process:
// NULL arguments are refused like any bad argument.
func TestScanFunctionNullArguments(t *testing.T) {
	e, _, _ := withEvents(t)
	for _, sql := range []string{
		"SELECT * FROM lakestream_scan(NULL, NULL)",
		"SELECT * FROM lakestream_scan('', NULL)",
		"SELECT * FROM lakestream_scan(NULL, 'events')",
	} {
		_, err := tryQuery(e, sql)
		if !errors.Is(err, ErrNotQuery) {
			t.Errorf("%s: error %v, want ErrNotQuery", sql, err)
		}
	}
	if _, err := tryQuery(e, "SELECT count(*) FROM lakestream_scan('', 'events')"); err != nil {
		t.Errorf("lakestream_scan with strings: %v", err)
	}
}
