package duck

/*
#include "cabi.h"
*/
import "C"

import (
	"fmt"
	"strconv"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/cdata"
	bindings "github.com/duckdb/duckdb-go-bindings"
)

// Result and parameter schemas, in DuckDB's Arrow mapping (see result.go).

// resultSchema is the Arrow schema of an executed result.
func resultSchema(opts bindings.ArrowOptions, res *bindings.Result) (*arrow.Schema, error) {
	n := int(bindings.ColumnCount(res))
	types := make([]bindings.LogicalType, n)
	names := make([]string, n)
	for i := range n {
		types[i] = bindings.ColumnLogicalType(res, bindings.IdxT(i))
		names[i] = bindings.ColumnName(res, bindings.IdxT(i))
	}
	defer destroyTypes(types)
	return arrowSchema(opts, types, names)
}

// preparedSchema is the Arrow schema a prepared statement will return, nil
// when it is not known before the parameters are bound: when a result type
// depends on a parameter's (SELECT ? AS p), DuckDB reports a single column
// of unknown type.
func preparedSchema(opts bindings.ArrowOptions, stmt bindings.PreparedStatement) (*arrow.Schema, error) {
	n := int(bindings.PreparedStatementColumnCount(stmt))
	fields := make([]arrow.Field, n)
	for i := range n {
		lt := bindings.PreparedStatementColumnLogicalType(stmt, bindings.IdxT(i))
		if lt.Ptr == nil || bindings.GetTypeId(lt) == bindings.TypeInvalid {
			bindings.DestroyLogicalType(&lt)
			return nil, nil
		}
		name := bindings.PreparedStatementColumnName(stmt, bindings.IdxT(i))
		f, err := arrowField(opts, lt, name)
		bindings.DestroyLogicalType(&lt)
		if err != nil {
			return nil, err
		}
		fields[i] = f
	}
	return arrow.NewSchema(fields, nil), nil
}

// paramSchema is the Arrow schema of a prepared statement's parameters:
// fields "1", "2", ... with the type DuckDB inferred, or null.
func paramSchema(opts bindings.ArrowOptions, stmt bindings.PreparedStatement) (*arrow.Schema, error) {
	n := int(bindings.NParams(stmt))
	fields := make([]arrow.Field, n)
	for i := range n {
		lt := bindings.ParamLogicalType(stmt, bindings.IdxT(i+1))
		f, err := arrowField(opts, lt, strconv.Itoa(i+1))
		bindings.DestroyLogicalType(&lt)
		if err != nil {
			return nil, err
		}
		fields[i] = f
	}
	return arrow.NewSchema(fields, nil), nil
}

// arrowField converts one DuckDB type, mapping the types that are not yet
// known (parameters without inferred type) to Arrow null.
func arrowField(opts bindings.ArrowOptions, lt bindings.LogicalType, name string) (arrow.Field, error) {
	if lt.Ptr == nil {
		return arrow.Field{Name: name, Type: arrow.Null, Nullable: true}, nil
	}
	switch bindings.GetTypeId(lt) {
	case bindings.TypeInvalid, bindings.TypeAny, bindings.TypeSQLNull, bindings.TypeStringLiteral,
		bindings.TypeIntegerLiteral:
		return arrow.Field{Name: name, Type: arrow.Null, Nullable: true}, nil
	}
	s, err := arrowSchema(opts, []bindings.LogicalType{lt}, []string{name})
	if err != nil {
		return arrow.Field{}, err
	}
	return s.Field(0), nil
}

// arrowSchema runs DuckDB's own type export (duckdb_to_arrow_schema), so
// that schemas match the arrays duckdb_data_chunk_to_arrow produces.
func arrowSchema(opts bindings.ArrowOptions, types []bindings.LogicalType, names []string) (*arrow.Schema, error) {
	n := len(types)
	ptrSize := C.size_t(unsafe.Sizeof(uintptr(0)))
	cTypes := (*[1 << 20]unsafe.Pointer)(C.calloc(C.size_t(max(n, 1)), ptrSize))
	cNames := (*[1 << 20]*C.char)(C.calloc(C.size_t(max(n, 1)), ptrSize))
	defer func() {
		for i := range n {
			C.free(unsafe.Pointer(cNames[i]))
		}
		C.free(unsafe.Pointer(cNames))
		C.free(unsafe.Pointer(cTypes))
	}()
	for i := range n {
		cTypes[i] = types[i].Ptr
		cNames[i] = C.CString(names[i])
	}
	cs := (*C.struct_ArrowSchema)(C.calloc(1, C.sizeof_struct_ArrowSchema))
	defer C.free(unsafe.Pointer(cs))
	defer C.ls_release_schema(cs)
	ed := C.duckdb_to_arrow_schema(opts.Ptr, &cTypes[0], &cNames[0], C.uint64_t(n), cs)
	if err := errorData(ed); err != nil {
		return nil, fmt.Errorf("duck: export schema to arrow: %w", err)
	}
	s, err := cdata.ImportCArrowSchema((*cdata.CArrowSchema)(unsafe.Pointer(cs)))
	if err != nil {
		return nil, fmt.Errorf("duck: import arrow schema: %w", err)
	}
	return s, nil
}

func destroyTypes(types []bindings.LogicalType) {
	for i := range types {
		bindings.DestroyLogicalType(&types[i])
	}
}
