package difftest

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	bindings "github.com/duckdb/duckdb-go-bindings"
)

// Loading the reference: the same DDL without the WITH clause, then
// multi-row INSERT statements with bound values, in one transaction.

const refRowsPerInsert = 100

func loadRef(r *refDB, t *tableSpec, schema *arrow.Schema) error {
	if err := r.exec(t.ddl(false)); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := execLocked(r.conn, "BEGIN TRANSACTION"); err != nil {
		return err
	}
	// One prepared statement for the full batches, one for the rest:
	// preparing a statement with a thousand parameters costs more than
	// running it.
	stmts := make(map[int]*bindings.PreparedStatement)
	defer func() {
		for _, st := range stmts {
			bindings.DestroyPrepare(st)
		}
	}()
	for start := 0; start < len(t.rows); start += refRowsPerInsert {
		rows := t.rows[start:min(len(t.rows), start+refRowsPerInsert)]
		st, ok := stmts[len(rows)]
		if !ok {
			var err error
			if st, err = prepareInsert(r.conn, t, len(rows)); err != nil {
				execLocked(r.conn, "ROLLBACK")
				return err
			}
			stmts[len(rows)] = st
		}
		if err := insertRows(*st, t, schema, rows); err != nil {
			execLocked(r.conn, "ROLLBACK")
			return fmt.Errorf("reference: insert into %s: %w", t.name, err)
		}
	}
	return execLocked(r.conn, "COMMIT")
}

func execLocked(c bindings.Connection, sql string) error {
	var res bindings.Result
	state := bindings.Query(c, sql, &res)
	msg := bindings.ResultError(&res)
	bindings.DestroyResult(&res)
	if state == bindings.StateError {
		return fmt.Errorf("reference: %s: %s", sql, msg)
	}
	return nil
}

// prepareInsert prepares INSERT INTO t VALUES (?, ...), ... for n rows.
func prepareInsert(c bindings.Connection, t *tableSpec, n int) (*bindings.PreparedStatement, error) {
	tuple := "(" + strings.TrimSuffix(strings.Repeat("?, ", len(t.cols)), ", ") + ")"
	tuples := strings.TrimSuffix(strings.Repeat(tuple+", ", n), ", ")
	var stmt bindings.PreparedStatement
	if bindings.Prepare(c, "INSERT INTO "+t.ref()+" VALUES "+tuples, &stmt) == bindings.StateError {
		msg := bindings.PrepareError(stmt)
		bindings.DestroyPrepare(&stmt)
		return nil, fmt.Errorf("reference: prepare insert into %s: %s", t.name, msg)
	}
	return &stmt, nil
}

func insertRows(stmt bindings.PreparedStatement, t *tableSpec, schema *arrow.Schema, rows [][]any) error {
	idx := 1
	for _, row := range rows {
		for i, v := range row {
			val, err := refValue(schema.Field(i).Type, v)
			if err != nil {
				return fmt.Errorf("column %q: %w", t.cols[i].name, err)
			}
			state := bindings.BindValue(stmt, bindings.IdxT(idx), val)
			bindings.DestroyValue(&val)
			if state == bindings.StateError {
				return fmt.Errorf("column %q: cannot bind %v", t.cols[i].name, v)
			}
			idx++
		}
	}
	var res bindings.Result
	state := bindings.ExecutePrepared(stmt, &res)
	msg := bindings.ResultError(&res)
	bindings.DestroyResult(&res)
	if state == bindings.StateError {
		return fmt.Errorf("execute: %s", msg)
	}
	return nil
}

// refValue makes a DuckDB value of a data-set value. The caller destroys
// it. A dispatcher on the Arrow type of the column.
func refValue(dt arrow.DataType, v any) (bindings.Value, error) {
	if v == nil {
		return bindings.CreateNullValue(), nil
	}
	switch dt := dt.(type) {
	case *arrow.BooleanType:
		return bindings.CreateBool(v.(bool)), nil
	case *arrow.Int8Type:
		return bindings.CreateInt8(v.(int8)), nil
	case *arrow.Int16Type:
		return bindings.CreateInt16(v.(int16)), nil
	case *arrow.Int32Type:
		return bindings.CreateInt32(v.(int32)), nil
	case *arrow.Int64Type:
		return bindings.CreateInt64(v.(int64)), nil
	case *arrow.Float32Type:
		return bindings.CreateFloat(v.(float32)), nil
	case *arrow.Float64Type:
		return bindings.CreateDouble(v.(float64)), nil
	case *arrow.Decimal128Type:
		n := v.(decimal128.Num)
		hi := bindings.NewHugeInt(n.LowBits(), n.HighBits())
		return bindings.CreateDecimal(bindings.NewDecimal(uint8(dt.Precision), uint8(dt.Scale), hi)), nil
	case *arrow.StringType:
		return bindings.CreateVarchar(v.(string)), nil
	case *arrow.BinaryType:
		return bindings.CreateBlob(v.([]byte)), nil
	case *arrow.Date32Type:
		return bindings.CreateDate(bindings.NewDate(v.(int32))), nil
	case *arrow.Time64Type:
		return bindings.CreateTime(bindings.NewTime(v.(int64))), nil
	case *arrow.TimestampType:
		if dt.TimeZone != "" {
			return bindings.CreateTimestampTZ(bindings.NewTimestamp(v.(int64))), nil
		}
		return bindings.CreateTimestamp(bindings.NewTimestamp(v.(int64))), nil
	case *arrow.MapType:
		return refMap(dt, v.([]kv))
	case *arrow.ListType:
		return refNested(dt, dt.Elem(), v.([]any), bindings.CreateListValue)
	case *arrow.StructType:
		return refStruct(dt, v.([]any))
	}
	return bindings.Value{}, fmt.Errorf("no reference value for %s", dt)
}

func refNested(dt arrow.DataType, elem arrow.DataType, vals []any,
	create func(bindings.LogicalType, []bindings.Value) bindings.Value) (bindings.Value, error) {
	et, err := refLogicalType(elem)
	if err != nil {
		return bindings.Value{}, err
	}
	defer bindings.DestroyLogicalType(&et)
	children, err := refValues(func(int) arrow.DataType { return elem }, vals)
	if err != nil {
		return bindings.Value{}, err
	}
	defer destroyValues(children)
	out := create(et, children)
	if out.Ptr == nil {
		return out, fmt.Errorf("cannot create %s value %v", dt, vals)
	}
	return out, nil
}

func refStruct(dt *arrow.StructType, vals []any) (bindings.Value, error) {
	st, err := refLogicalType(dt)
	if err != nil {
		return bindings.Value{}, err
	}
	defer bindings.DestroyLogicalType(&st)
	children, err := refValues(func(i int) arrow.DataType { return dt.Field(i).Type }, vals)
	if err != nil {
		return bindings.Value{}, err
	}
	defer destroyValues(children)
	out := bindings.CreateStructValue(st, children)
	if out.Ptr == nil {
		return out, fmt.Errorf("cannot create %s value %v", dt, vals)
	}
	return out, nil
}

func refMap(dt *arrow.MapType, entries []kv) (bindings.Value, error) {
	mt, err := refLogicalType(dt)
	if err != nil {
		return bindings.Value{}, err
	}
	defer bindings.DestroyLogicalType(&mt)
	var ks, vs []any
	for _, e := range entries {
		ks, vs = append(ks, e.k), append(vs, e.v)
	}
	keys, err := refValues(func(int) arrow.DataType { return dt.KeyType() }, ks)
	if err != nil {
		return bindings.Value{}, err
	}
	defer destroyValues(keys)
	vals, err := refValues(func(int) arrow.DataType { return dt.ItemType() }, vs)
	if err != nil {
		return bindings.Value{}, err
	}
	defer destroyValues(vals)
	out := bindings.CreateMapValue(mt, keys, vals)
	if out.Ptr == nil {
		return out, fmt.Errorf("cannot create %s value %v", dt, entries)
	}
	return out, nil
}

func refValues(typeOf func(int) arrow.DataType, vals []any) ([]bindings.Value, error) {
	out := make([]bindings.Value, 0, len(vals))
	for i, v := range vals {
		val, err := refValue(typeOf(i), v)
		if err != nil {
			destroyValues(out)
			return nil, err
		}
		out = append(out, val)
	}
	return out, nil
}

func destroyValues(vals []bindings.Value) {
	for i := range vals {
		bindings.DestroyValue(&vals[i])
	}
}

// refLogicalType is the DuckDB type of a column of Arrow type dt (the
// catalog's mapping, docs/sql.md). The caller destroys it.
func refLogicalType(dt arrow.DataType) (bindings.LogicalType, error) {
	simple := map[arrow.Type]bindings.Type{
		arrow.BOOL: bindings.TypeBoolean, arrow.INT8: bindings.TypeTinyInt, arrow.INT16: bindings.TypeSmallInt,
		arrow.INT32: bindings.TypeInteger, arrow.INT64: bindings.TypeBigInt, arrow.FLOAT32: bindings.TypeFloat,
		arrow.FLOAT64: bindings.TypeDouble, arrow.STRING: bindings.TypeVarchar, arrow.BINARY: bindings.TypeBlob,
		arrow.DATE32: bindings.TypeDate, arrow.TIME64: bindings.TypeTime,
	}
	if id, ok := simple[dt.ID()]; ok {
		return bindings.CreateLogicalType(id), nil
	}
	switch dt := dt.(type) {
	case *arrow.TimestampType:
		if dt.TimeZone != "" {
			return bindings.CreateLogicalType(bindings.TypeTimestampTZ), nil
		}
		return bindings.CreateLogicalType(bindings.TypeTimestamp), nil
	case *arrow.Decimal128Type:
		return bindings.CreateDecimalType(uint8(dt.Precision), uint8(dt.Scale)), nil
	case *arrow.MapType:
		k, err := refLogicalType(dt.KeyType())
		if err != nil {
			return bindings.LogicalType{}, err
		}
		defer bindings.DestroyLogicalType(&k)
		v, err := refLogicalType(dt.ItemType())
		if err != nil {
			return bindings.LogicalType{}, err
		}
		defer bindings.DestroyLogicalType(&v)
		return bindings.CreateMapType(k, v), nil
	case *arrow.ListType:
		c, err := refLogicalType(dt.Elem())
		if err != nil {
			return bindings.LogicalType{}, err
		}
		defer bindings.DestroyLogicalType(&c)
		return bindings.CreateListType(c), nil
	case *arrow.StructType:
		var types []bindings.LogicalType
		var names []string
		defer func() {
			for i := range types {
				bindings.DestroyLogicalType(&types[i])
			}
		}()
		for _, f := range dt.Fields() {
			c, err := refLogicalType(f.Type)
			if err != nil {
				return bindings.LogicalType{}, err
			}
			types, names = append(types, c), append(names, f.Name)
		}
		return bindings.CreateStructType(types, names), nil
	}
	return bindings.LogicalType{}, fmt.Errorf("no reference type for %s", dt)
}
