package duck

import (
	"context"
	"errors"
	"testing"
)

// MemoryUsed reports what DuckDB holds: more while a query keeps a large
// hash table than before it, and ErrClosed after Close.
func TestMemoryUsed(t *testing.T) {
	e := newTestEngine(t, newFakeResolver())
	before, err := e.MemoryUsed()
	if err != nil {
		t.Fatal(err)
	}
	rs, _, err := e.Query(context.Background(), "SELECT DISTINCT range % 3000000 AS k FROM range(3000000)")
	if err != nil {
		t.Fatal(err)
	}
	rec, err := rs.Next()
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	during, err := e.MemoryUsed()
	if err != nil {
		t.Fatal(err)
	}
	rs.Close()
	if during <= before {
		t.Errorf("memory in use %d while a 3M-key DISTINCT streams, %d before: want more", during, before)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := e.MemoryUsed(); !errors.Is(err, ErrClosed) {
		t.Errorf("after Close: %v, want ErrClosed", err)
	}
}
