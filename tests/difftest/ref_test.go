package difftest

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unsafe"

	bindings "github.com/duckdb/duckdb-go-bindings"
)

// The reference: a plain in-memory DuckDB holding the same rows in native
// tables, queried through the C API bindings.
//
// Why the bindings and not database/sql with duckdb-go/v2: that driver is
// not a dependency of the module (go.mod requires only the bindings, the
// library the engine itself links), and this package must not change
// go.mod. The bindings give the same DuckDB build; results are read from
// DuckDB's vectors directly (readers below), not through the Arrow export
// the engine uses, so the two sides share no conversion code.

// refDB is the reference database with one connection; queries are
// serialised on it.
type refDB struct {
	mu   sync.Mutex
	db   bindings.Database
	conn bindings.Connection
}

func openRef() (*refDB, error) {
	r := &refDB{}
	var cfg bindings.Config
	if bindings.CreateConfig(&cfg) == bindings.StateError {
		return nil, errors.New("reference: create config")
	}
	defer bindings.DestroyConfig(&cfg)
	var msg string
	if bindings.OpenExt(":memory:", &r.db, cfg, &msg) == bindings.StateError {
		return nil, fmt.Errorf("reference: open: %s", msg)
	}
	if bindings.Connect(r.db, &r.conn) == bindings.StateError {
		bindings.Close(&r.db)
		return nil, errors.New("reference: connect")
	}
	// The engine runs with TimeZone=UTC (planner/duck/engine.go): the
	// reference must too, or TIMESTAMPTZ functions depend on the host.
	if err := r.exec("SET TimeZone = 'UTC'"); err != nil {
		r.close()
		return nil, err
	}
	return r, nil
}

func (r *refDB) close() {
	bindings.Disconnect(&r.conn)
	bindings.Close(&r.db)
}

// exec runs statements that return nothing of interest.
func (r *refDB) exec(stmts ...string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, sql := range stmts {
		if err := execLocked(r.conn, sql); err != nil {
			return err
		}
	}
	return nil
}

// query runs one statement with positional arguments and reads the whole
// result.
func (r *refDB) query(sql string, args []any) (*result, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var stmt bindings.PreparedStatement
	if bindings.Prepare(r.conn, sql, &stmt) == bindings.StateError {
		msg := bindings.PrepareError(stmt)
		bindings.DestroyPrepare(&stmt)
		return nil, fmt.Errorf("reference: prepare: %s", msg)
	}
	defer bindings.DestroyPrepare(&stmt)
	if n := int(bindings.NParams(stmt)); n != len(args) {
		return nil, fmt.Errorf("reference: statement has %d parameters, got %d arguments", n, len(args))
	}
	for i, a := range args {
		if err := bindArg(stmt, i+1, a); err != nil {
			return nil, err
		}
	}
	var res bindings.Result
	if bindings.ExecutePrepared(stmt, &res) == bindings.StateError {
		msg := bindings.ResultError(&res)
		bindings.DestroyResult(&res)
		return nil, fmt.Errorf("reference: %s", msg)
	}
	defer bindings.DestroyResult(&res)
	return readResult(&res)
}

// bindArg binds a corpus argument the way the engine's bindArgs does for the
// same Go types (planner/duck/params.go).
func bindArg(stmt bindings.PreparedStatement, i int, a any) error {
	idx := bindings.IdxT(i)
	var state bindings.State
	switch v := a.(type) {
	case nil:
		state = bindings.BindNull(stmt, idx)
	case bool:
		state = bindings.BindBoolean(stmt, idx, v)
	case int64:
		state = bindings.BindInt64(stmt, idx, v)
	case float64:
		state = bindings.BindDouble(stmt, idx, v)
	case string:
		state = bindings.BindVarchar(stmt, idx, v)
	case time.Time:
		ts := bindings.NewTimestamp(v.UnixMicro())
		if bindings.ParamType(stmt, idx) == bindings.TypeTimestamp {
			state = bindings.BindTimestamp(stmt, idx, ts)
		} else {
			state = bindings.BindTimestampTZ(stmt, idx, ts)
		}
	default:
		return fmt.Errorf("reference: parameter %d: unsupported %T", i, a)
	}
	if state == bindings.StateError {
		return fmt.Errorf("reference: parameter %d: cannot bind %T", i, a)
	}
	return nil
}

func readResult(res *bindings.Result) (*result, error) {
	n := int(bindings.ColumnCount(res))
	out := &result{}
	readers := make([]*vecReader, n)
	for i := range n {
		out.names = append(out.names, bindings.ColumnName(res, bindings.IdxT(i)))
		lt := bindings.ColumnLogicalType(res, bindings.IdxT(i))
		rd, err := newVecReader(lt)
		bindings.DestroyLogicalType(&lt)
		if err != nil {
			return nil, fmt.Errorf("reference: column %q: %w", out.names[i], err)
		}
		readers[i] = rd
		out.types = append(out.types, rd.name)
	}
	for {
		chunk := bindings.FetchChunk(*res)
		if chunk.Ptr == nil {
			break
		}
		size := int(bindings.DataChunkGetSize(chunk))
		vecs := make([]bindings.Vector, n)
		for i := range vecs {
			vecs[i] = bindings.DataChunkGetVector(chunk, bindings.IdxT(i))
			readers[i].reset()
		}
		for row := range size {
			vals := make([]any, n)
			for i, rd := range readers {
				vals[i] = rd.read(vecs[i], row)
			}
			out.addRow(vals)
		}
		bindings.DestroyDataChunk(&chunk)
		if size == 0 {
			break
		}
	}
	if msg := bindings.ResultError(res); msg != "" {
		return nil, fmt.Errorf("reference: %s", msg)
	}
	return out, nil
}

// vecReader reads one row of a DuckDB vector of one logical type into the
// canonical Go values (result_test.go).
type vecReader struct {
	id     bindings.Type
	name   string // type name after DuckDB's Arrow mapping
	scale  int    // DECIMAL
	phys   bindings.Type
	child  *vecReader   // LIST, ARRAY, MAP (its STRUCT(key, value))
	size   int          // ARRAY
	fields []*vecReader // STRUCT
	names  []string     // STRUCT field names

	// The vector last read, its data and validity mask: each is a cgo
	// call to get, so they are fetched once per vector (reset per chunk,
	// as DuckDB may reuse a freed vector's address).
	vec        unsafe.Pointer
	data, mask unsafe.Pointer
	child2     bindings.Vector // LIST, MAP, ARRAY: the child vector
}

// reset forgets the cached vector before a new chunk.
func (r *vecReader) reset() {
	r.vec = nil
	if r.child != nil {
		r.child.reset()
	}
	for _, f := range r.fields {
		f.reset()
	}
}

func (r *vecReader) load(vec bindings.Vector) {
	if r.vec == vec.Ptr {
		return
	}
	r.vec, r.data, r.mask = vec.Ptr, bindings.VectorGetData(vec), bindings.VectorGetValidity(vec)
	switch r.id {
	case bindings.TypeList, bindings.TypeMap:
		r.child2 = bindings.ListVectorGetChild(vec)
	case bindings.TypeArray:
		r.child2 = bindings.ArrayVectorGetChild(vec)
	}
}

func (r *vecReader) valid(row int) bool {
	if r.mask == nil {
		return true
	}
	return at[uint64](r.mask, row/64)&(1<<(row%64)) != 0
}

func newVecReader(lt bindings.LogicalType) (*vecReader, error) {
	id := bindings.GetTypeId(lt)
	r := &vecReader{id: id}
	if name, ok := refScalarNames[id]; ok {
		r.name = name
		return r, nil
	}
	switch id {
	case bindings.TypeDecimal:
		w, s := bindings.DecimalWidth(lt), bindings.DecimalScale(lt)
		r.scale, r.phys = int(s), bindings.DecimalInternalType(lt)
		r.name = fmt.Sprintf("DECIMAL(%d,%d)", w, s)
	case bindings.TypeList, bindings.TypeMap:
		var child bindings.LogicalType
		if id == bindings.TypeList {
			child = bindings.ListTypeChildType(lt)
		} else {
			child = mapEntryType(lt)
		}
		c, err := newVecReader(child)
		bindings.DestroyLogicalType(&child)
		if err != nil {
			return nil, err
		}
		r.child = c
		if id == bindings.TypeList {
			r.name = c.name + "[]"
		} else {
			r.name = fmt.Sprintf("MAP(%s, %s)", c.fields[0].name, c.fields[1].name)
		}
	case bindings.TypeArray:
		child := bindings.ArrayTypeChildType(lt)
		c, err := newVecReader(child)
		bindings.DestroyLogicalType(&child)
		if err != nil {
			return nil, err
		}
		r.child, r.size = c, int(bindings.ArrayTypeArraySize(lt))
		r.name = fmt.Sprintf("%s[%d]", c.name, r.size)
	case bindings.TypeStruct:
		var parts []string
		for i := range int(bindings.StructTypeChildCount(lt)) {
			ct := bindings.StructTypeChildType(lt, bindings.IdxT(i))
			c, err := newVecReader(ct)
			bindings.DestroyLogicalType(&ct)
			if err != nil {
				return nil, err
			}
			n := bindings.StructTypeChildName(lt, bindings.IdxT(i))
			r.fields, r.names = append(r.fields, c), append(r.names, n)
			parts = append(parts, fmt.Sprintf("%q %s", n, c.name))
		}
		r.name = "STRUCT(" + strings.Join(parts, ", ") + ")"
	default:
		return nil, fmt.Errorf("reference type id %d not supported by the comparer", id)
	}
	return r, nil
}

// mapEntryType is a MAP's physical child type, STRUCT(key K, value V).
func mapEntryType(lt bindings.LogicalType) bindings.LogicalType {
	k, v := bindings.MapTypeKeyType(lt), bindings.MapTypeValueType(lt)
	defer bindings.DestroyLogicalType(&k)
	defer bindings.DestroyLogicalType(&v)
	return bindings.CreateStructType([]bindings.LogicalType{k, v}, []string{"key", "value"})
}

// refScalarNames names the parameterless types as they come out of DuckDB's
// Arrow export: HUGEINT is exported as decimal128(38,0), UUID as utf8
// (planner/duck/result.go).
var refScalarNames = map[bindings.Type]string{
	bindings.TypeBoolean: "BOOLEAN", bindings.TypeTinyInt: "TINYINT", bindings.TypeSmallInt: "SMALLINT",
	bindings.TypeInteger: "INTEGER", bindings.TypeBigInt: "BIGINT", bindings.TypeUTinyInt: "UTINYINT",
	bindings.TypeUSmallInt: "USMALLINT", bindings.TypeUInteger: "UINTEGER", bindings.TypeUBigInt: "UBIGINT",
	bindings.TypeHugeInt: "DECIMAL(38,0)", bindings.TypeFloat: "FLOAT", bindings.TypeDouble: "DOUBLE",
	bindings.TypeVarchar: "VARCHAR", bindings.TypeBlob: "BLOB", bindings.TypeDate: "DATE",
	bindings.TypeTime: "TIME", bindings.TypeTimestamp: "TIMESTAMP", bindings.TypeTimestampTZ: "TIMESTAMPTZ",
	bindings.TypeTimestampS: "TIMESTAMP_S", bindings.TypeTimestampMS: "TIMESTAMP_MS",
	bindings.TypeTimestampNS: "TIMESTAMP_NS", bindings.TypeInterval: "INTERVAL",
	bindings.TypeSQLNull: "NULL", bindings.TypeUUID: "VARCHAR",
}

func (r *vecReader) read(vec bindings.Vector, row int) any {
	r.load(vec)
	if !r.valid(row) {
		return nil
	}
	data := r.data
	switch r.id {
	case bindings.TypeStruct:
		sv := structVal{names: r.names, vals: make([]any, len(r.fields))}
		for i, f := range r.fields {
			sv.vals[i] = f.read(bindings.StructVectorGetChild(vec, bindings.IdxT(i)), row)
		}
		return sv
	case bindings.TypeList, bindings.TypeMap:
		e := at[[2]uint64](data, row)
		if r.id == bindings.TypeMap {
			m := mapVal{}
			for i := range int(e[1]) {
				kv := r.child.read(r.child2, int(e[0])+i).(structVal)
				m.keys, m.vals = append(m.keys, kv.vals[0]), append(m.vals, kv.vals[1])
			}
			return m
		}
		list := make([]any, int(e[1]))
		for i := range list {
			list[i] = r.child.read(r.child2, int(e[0])+i)
		}
		return list
	case bindings.TypeArray:
		list := make([]any, r.size)
		for i := range list {
			list[i] = r.child.read(r.child2, row*r.size+i)
		}
		return list
	case bindings.TypeDecimal:
		hi, lo := readInt128(r.phys, data, row)
		return decVal{hi: hi, lo: lo, scale: r.scale}
	}
	return readScalar(r.id, data, row)
}

func at[T any](data unsafe.Pointer, row int) T {
	var zero T
	return *(*T)(unsafe.Add(data, int(unsafe.Sizeof(zero))*row))
}

func readScalar(id bindings.Type, data unsafe.Pointer, row int) any {
	switch id {
	case bindings.TypeBoolean:
		return at[byte](data, row) != 0
	case bindings.TypeFloat:
		return float64(at[float32](data, row))
	case bindings.TypeDouble:
		return at[float64](data, row)
	case bindings.TypeVarchar:
		return string(stringAt(data, row))
	case bindings.TypeBlob:
		return stringAt(data, row)
	case bindings.TypeDate:
		return dateVal(at[int32](data, row))
	case bindings.TypeTime:
		return timeVal(at[int64](data, row))
	case bindings.TypeTimestamp, bindings.TypeTimestampTZ:
		return tsFrom(at[int64](data, row), 1_000_000)
	case bindings.TypeTimestampS:
		return tsFrom(at[int64](data, row), 1)
	case bindings.TypeTimestampMS:
		return tsFrom(at[int64](data, row), 1_000)
	case bindings.TypeTimestampNS:
		return tsFrom(at[int64](data, row), 1_000_000_000)
	case bindings.TypeInterval:
		iv := at[struct {
			months, days int32
			micros       int64
		}](data, row)
		return intervalVal{months: iv.months, days: iv.days, nanos: iv.micros * 1000}
	case bindings.TypeUUID:
		// DuckDB stores a UUID as a hugeint with the top bit flipped.
		v := at[[2]uint64](data, row)
		hi := v[1] ^ (1 << 63)
		return fmt.Sprintf("%08x-%04x-%04x-%04x-%012x", hi>>32, (hi>>16)&0xffff, hi&0xffff, v[0]>>48, v[0]&0xffffffffffff)
	case bindings.TypeSQLNull:
		return nil
	}
	return readInt(id, data, row)
}

func readInt(id bindings.Type, data unsafe.Pointer, row int) any {
	switch id {
	case bindings.TypeUTinyInt:
		return uintOf(uint64(at[uint8](data, row)))
	case bindings.TypeUSmallInt:
		return uintOf(uint64(at[uint16](data, row)))
	case bindings.TypeUInteger:
		return uintOf(uint64(at[uint32](data, row)))
	case bindings.TypeUBigInt:
		return uintOf(at[uint64](data, row))
	}
	return int128Of(readInt128(id, data, row))
}

// readInt128 reads a signed integer of any width as (hi, lo).
func readInt128(id bindings.Type, data unsafe.Pointer, row int) (int64, uint64) {
	var v int64
	switch id {
	case bindings.TypeTinyInt:
		v = int64(at[int8](data, row))
	case bindings.TypeSmallInt:
		v = int64(at[int16](data, row))
	case bindings.TypeInteger:
		v = int64(at[int32](data, row))
	case bindings.TypeBigInt:
		v = at[int64](data, row)
	case bindings.TypeHugeInt:
		w := at[[2]uint64](data, row) // lower, upper
		return int64(w[1]), w[0]
	default:
		panic(fmt.Sprintf("difftest: reference type id %d has no reader", id))
	}
	return v >> 63, uint64(v)
}

// stringAt reads a duckdb_string_t: a uint32 length, then the bytes inline
// (length ≤ 12) or a 4-byte prefix and a pointer. The bytes are copied.
func stringAt(data unsafe.Pointer, row int) []byte {
	p := unsafe.Add(data, 16*row)
	n := *(*uint32)(p)
	if n <= 12 {
		return append([]byte{}, unsafe.Slice((*byte)(unsafe.Add(p, 4)), n)...)
	}
	ptr := *(*unsafe.Pointer)(unsafe.Add(p, 8))
	return append([]byte{}, unsafe.Slice((*byte)(ptr), n)...)
}
