package duck

import (
	"testing"

	bindings "github.com/duckdb/duckdb-go-bindings"
)

// TestDuckDBVersionPinned: the Arrow ⇄ DuckDB buffer path depends on this
// DuckDB release — the C functions declared by hand in cabi.h (the bindings
// expose them only behind a build tag), the 16-byte string_t layout with
// 12-byte inlined strings that vectors.go writes directly, and the Arrow
// export of result chunks. Upgrading DuckDB means re-checking those, then
// this version.
func TestDuckDBVersionPinned(t *testing.T) {
	if v := bindings.LibraryVersion(); v != "v1.5.6" {
		t.Fatalf("DuckDB %s: the buffer path was written and tested against v1.5.6; re-check cabi.h and vectors.go", v)
	}
}
