package duck

/*
#include "cabi.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	bindings "github.com/duckdb/duckdb-go-bindings"

	"github.com/lakestream/lakestream/internal/scan"
)

// The table function lakestream_scan(db VARCHAR, table VARCHAR).
//
// Life of one scan of one table reference (a self-join has two):
//
//	bind        (prepare)  resolve the table, declare its columns
//	init        (execute)  projection and filters → table.Plan → start the
//	                       part readers
//	local init  (execute)  per DuckDB thread: the record being copied
//	function    (execute)  fill one output chunk from the channel
//	delete      (teardown) stop the readers, release records
//
// The scan starts in init, not bind: a prepared statement binds once and
// may execute many times, and each execution must see a fresh plan.

// register registers the table function and the replacement scan.
func (e *Engine) register() error {
	var c bindings.Connection
	if bindings.Connect(e.db, &c) == bindings.StateError {
		return errors.New("duck: connect")
	}
	defer bindings.Disconnect(&c)

	tf := bindings.CreateTableFunction()
	defer bindings.DestroyTableFunction(&tf)
	bindings.TableFunctionSetName(tf, scanFunctionName)
	varchar := bindings.CreateLogicalType(bindings.TypeVarchar)
	bindings.TableFunctionAddParameter(tf, varchar)
	bindings.TableFunctionAddParameter(tf, varchar)
	bindings.DestroyLogicalType(&varchar)
	bindings.TableFunctionSetExtraInfo(tf, newHandle(e), deleteCallback)
	bindings.TableFunctionSetBind(tf, unsafe.Pointer(C.lsTableBind))
	bindings.TableFunctionSetInit(tf, unsafe.Pointer(C.lsTableInit))
	bindings.TableFunctionSetLocalInit(tf, unsafe.Pointer(C.lsTableLocalInit))
	bindings.TableFunctionSetFunction(tf, unsafe.Pointer(C.lsTableFunc))
	bindings.TableFunctionSupportsProjectionPushdown(tf, true)
	if bindings.RegisterTableFunction(c, tf) == bindings.StateError {
		return errors.New("duck: register table function")
	}
	bindings.AddReplacementScan(e.db, unsafe.Pointer(C.lsReplacementScan), newHandle(e), deleteCallback)
	return nil
}

// bindData is what bind learned about one table reference.
type bindData struct {
	e      *Engine
	qs     *queryState
	table  scan.Table
	schema *arrow.Schema
	// filters are the WHERE conjuncts pushed into every scan of this
	// reference (filters.go).
	filters []scan.Filter
}

// rowIDColumn is the column index DuckDB uses for its virtual row id (it
// asks for it when a query needs rows but no columns, as count(*) does).
const rowIDColumn = ^uint64(0)

//export lsTableBind
func lsTableBind(p unsafe.Pointer) {
	info := bindings.BindInfo{Ptr: p}
	e := handleValue[*Engine](bindings.BindGetExtraInfo(info))

	var cc bindings.ClientContext
	bindings.TableFunctionGetClientContext(info, &cc)
	qs := e.query(uint64(bindings.ClientContextGetConnectionId(cc)))
	bindings.DestroyClientContext(&cc)

	db, okDB := bindVarchar(info, 0)
	name, okName := bindVarchar(info, 1)
	var bd *bindData
	var err error = badArgument(scanFunctionName + " takes two strings, the database and the table name, not NULL")
	if okDB && okName {
		bd, err = e.bindTable(qs, db, name)
	}
	if err != nil {
		qs.setErr(err)
		bindings.BindSetError(info, err.Error())
		return
	}
	for _, f := range bd.schema.Fields() {
		lt, err := logicalType(f.Type)
		if err != nil {
			err = fmt.Errorf("table %s column %q: %w", bd.table.Name(), f.Name, err)
			qs.setErr(err)
			bindings.BindSetError(info, err.Error())
			return
		}
		bindings.BindAddResultColumn(info, f.Name, lt)
		bindings.DestroyLogicalType(&lt)
	}
	// A row estimate lets DuckDB's optimizer plan joins (build sides, ASOF
	// strategy) as it would for a native table; without it every
	// Lakestream table looks like one row.
	if est, ok := bd.table.(interface{ EstimatedRows() int64 }); ok {
		bindings.BindSetCardinality(info, bindings.IdxT(max(0, est.EstimatedRows())), false)
	}
	bindings.BindSetBindData(info, newHandle(bd), deleteCallback)
}

// badArgument is a bad argument of lakestream_scan; it is ErrNotQuery for
// errors.Is, so that callers map it as the client's mistake.
type badArgument string

func (e badArgument) Error() string        { return string(e) }
func (e badArgument) Is(target error) bool { return target == ErrNotQuery }

// bindVarchar reads parameter i; false if it is NULL. DuckDB's
// GetVarchar of a NULL throws a C++ exception, which across cgo aborts
// the process: lakestream_scan(NULL, NULL) written by a client must not.
func bindVarchar(info bindings.BindInfo, i int) (string, bool) {
	v := bindings.BindGetParameter(info, bindings.IdxT(i))
	defer bindings.DestroyValue(&v)
	if bindings.IsNullValue(v) {
		return "", false
	}
	return bindings.GetVarchar(v), true
}

func (e *Engine) bindTable(qs *queryState, db, name string) (*bindData, error) {
	if db == "" {
		if err := qs.checkBare(name); err != nil {
			return nil, err
		}
	}
	t, err := e.res.Table(qs.ctx, db, name)
	if err != nil {
		return nil, err // the resolver's error names the table
	}
	s := t.Schema()
	if s == nil || s.NumFields() == 0 {
		return nil, fmt.Errorf("table %s has no columns", t.Name())
	}
	return &bindData{e: e, qs: qs, table: t, schema: s, filters: qs.filters(db, name, s)}, nil
}

// scanState is the init data of one scan: the readers and the mapping of
// record columns to output vectors.
type scanState struct {
	bd *bindData
	sc *scanner
	// outCols[i] is the record column written to output vector i, or -1
	// for DuckDB's row id, which nothing reads.
	outCols []int
	writers []colWriter
	// types are the record column types the writers were built for.
	types []arrow.DataType
	// threads is how many DuckDB threads may call the function at once.
	// Not bounded by the number of parts: threads take records (morsels,
	// scanner.go) from one channel, so even a single part's records are
	// copied and processed in parallel.
	threads int
}

func (s *scanState) destroy() { s.sc.stop() }

//export lsTableInit
func lsTableInit(p unsafe.Pointer) {
	info := bindings.InitInfo{Ptr: p}
	bd := handleValue[*bindData](bindings.InitGetBindData(info))
	st, err := bd.startScan(info)
	if err != nil {
		bd.qs.setErr(err)
		bindings.InitSetError(info, err.Error())
		return
	}
	bindings.InitSetInitData(info, newHandle(st), deleteCallback)
	bindings.InitSetMaxThreads(info, bindings.IdxT(st.threads))
}

// startScan plans the scan of the projected columns and starts the readers.
func (bd *bindData) startScan(info bindings.InitInfo) (*scanState, error) {
	st := &scanState{bd: bd}
	var cols []int
	for i := range int(bindings.InitGetColumnCount(info)) {
		c := uint64(bindings.InitGetColumnIndex(info, bindings.IdxT(i)))
		if c == rowIDColumn {
			st.outCols = append(st.outCols, -1)
			continue
		}
		if c >= uint64(bd.schema.NumFields()) {
			return nil, fmt.Errorf("scan %s: column index %d out of range", bd.table.Name(), c)
		}
		st.outCols = append(st.outCols, len(cols))
		cols = append(cols, int(c))
	}
	if len(cols) == 0 {
		// Only row counts are needed, but a scan must return a column.
		cols = []int{narrowestColumn(bd.schema)}
	}
	for _, c := range cols {
		t := bd.schema.Field(c).Type
		w, err := newColWriter(t)
		if err != nil {
			return nil, fmt.Errorf("scan %s column %q: %w", bd.table.Name(), bd.schema.Field(c).Name, err)
		}
		st.writers = append(st.writers, w)
		st.types = append(st.types, t)
	}
	plan, err := bd.table.Plan(bd.qs.ctx, scan.Request{Columns: cols, Filters: bd.filters})
	if err != nil {
		return nil, fmt.Errorf("plan scan of %s: %w", bd.table.Name(), err)
	}
	parts := plan.Parts()
	st.threads = max(1, bd.e.opts.Threads)
	st.sc = startScan(bd.qs.ctx, parts, bd.e.opts.Threads, 2*bd.e.opts.Threads)
	return st, nil
}

// narrowestColumn picks the cheapest column to read when a query needs
// only row counts: the first fixed-width column, else the first.
func narrowestColumn(s *arrow.Schema) int {
	for i, f := range s.Fields() {
		if _, ok := f.Type.(arrow.FixedWidthDataType); ok {
			return i
		}
	}
	return 0
}

// localScan is the state of one DuckDB thread: the record it is copying.
type localScan struct {
	rec arrow.RecordBatch
	off int
}

func (l *localScan) destroy() {
	if l.rec != nil {
		l.rec.Release()
		l.rec = nil
	}
}

//export lsTableLocalInit
func lsTableLocalInit(p unsafe.Pointer) {
	info := bindings.InitInfo{Ptr: p}
	bindings.InitSetInitData(info, newHandle(&localScan{}), deleteCallback)
}

//export lsTableFunc
func lsTableFunc(p, output unsafe.Pointer) {
	info := bindings.FunctionInfo{Ptr: p}
	st := handleValue[*scanState](bindings.FunctionGetInitData(info))
	ls := handleValue[*localScan](bindings.FunctionGetLocalInitData(info))
	out := bindings.DataChunk{Ptr: output}
	n, err := st.fill(ls, out)
	if err != nil {
		st.bd.qs.setErr(err)
		bindings.FunctionSetError(info, err.Error())
		return
	}
	bindings.DataChunkSetSize(out, bindings.IdxT(n))
}

// fill copies records into out until it is full, the scan ends, or (once
// out has rows) no record is ready: a partly filled chunk now beats a full
// one later for LIMIT queries and streaming sources.
func (st *scanState) fill(ls *localScan, out bindings.DataChunk) (int, error) {
	capacity := int(bindings.VectorSize())
	vecs := make([]bindings.Vector, len(st.outCols))
	for i := range vecs {
		vecs[i] = bindings.DataChunkGetVector(out, bindings.IdxT(i))
	}
	n := 0
	for n < capacity {
		if ls.rec == nil {
			rec, err := st.sc.next(n == 0)
			if err != nil {
				return 0, fmt.Errorf("scan %s: %w", st.bd.table.Name(), err)
			}
			if rec == nil {
				break
			}
			if err := st.check(rec); err != nil {
				rec.Release()
				return 0, err
			}
			ls.rec, ls.off = rec, 0
		}
		take := min(capacity-n, int(ls.rec.NumRows())-ls.off)
		for i, c := range st.outCols {
			if c < 0 {
				continue
			}
			if err := st.writers[c](vecs[i], n, ls.rec.Column(c), ls.off, take); err != nil {
				return 0, fmt.Errorf("scan %s column %d: %w", st.bd.table.Name(), c, err)
			}
		}
		n += take
		ls.off += take
		if ls.off == int(ls.rec.NumRows()) {
			ls.rec.Release()
			ls.rec = nil
		}
	}
	return n, nil
}

// check verifies that a record has the columns the scan asked for.
func (st *scanState) check(rec arrow.RecordBatch) error {
	if int(rec.NumCols()) != len(st.types) {
		return fmt.Errorf("scan %s: record has %d columns, want %d", st.bd.table.Name(), rec.NumCols(), len(st.types))
	}
	for i, t := range st.types {
		if !arrow.TypeEqual(rec.Column(i).DataType(), t) {
			return fmt.Errorf("scan %s: record column %d is %s, want %s (schema changed during the query?)",
				st.bd.table.Name(), i, rec.Column(i).DataType(), t)
		}
	}
	return nil
}
