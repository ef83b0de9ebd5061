package bench

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	bindings "github.com/duckdb/duckdb-go-bindings"
)

// duckRef is the DuckDB baseline: a plain in-memory DuckDB in this
// process, with the benchmark rows in a native table, driven through the C
// API bindings (the DuckDB build the node embeds; duckdb-go's database/sql
// driver is not a dependency of the module, and would add a per-value Go
// conversion to every result). It runs with as many threads as the node's
// engine (GOMAXPROCS) and TimeZone=UTC, like the engine. It is a
// baseline, not a part of a node: the node's engine (planner/duck, started
// by node.Start) is what it is measured against.
type duckRef struct {
	db   bindings.Database
	conn bindings.Connection
}

func openDuck() (*duckRef, error) {
	d := &duckRef{}
	var cfg bindings.Config
	if bindings.CreateConfig(&cfg) == bindings.StateError {
		return nil, errors.New("duckdb: create config")
	}
	defer bindings.DestroyConfig(&cfg)
	var msg string
	if bindings.OpenExt(":memory:", &d.db, cfg, &msg) == bindings.StateError {
		return nil, fmt.Errorf("duckdb: open: %s", msg)
	}
	if bindings.Connect(d.db, &d.conn) == bindings.StateError {
		bindings.Close(&d.db)
		return nil, errors.New("duckdb: connect")
	}
	for _, sql := range []string{"SET TimeZone = 'UTC'", fmt.Sprintf("SET threads = %d", runtime.GOMAXPROCS(0))} {
		if err := d.exec(sql); err != nil {
			d.close()
			return nil, err
		}
	}
	return d, nil
}

func (d *duckRef) close() {
	bindings.Disconnect(&d.conn)
	bindings.Close(&d.db)
}

func (d *duckRef) exec(sql string) error {
	var res bindings.Result
	state := bindings.Query(d.conn, sql, &res)
	msg := bindings.ResultError(&res)
	bindings.DestroyResult(&res)
	if state == bindings.StateError {
		return fmt.Errorf("duckdb: %s: %s", sql, msg)
	}
	return nil
}

// load creates table with the event columns and appends recs to it with
// DuckDB's appender, a data chunk at a time.
func (d *duckRef) load(table string, recs []arrow.RecordBatch) error {
	if err := d.exec("CREATE TABLE " + table + " " + eventsDDL); err != nil {
		return err
	}
	var app bindings.Appender
	if bindings.AppenderCreateExt(d.conn, "memory", "main", table, &app) == bindings.StateError {
		msg := bindings.AppenderError(app)
		bindings.AppenderDestroy(&app)
		return fmt.Errorf("duckdb: appender: %s", msg)
	}
	defer bindings.AppenderDestroy(&app)
	var types []bindings.LogicalType
	for _, t := range []bindings.Type{bindings.TypeBigInt, bindings.TypeDouble, bindings.TypeVarchar, bindings.TypeTimestampTZ} {
		types = append(types, bindings.CreateLogicalType(t))
	}
	chunk := bindings.CreateDataChunk(types)
	for i := range types {
		bindings.DestroyLogicalType(&types[i])
	}
	defer bindings.DestroyDataChunk(&chunk)
	step := int(bindings.VectorSize())
	for _, rec := range recs {
		for from := 0; from < int(rec.NumRows()); from += step {
			n := min(step, int(rec.NumRows())-from)
			bindings.DataChunkReset(chunk)
			fillChunk(chunk, rec, from, n)
			if bindings.AppendDataChunk(app, chunk) == bindings.StateError {
				return fmt.Errorf("duckdb: append: %s", bindings.AppenderError(app))
			}
		}
	}
	if bindings.AppenderClose(app) == bindings.StateError {
		return fmt.Errorf("duckdb: append: %s", bindings.AppenderError(app))
	}
	return nil
}

// fillChunk copies rows [from, from+n) of an events record (no nulls)
// into chunk.
func fillChunk(chunk bindings.DataChunk, rec arrow.RecordBatch, from, n int) {
	vec := func(i int) bindings.Vector { return bindings.DataChunkGetVector(chunk, bindings.IdxT(i)) }
	copy(unsafe.Slice((*int64)(bindings.VectorGetData(vec(0))), n), rec.Column(0).(*array.Int64).Int64Values()[from:from+n])
	copy(unsafe.Slice((*float64)(bindings.VectorGetData(vec(1))), n), rec.Column(1).(*array.Float64).Float64Values()[from:from+n])
	kinds, kv := rec.Column(2).(*array.String), vec(2)
	for i := range n {
		bindings.VectorAssignStringElement(kv, bindings.IdxT(i), kinds.Value(from+i))
	}
	ts := rec.Column(3).(*array.Timestamp).TimestampValues()[from : from+n]
	out := unsafe.Slice((*arrow.Timestamp)(bindings.VectorGetData(vec(3))), n)
	copy(out, ts) // TIMESTAMPTZ is int64 microseconds, as timestamp[us]
	bindings.DataChunkSetSize(chunk, bindings.IdxT(n))
}

// query runs sql and reads the whole result; it returns the result's rows
// and the sum of its BIGINT column sumCol.
func (d *duckRef) query(sql string, sumCol int) (rows, sum int64, err error) {
	var res bindings.Result
	if bindings.Query(d.conn, sql, &res) == bindings.StateError {
		msg := bindings.ResultError(&res)
		bindings.DestroyResult(&res)
		return 0, 0, fmt.Errorf("duckdb: %s", msg)
	}
	defer bindings.DestroyResult(&res)
	if t := bindings.ColumnType(&res, bindings.IdxT(sumCol)); t != bindings.TypeBigInt {
		return 0, 0, fmt.Errorf("duckdb: column %d is type %d, want BIGINT", sumCol, t)
	}
	for {
		chunk := bindings.FetchChunk(res)
		if chunk.Ptr == nil {
			break
		}
		n := int(bindings.DataChunkGetSize(chunk))
		if n > 0 {
			vals := unsafe.Slice((*int64)(bindings.VectorGetData(bindings.DataChunkGetVector(chunk, bindings.IdxT(sumCol)))), n)
			for _, v := range vals {
				sum += v
			}
		}
		rows += int64(n)
		bindings.DestroyDataChunk(&chunk)
		if n == 0 {
			break
		}
	}
	if msg := bindings.ResultError(&res); msg != "" {
		return 0, 0, fmt.Errorf("duckdb: %s", msg)
	}
	return rows, sum, nil
}
