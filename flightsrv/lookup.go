package flightsrv

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/lakestream/lakestream/catalog"
	"github.com/lakestream/lakestream/internal/scan"
	"github.com/lakestream/lakestream/planner"
	"github.com/lakestream/lakestream/tables"
)

// Point lookups: a query of the shape planner.Lookup over a primary-key
// table whose conditions name exactly the key columns is answered by
// Table.Lookup from the key index, without a scan and without the engine;
// one whose conditions name the key's leading columns is a prefix lookup
// (Table.LookupPrefix: a range of the index).
// A prepared lookup bound to N parameter rows is one Lookup of every
// row's keys (a batch lookup): the result holds, in the rows' order, the
// row of each key that exists. Everything else about the query is as the
// engine would answer it; a shape the fast path declines (other types,
// other predicates) runs in the engine with the same result.

// lookupPlan is a lookup resolved against its table.
type lookupPlan struct {
	t   *tables.Table
	def *catalog.Table // t's definition when planned
	// keys are the table's key columns, in key order, each with the
	// values its condition lists.
	keys []lookupKey
	// cols are the selected columns, schema their fields as the table
	// declares them.
	cols   []int
	schema *arrow.Schema
	// params are the parameters' types, by number.
	params []arrow.DataType
	// prefix is set when keys are the key's leading columns only.
	prefix bool
	// schemaMsg is the IPC schema message of the result, encoded once
	// (schemaHeader): a prepared lookup's plan answers many DoGets.
	schemaOnce sync.Once
	schemaMsg  []byte
}

// schemaHeader is the IPC schema message of lp's result.
func (lp *lookupPlan) schemaHeader(mem memory.Allocator) []byte {
	lp.schemaOnce.Do(func() {
		pl := ipc.GetSchemaPayload(lp.schema, mem)
		meta := pl.Meta()
		lp.schemaMsg = bytes.Clone(meta.Bytes())
		meta.Release()
		pl.Release()
	})
	return lp.schemaMsg
}

type lookupKey struct {
	field  arrow.Field
	values []planner.KeyValue
}

// planLookup returns the lookup plan of st, or nil when st is not a
// lookup of a primary-key table that the fast path serves.
func (s *Server) planLookup(ctx context.Context, st *planner.Statement) *lookupPlan {
	l := st.Lookup
	if st.Kind != planner.KindQuery || l == nil {
		return nil
	}
	t, err := s.table(ctx, catalog.PrivSelect, l.DB, l.Table)
	if err != nil || !t.Def().HasPrimaryKey() {
		return nil
	}
	def := t.Def()
	schema := def.ArrowSchema()
	lp := &lookupPlan{t: t, def: def, params: make([]arrow.DataType, l.Params)}
	terms := map[int]planner.KeyTerm{}
	for _, term := range l.Keys {
		c := def.ColumnIndexFold(term.Column)
		if c < 0 {
			return nil
		}
		if _, twice := terms[c]; twice {
			return nil
		}
		terms[c] = term
	}
	if len(terms) > len(def.PrimaryKey) {
		return nil
	}
	// The conditions name the whole key, or its leading columns (a prefix
	// lookup: every key that begins with them).
	lp.prefix = len(terms) < len(def.PrimaryKey)
	for _, k := range def.PrimaryKey[:len(terms)] {
		c := def.ColumnIndex(k)
		term, ok := terms[c]
		if !ok {
			return nil
		}
		f := schema.Field(c)
		if !lookupType(f.Type) {
			return nil
		}
		for _, v := range term.Values {
			if v.Param > 0 {
				if prev := lp.params[v.Param-1]; prev != nil && !arrow.TypeEqual(prev, f.Type) {
					return nil
				}
				lp.params[v.Param-1] = f.Type
			} else if !literalFits(v, f.Type) {
				return nil
			}
		}
		lp.keys = append(lp.keys, lookupKey{field: f, values: term.Values})
	}
	for _, p := range lp.params {
		if p == nil {
			return nil // a $n that no condition uses
		}
	}
	lp.cols = scan.Columns(nil, len(def.Columns))
	if l.Columns != nil {
		lp.cols = make([]int, len(l.Columns))
		for i, name := range l.Columns {
			if lp.cols[i] = def.ColumnIndexFold(name); lp.cols[i] < 0 {
				return nil // the engine reports the unknown column
			}
		}
	}
	if lp.schema, err = scan.ProjectSchema(schema, lp.cols); err != nil {
		return nil
	}
	return lp
}

// paramSchema is the schema of the lookup's parameters, named "1", "2", ...
// as the engine names them.
func (lp *lookupPlan) paramSchema() *arrow.Schema {
	fields := make([]arrow.Field, len(lp.params))
	for i, dt := range lp.params {
		fields[i] = arrow.Field{Name: strconv.Itoa(i + 1), Type: dt, Nullable: true}
	}
	return arrow.NewSchema(fields, nil)
}

// lookupType reports whether keys of type dt are served by the fast path.
func lookupType(dt arrow.DataType) bool {
	switch dt.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64,
		arrow.STRING, arrow.LARGE_STRING, arrow.BINARY, arrow.BOOL, arrow.DATE32, arrow.TIMESTAMP:
		return true
	}
	return false
}

// literalFits reports whether a literal is one the fast path reads for a
// key of type dt: an integer for an integer key, a string for a VARCHAR
// key. Others (a '2026-01-01' for a DATE, 1.0 for an integer) are left to
// the engine's casts.
func literalFits(v planner.KeyValue, dt arrow.DataType) bool {
	switch {
	case v.Kind == planner.TokString:
		return dt.ID() == arrow.STRING || dt.ID() == arrow.LARGE_STRING
	case v.Kind == planner.TokNumber && isInteger(dt):
		_, ok := new(big.Int).SetString(v.Text, 10)
		return ok
	}
	return false
}

func isInteger(dt arrow.DataType) bool {
	switch dt.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64:
		return true
	}
	return false
}

// keyRecord builds the keys to look up: for each execution (a row of
// argRows; one without parameters when argRows is nil) every combination
// of its conditions' values, once each. A NULL or a value out of its key
// column's range matches no row and is left out.
func (lp *lookupPlan) keyRecord(s *Server, argRows [][]any) (arrow.RecordBatch, error) {
	fields := make([]arrow.Field, len(lp.keys))
	for i, k := range lp.keys {
		fields[i] = arrow.Field{Name: k.field.Name, Type: k.field.Type}
	}
	b := array.NewRecordBuilder(s.opts.Mem, arrow.NewSchema(fields, nil))
	defer b.Release()
	if argRows == nil {
		argRows = [][]any{nil}
	}
	for _, args := range argRows {
		if len(args) != len(lp.params) {
			return nil, fmt.Errorf("%w: the lookup has %d parameters, %d bound", errInvalid, len(lp.params), len(args))
		}
		vals := make([][]any, len(lp.keys))
		for i, k := range lp.keys {
			for _, kv := range k.values {
				v, ok, err := keyValue(kv, args, k.field)
				if err != nil {
					return nil, err
				}
				if ok {
					vals[i] = append(vals[i], v)
				}
			}
		}
		appendCombinations(b, vals)
	}
	return b.NewRecordBatch(), nil
}

// appendCombinations appends each combination of vals (one value per key
// column) once, in the order written.
func appendCombinations(b *array.RecordBuilder, vals [][]any) {
	seen := map[string]bool{}
	combo := make([]any, len(vals))
	var walk func(i int)
	walk = func(i int) {
		if i == len(vals) {
			k := fmt.Sprintf("%#v", combo) // Go syntax: ("ab", "c") and ("a", "bc") differ
			if seen[k] {
				return
			}
			seen[k] = true
			for c, v := range combo {
				appendKey(b.Field(c), v)
			}
			return
		}
		for _, v := range vals[i] {
			combo[i] = v
			walk(i + 1)
		}
	}
	walk(0)
}

// keyValue is a condition's value for key field f, as the key column's Go
// value; ok is false when it matches no row (NULL, out of range).
func keyValue(kv planner.KeyValue, args []any, f arrow.Field) (any, bool, error) {
	if kv.Param == 0 {
		if kv.Kind == planner.TokString {
			return kv.Text, true, nil
		}
		n, _ := new(big.Int).SetString(kv.Text, 10)
		return intKey(n, f.Type)
	}
	a := goValue(args[kv.Param-1])
	bad := func() (any, bool, error) {
		return nil, false, fmt.Errorf("%w: parameter %d is %T: key column %s is %s", errInvalid, kv.Param, a, f.Name, f.Type)
	}
	if a == nil {
		return nil, false, nil
	}
	switch {
	case isInteger(f.Type):
		n, ok := goInt(a)
		if !ok {
			return bad()
		}
		return intKey(n, f.Type)
	case f.Type.ID() == arrow.STRING || f.Type.ID() == arrow.LARGE_STRING:
		if v, ok := a.(string); ok {
			return v, true, nil
		}
	case f.Type.ID() == arrow.BINARY:
		switch v := a.(type) {
		case []byte:
			return v, true, nil
		case string:
			return []byte(v), true, nil
		}
	case f.Type.ID() == arrow.BOOL:
		switch v := a.(type) {
		case bool:
			return v, true, nil
		case string:
			if b, ok := planner.ParseBool(v); ok {
				return b, true, nil
			}
		}
	case f.Type.ID() == arrow.DATE32:
		if v, ok := a.(time.Time); ok {
			return arrow.Date32FromTime(v), true, nil
		}
	case f.Type.ID() == arrow.TIMESTAMP:
		if v, ok := a.(time.Time); ok {
			ts, err := arrow.TimestampFromTime(v, f.Type.(*arrow.TimestampType).Unit)
			return ts, err == nil, nil
		}
	}
	return bad()
}

// goInt reads an integer parameter: a Go integer, or its decimal text
// (paramRows renders integer scalars as text).
func goInt(a any) (*big.Int, bool) {
	switch v := a.(type) {
	case string:
		return new(big.Int).SetString(strings.TrimSpace(v), 10)
	case int8:
		return big.NewInt(int64(v)), true
	case int16:
		return big.NewInt(int64(v)), true
	case int32:
		return big.NewInt(int64(v)), true
	case int64:
		return big.NewInt(v), true
	case int:
		return big.NewInt(int64(v)), true
	case uint8:
		return big.NewInt(int64(v)), true
	case uint16:
		return big.NewInt(int64(v)), true
	case uint32:
		return big.NewInt(int64(v)), true
	case uint64:
		return new(big.Int).SetUint64(v), true
	}
	return nil, false
}

// intKey is n as a value of the integer type dt; ok is false when it is
// out of dt's range (no key equals it).
func intKey(n *big.Int, dt arrow.DataType) (any, bool, error) {
	lo, hi := big.NewInt(math.MinInt64), new(big.Int).SetUint64(math.MaxUint64)
	switch dt.ID() {
	case arrow.INT8:
		lo, hi = big.NewInt(math.MinInt8), big.NewInt(math.MaxInt8)
	case arrow.INT16:
		lo, hi = big.NewInt(math.MinInt16), big.NewInt(math.MaxInt16)
	case arrow.INT32:
		lo, hi = big.NewInt(math.MinInt32), big.NewInt(math.MaxInt32)
	case arrow.INT64:
		hi = big.NewInt(math.MaxInt64)
	case arrow.UINT8:
		lo, hi = big.NewInt(0), big.NewInt(math.MaxUint8)
	case arrow.UINT16:
		lo, hi = big.NewInt(0), big.NewInt(math.MaxUint16)
	case arrow.UINT32:
		lo, hi = big.NewInt(0), big.NewInt(math.MaxUint32)
	case arrow.UINT64:
		lo = big.NewInt(0)
	}
	if n.Cmp(lo) < 0 || n.Cmp(hi) > 0 {
		return nil, false, nil
	}
	if n.Sign() < 0 || n.IsInt64() {
		return n.Int64(), true, nil
	}
	return n.Uint64(), true, nil
}

// appendKey appends a value keyValue returned to a builder of its type.
func appendKey(b array.Builder, v any) {
	switch b := b.(type) {
	case *array.Int8Builder:
		b.Append(int8(v.(int64)))
	case *array.Int16Builder:
		b.Append(int16(v.(int64)))
	case *array.Int32Builder:
		b.Append(int32(v.(int64)))
	case *array.Int64Builder:
		b.Append(v.(int64))
	case *array.Uint8Builder:
		b.Append(uint8(v.(int64)))
	case *array.Uint16Builder:
		b.Append(uint16(v.(int64)))
	case *array.Uint32Builder:
		b.Append(uint32(v.(int64)))
	case *array.Uint64Builder:
		if u, ok := v.(uint64); ok {
			b.Append(u)
		} else {
			b.Append(uint64(v.(int64)))
		}
	case *array.StringBuilder:
		b.Append(v.(string))
	case *array.LargeStringBuilder:
		b.Append(v.(string))
	case *array.BinaryBuilder:
		b.Append(v.([]byte))
	case *array.BooleanBuilder:
		b.Append(v.(bool))
	case *array.Date32Builder:
		b.Append(v.(arrow.Date32))
	case *array.TimestampBuilder:
		b.Append(v.(arrow.Timestamp))
	default:
		panic(fmt.Sprintf("lookup key builder %T: lookupType admits only the types above", b))
	}
}

// lookupInfo is the FlightInfo of a lookup: one endpoint whose ticket
// names the statement (and the prepared handle that holds its
// parameters); the lookup runs at DoGet.
func (s *Server) lookupInfo(ctx context.Context, lp *lookupPlan, sql, handle string, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	ep, err := s.endpoint(ctx, &ticket{Kind: "lookup", SQL: sql, Handle: handle})
	if err != nil {
		return nil, err
	}
	return &flight.FlightInfo{
		Schema:           flight.SerializeSchema(lp.schema, s.opts.Mem),
		FlightDescriptor: desc,
		Endpoint:         []*flight.FlightEndpoint{ep},
		TotalRecords:     -1,
		TotalBytes:       -1,
	}, nil
}

// lookupTicket resolves a lookup ticket: the plan and the keys to look
// up, or, should the statement no longer be a lookup (the table was
// dropped or recreated since it was planned), the statement and its
// parameter rows for the engine. release frees the keys.
func (s *Server) lookupTicket(ctx context.Context, tk *ticket) (lp *lookupPlan, keys arrow.RecordBatch, release func(), st *planner.Statement, argRows [][]any, err error) {
	release = func() {}
	if tk.Handle != "" {
		p, err := s.preparedOf(ctx, tk.Handle)
		if err != nil {
			return nil, nil, release, nil, nil, err
		}
		pl := s.preparedPlan(ctx, p, tk.Handle)
		if pl == nil {
			return nil, nil, release, p.stmt, p.argRows(), nil
		}
		keys, owned, err := s.boundKeys(p, pl)
		if err != nil {
			return nil, nil, release, nil, nil, err
		}
		if owned {
			release = keys.Release
		}
		return pl.plan, keys, release, nil, nil, nil
	}
	if st, err = planner.Classify(tk.SQL); err != nil {
		return nil, nil, release, nil, nil, err
	}
	if lp = s.planLookup(ctx, st); lp == nil {
		return nil, nil, release, st, nil, nil
	}
	if keys, err = lp.keyRecord(s, nil); err != nil {
		return nil, nil, release, nil, nil, err
	}
	return lp, keys, keys.Release, nil, nil, nil
}

// doGetLookup answers a lookup ticket: from the key index, its one
// small record sent inline; in the engine when the statement is no
// longer a lookup.
func (s *Server) doGetLookup(ctx context.Context, tk *ticket, stream flight.FlightService_DoGetServer) error {
	lp, keys, release, st, argRows, err := s.lookupTicket(ctx, tk)
	if err != nil {
		return err
	}
	defer release()
	if lp == nil {
		var args []any
		switch len(argRows) {
		case 0:
		case 1:
			args = argRows[0]
		default:
			return fmt.Errorf("%w: %d parameter rows bound to a query; bind one row", errInvalid, len(argRows))
		}
		return s.pipe(ctx, stream, queryReadAhead(), nil, false, func(ctx context.Context, out flight.DataStreamWriter) error {
			return s.streamQuery(ctx, st.SQL, args, out)
		})
	}
	if lp.prefix { // a range of the index: maybe many rows
		return s.pipe(ctx, stream, queryReadAhead(), nil, false, func(ctx context.Context, out flight.DataStreamWriter) error {
			return s.streamPrefix(ctx, lp, keys, out)
		})
	}
	return s.pipe(ctx, stream, queryReadAhead(), nil, true, func(ctx context.Context, out flight.DataStreamWriter) error {
		return s.streamLookup(ctx, lp, keys, out)
	})
}

// streamLookup sends the rows of keys that lp's table holds: the schema
// message lp encoded once, then one record batch (none when no key is
// found), as an IPC stream writer would send them. A writer per DoGet
// encoded the schema again each time (a twentieth of a point lookup's
// CPU, docs/benchmarks.md); it still writes results with dictionaries,
// which need their own messages.
func (s *Server) streamLookup(ctx context.Context, lp *lookupPlan, keys arrow.RecordBatch, out flight.DataStreamWriter) error {
	rec, err := lp.t.Lookup(ctx, keys, lp.cols)
	if err != nil {
		return err
	}
	defer rec.Release()
	var relabeled arrow.RecordBatch
	if rec.NumRows() > 0 {
		relabeled = array.NewRecordBatch(lp.schema, rec.Columns(), rec.NumRows())
		defer relabeled.Release()
	}
	if hasDictionary(lp.schema) {
		w := newRecordWriter(out, ipc.WithSchema(lp.schema), ipc.WithAllocator(s.opts.Mem))
		defer w.Close()
		if relabeled != nil {
			if err := w.Write(relabeled); err != nil {
				return err
			}
		}
		return w.Close()
	}
	if err := out.Send(&flight.FlightData{DataHeader: lp.schemaHeader(s.opts.Mem)}); err != nil {
		return err
	}
	if relabeled == nil {
		return nil
	}
	pl, err := ipc.GetRecordBatchPayload(relabeled, ipc.WithAllocator(s.opts.Mem))
	if err != nil {
		return err
	}
	defer pl.Release()
	return payloadSender{out}.WritePayload(pl)
}

// hasDictionary reports whether a field of schema is dictionary-encoded.
func hasDictionary(schema *arrow.Schema) bool {
	for _, f := range schema.Fields() {
		if f.Type.ID() == arrow.DICTIONARY {
			return true
		}
	}
	return false
}

// streamPrefix answers a prefix lookup: every key that begins with one of
// keys' rows, record by record.
func (s *Server) streamPrefix(ctx context.Context, lp *lookupPlan, keys arrow.RecordBatch, out flight.DataStreamWriter) error {
	w := newRecordWriter(out, ipc.WithSchema(lp.schema), ipc.WithAllocator(s.opts.Mem))
	defer w.Close()
	err := lp.t.LookupPrefix(ctx, keys, lp.cols, func(rec arrow.RecordBatch) error {
		relabeled := array.NewRecordBatch(lp.schema, rec.Columns(), rec.NumRows())
		defer relabeled.Release()
		return w.Write(relabeled)
	})
	if err != nil {
		return err
	}
	return w.Close()
}

// goValue is a bound parameter as the Go value keyValue reads: bound
// parameters arrive as Arrow scalars (paramRows), a NULL one as nil.
func goValue(a any) any {
	sc, ok := a.(scalar.Scalar)
	if !ok {
		return a
	}
	if !sc.IsValid() {
		return nil
	}
	switch v := sc.(type) {
	case *scalar.Int8:
		return v.Value
	case *scalar.Int16:
		return v.Value
	case *scalar.Int32:
		return v.Value
	case *scalar.Int64:
		return v.Value
	case *scalar.Uint8:
		return v.Value
	case *scalar.Uint16:
		return v.Value
	case *scalar.Uint32:
		return v.Value
	case *scalar.Uint64:
		return v.Value
	case *scalar.Boolean:
		return v.Value
	case *scalar.String:
		return string(v.Value.Bytes())
	case *scalar.LargeString:
		return string(v.Value.Bytes())
	case *scalar.Binary:
		return v.Value.Bytes()
	case *scalar.LargeBinary:
		return v.Value.Bytes()
	case *scalar.Date32:
		return v.Value.ToTime()
	case *scalar.Date64:
		return v.Value.ToTime()
	case *scalar.Timestamp:
		return v.Value.ToTime(v.Type.(*arrow.TimestampType).Unit)
	}
	return a
}
