package duck

import (
	"errors"
	"fmt"

	bindings "github.com/duckdb/duckdb-go-bindings"
)

// MemoryUsed is the memory DuckDB's buffer manager holds now, in bytes:
// the sum of duckdb_memory()'s memory_usage_bytes over its tags (query
// intermediates, hash tables, caches), what --engine-memory bounds. It runs
// on a connection of its own, outside every query's state.
func (e *Engine) MemoryUsed() (int64, error) {
	e.mu.Lock()
	if e.mu.closed {
		e.mu.Unlock()
		return 0, ErrClosed
	}
	e.conns.Add(1) // Close waits for it before it closes the database
	e.mu.Unlock()
	defer e.conns.Done()
	var c bindings.Connection
	if bindings.Connect(e.db, &c) == bindings.StateError {
		return 0, errors.New("duck: connect")
	}
	defer bindings.Disconnect(&c)
	var res bindings.Result
	defer bindings.DestroyResult(&res)
	if bindings.Query(c, memoryQuery, &res) == bindings.StateError {
		return 0, fmt.Errorf("duck: memory in use: %s", bindings.ResultError(&res))
	}
	return bindings.ValueInt64(&res, 0, 0), nil
}

// memoryQuery sums what DuckDB's buffer manager holds.
const memoryQuery = "SELECT CAST(coalesce(sum(memory_usage_bytes), 0) AS BIGINT) FROM duckdb_memory()"
