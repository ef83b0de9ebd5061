package tiering

// This file maps a Lakestream table definition onto an Iceberg table: its
// schema (icebergSchema, evolveSchema), its partition spec (partitionSpec),
// and the way back, from the Arrow records iceberg-go reads to the table's
// own Arrow schema (conformLakeRecord).
//
// The types follow the mapping table in catalog/types_arrow.go. Iceberg has
// no 8- or 16-bit integers, so TINYINT and SMALLINT are stored as int and
// come back as Int32. Everything else comes back as the same Arrow type;
// conformLakeRecord does not rely on the names of nested fields matching.

import (
	"context"
	"fmt"
	"strings"
	"unicode"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/lakestream/lakestream/catalog"
	"github.com/lakestream/lakestream/internal/scan"
)

// unassignedID marks a field id that iceberg.AssignFreshSchemaIDs (or
// UpdateSchema.AddColumn, which calls it) fills in. Negative ids are the
// placeholders iceberg-go itself uses; NewSchema only checks positive ids
// for duplicates.
const unassignedID = -1

// icebergSchema returns the Iceberg schema of def's current columns, with
// fresh field ids for the columns and for every field nested in lists, maps
// and structs. iceberg-go numbers them depth first (a nested column's fields
// take the ids right after its own; Java numbers all columns first), and
// UpdateSchema.AddColumn does the same from the last id, so a lake table
// evolved by evolveSchema has the ids a new one would. NOT NULL columns are
// required; nested fields are optional, except map keys, which Iceberg
// always requires.
//
// It converts catalog types directly rather than through
// table.ArrowSchemaToIcebergWithFreshIDs on def.ArrowSchema(): that gives the
// same schema for every Arrow type the catalog produces (schema_test.go checks
// it), but it also accepts Arrow types that have no place in a Lakestream
// table, and the mapping is the catalog's to define.
func icebergSchema(def *catalog.Table) (*iceberg.Schema, error) {
	fields := make([]iceberg.NestedField, len(def.Columns))
	for i, c := range def.Columns {
		typ, err := icebergType(c.Type)
		if err != nil {
			return nil, fmt.Errorf("iceberg schema of table %q: column %q: %w", def.FullName(), c.Name, err)
		}
		fields[i] = iceberg.NestedField{ID: unassignedID, Name: c.Name, Type: typ, Required: c.NotNull}
	}
	sch, err := iceberg.AssignFreshSchemaIDs(iceberg.NewSchema(0, fields...), nil)
	if err != nil {
		return nil, fmt.Errorf("iceberg schema of table %q: assign field ids: %w", def.FullName(), err)
	}
	if !def.HasPrimaryKey() {
		return sch, nil
	}
	// A primary-key table's key columns are the schema's identifier fields
	// (docs/lake.md, "The Iceberg table").
	ids := make([]int, len(def.PrimaryKey))
	for i, name := range def.PrimaryKey {
		f, ok := sch.FindFieldByName(name)
		if !ok {
			return nil, fmt.Errorf("iceberg schema of table %q: no key column %q", def.FullName(), name)
		}
		ids[i] = f.ID
	}
	return iceberg.NewSchemaWithIdentifiers(sch.ID, ids, sch.Fields()...), nil
}

// primitiveIceberg is the Iceberg column of catalog/types_arrow.go's mapping
// for each primitive kind.
var primitiveIceberg = map[catalog.Kind]iceberg.Type{
	catalog.KindBoolean:     iceberg.PrimitiveTypes.Bool,
	catalog.KindTinyInt:     iceberg.PrimitiveTypes.Int32,
	catalog.KindSmallInt:    iceberg.PrimitiveTypes.Int32,
	catalog.KindInteger:     iceberg.PrimitiveTypes.Int32,
	catalog.KindBigInt:      iceberg.PrimitiveTypes.Int64,
	catalog.KindFloat:       iceberg.PrimitiveTypes.Float32,
	catalog.KindDouble:      iceberg.PrimitiveTypes.Float64,
	catalog.KindVarchar:     iceberg.PrimitiveTypes.String,
	catalog.KindBlob:        iceberg.PrimitiveTypes.Binary,
	catalog.KindDate:        iceberg.PrimitiveTypes.Date,
	catalog.KindTime:        iceberg.PrimitiveTypes.Time,
	catalog.KindTimestamp:   iceberg.PrimitiveTypes.Timestamp,
	catalog.KindTimestampTZ: iceberg.PrimitiveTypes.TimestampTz,
}

// icebergType returns the Iceberg type of t, its nested field ids
// unassigned.
func icebergType(t catalog.Type) (iceberg.Type, error) {
	if typ, ok := primitiveIceberg[t.Kind]; ok {
		return typ, nil
	}
	switch t.Kind {
	case catalog.KindDecimal:
		return iceberg.DecimalTypeOf(t.Precision, t.Scale), nil
	case catalog.KindList:
		elem, err := icebergType(*t.Elem)
		if err != nil {
			return nil, err
		}
		return &iceberg.ListType{ElementID: unassignedID, Element: elem}, nil
	case catalog.KindMap:
		key, err := icebergType(*t.Key)
		if err != nil {
			return nil, err
		}
		val, err := icebergType(*t.Value)
		if err != nil {
			return nil, err
		}
		return &iceberg.MapType{KeyID: unassignedID, KeyType: key, ValueID: unassignedID, ValueType: val}, nil
	case catalog.KindStruct:
		fields := make([]iceberg.NestedField, len(t.Fields))
		for i, f := range t.Fields {
			typ, err := icebergType(f.Type)
			if err != nil {
				return nil, fmt.Errorf("struct field %q: %w", f.Name, err)
			}
			fields[i] = iceberg.NestedField{ID: unassignedID, Name: f.Name, Type: typ}
		}
		return &iceberg.StructType{FieldList: fields}, nil
	}
	return nil, fmt.Errorf("type %s has no Iceberg type", t)
}

// icebergTransforms maps PARTITIONED BY transforms; they are named as in
// Iceberg and apply to the same source column.
var icebergTransforms = map[catalog.Transform]iceberg.Transform{
	catalog.TransformIdentity: iceberg.IdentityTransform{},
	catalog.TransformYear:     iceberg.YearTransform{},
	catalog.TransformMonth:    iceberg.MonthTransform{},
	catalog.TransformDay:      iceberg.DayTransform{},
	catalog.TransformHour:     iceberg.HourTransform{},
}

// partitionSpec returns the Iceberg partition spec of def over sch (the
// schema icebergSchema built, or the lake table's): the PARTITIONED BY
// fields in order, then bucket(N, key) when the log's buckets have an
// Iceberg equivalent (see lakeBucketColumn). Field ids start at
// iceberg.PartitionDataIDStart (1000), as Iceberg assigns them to a new
// table's first spec. Fields are named as Iceberg names them: the column
// for identity, "<col>_<transform>" otherwise ("ts_day", "id_bucket"); such
// a name taken by a column gets "_" appended until it is free.
func partitionSpec(def *catalog.Table, sch *iceberg.Schema) (iceberg.PartitionSpec, error) {
	type field struct {
		col, name string
		tr        iceberg.Transform
	}
	fields := make([]field, 0, len(def.Partition)+1)
	for _, p := range def.Partition {
		tr, ok := icebergTransforms[p.Transform]
		if !ok {
			return iceberg.PartitionSpec{}, fmt.Errorf("partition spec of table %q: field %s: unknown transform", def.FullName(), p)
		}
		name := p.Column
		if p.Transform != catalog.TransformIdentity {
			name += "_" + string(p.Transform)
		}
		fields = append(fields, field{p.Column, name, tr})
	}
	if col, ok := lakeBucketColumn(def); ok {
		fields = append(fields, field{col, col + "_bucket", iceberg.BucketTransform{NumBuckets: def.Options.BucketNum}})
	}

	opts := make([]iceberg.PartitionOption, 0, len(fields))
	for i, f := range fields {
		src, ok := findColumn(sch, f.col)
		if !ok {
			return iceberg.PartitionSpec{}, fmt.Errorf("partition spec of table %q: column %q is not in the Iceberg schema", def.FullName(), f.col)
		}
		id := iceberg.PartitionDataIDStart + i
		name := f.name
		if f.tr != (iceberg.IdentityTransform{}) {
			name = freePartitionName(sch, name)
		}
		opts = append(opts, iceberg.AddPartitionFieldBySourceID(src.ID, name, f.tr, sch, &id))
	}
	spec, err := iceberg.NewPartitionSpecOpts(opts...)
	if err != nil {
		return iceberg.PartitionSpec{}, fmt.Errorf("partition spec of table %q: %w", def.FullName(), err)
	}
	return spec, nil
}

// lakeBucketColumn returns the column to bucket the lake table by: the
// bucket key, when it is one column and the table has more than one bucket.
//
// Only then does the lake partition bucket(N, col) hold exactly the rows of
// log bucket b (internal/bucket hashes one column as Iceberg does), so that a
// union read can pair the two. A key of several columns hashes their
// concatenation, which no Iceberg transform computes: bucketing the lake by
// each column would not line up with the log and would only multiply small
// files. A keyless table spreads batches round-robin, so there is nothing to
// line up with. One bucket would be a constant partition value.
func lakeBucketColumn(def *catalog.Table) (string, bool) {
	if len(def.Options.BucketKey) != 1 || def.Options.BucketNum <= 1 {
		return "", false
	}
	return def.Options.BucketKey[0], true
}

// findColumn returns the top-level field of sch named name, ignoring case as
// Lakestream (and DuckDB) resolve names, but preferring an exact match.
func findColumn(sch *iceberg.Schema, name string) (iceberg.NestedField, bool) {
	var found iceberg.NestedField
	ok := false
	for _, f := range sch.Fields() {
		if f.Name == name {
			return f, true
		}
		if !ok && strings.EqualFold(f.Name, name) {
			found, ok = f, true
		}
	}
	return found, ok
}

// foldKey maps name to a key that two names share exactly when
// strings.EqualFold holds between them: each rune becomes the smallest
// rune of its simple case-folding orbit.
func foldKey(name string) string {
	var b strings.Builder
	b.Grow(len(name))
	for _, r := range name {
		low := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			low = min(low, f)
		}
		b.WriteRune(low)
	}
	return b.String()
}

// freePartitionName returns name, or name with "_" appended until no column
// of sch has it: Iceberg refuses a partition field named like a column other
// than its source.
func freePartitionName(sch *iceberg.Schema, name string) string {
	for {
		if _, taken := findColumn(sch, name); !taken {
			return name
		}
		name += "_"
	}
}

// evolveSchema adds to the transaction's schema every column of def that
// cur (the lake table's current schema) lacks, matched by name ignoring
// case, and reports whether it added any. Lakestream only ever appends
// nullable columns, so the new columns are optional and go at the end, in
// def's order; a NOT NULL column missing from cur means cur belongs to some
// other definition, and is an error.
//
// The update is applied to tx (UpdateSchema.Commit stages it there); the
// caller commits tx, possibly with an append of rows in the new schema.
func evolveSchema(tx *table.Transaction, cur *iceberg.Schema, def *catalog.Table) (bool, error) {
	// One copy of cur's fields for all of def's columns: Schema.Fields
	// copies the whole schema on each call, so a findColumn per column was
	// quadratic in the width (docs/benchmarks.md, "Start-up").
	have := make(map[string]bool, cur.NumFields())
	for _, f := range cur.Fields() {
		have[foldKey(f.Name)] = true
	}
	var missing []catalog.Column
	for _, c := range def.Columns {
		if have[foldKey(c.Name)] {
			continue
		}
		if c.NotNull {
			return false, fmt.Errorf("evolve lake schema of table %q: NOT NULL column %q is missing from the lake table", def.FullName(), c.Name)
		}
		missing = append(missing, c)
	}
	// A primary-key table's lake created by an earlier version lacks the
	// key as identifier fields.
	keys := identifiersMissing(cur, def)
	if len(missing) == 0 && keys == nil {
		return false, nil
	}
	upd, err := updateSchema(tx)
	if err != nil {
		return false, fmt.Errorf("evolve lake schema of table %q: %w", def.FullName(), err)
	}
	if keys != nil {
		upd.SetIdentifierField(keys)
	}
	for _, c := range missing {
		typ, err := icebergType(c.Type)
		if err != nil {
			return false, fmt.Errorf("evolve lake schema of table %q: column %q: %w", def.FullName(), c.Name, err)
		}
		upd.AddColumn([]string{c.Name}, typ, "", false, nil)
	}
	if err := upd.Commit(); err != nil {
		return false, fmt.Errorf("evolve lake schema of table %q: %w", def.FullName(), err)
	}
	return true, nil
}

// updateSchema starts a schema update in tx: case-insensitive, compatible
// changes only. When the table carries a name mapping (iceberg-go adds one
// for files registered with AddDataFiles), the update extends it with the
// new columns; without WithNameMapping, UpdateSchema would leave it stale.
func updateSchema(tx *table.Transaction) (*table.UpdateSchema, error) {
	staged, err := tx.StagedTable()
	if err != nil {
		return nil, err
	}
	var opts []table.UpdateSchemaOption
	if nm := staged.NameMapping(); nm != nil {
		opts = append(opts, table.WithNameMapping(nm))
	}
	return tx.UpdateSchema(false, false, opts...), nil
}

// conformLakeRecord returns rec, as iceberg-go reads it from the lake, in the
// table's Arrow schema target (def.ArrowSchema(), or a projection of it):
// same column order, types, nested field names and nullability, and target
// as its schema.
//
// Columns are matched by name, ignoring case. A column rec lacks (one added
// after the rows were tiered) reads as nulls. Where the types differ only in
// names or metadata (a list's element, a map's entries, a time zone
// spelling), the buffers are reused under the target type; where the values
// differ (Iceberg int for TINYINT and SMALLINT), they are cast. The cast is
// checked: it narrows values that were written from int8 and int16, so one
// out of range means the lake holds something else, and is an error.
//
// The result holds its own references: the caller releases rec and the
// result separately.
func conformLakeRecord(rec arrow.RecordBatch, target *arrow.Schema, mem memory.Allocator) (arrow.RecordBatch, error) {
	rows := rec.NumRows()
	cols := make([]arrow.Array, 0, target.NumFields())
	defer func() {
		for _, c := range cols {
			c.Release()
		}
	}()
	for _, f := range target.Fields() {
		col, err := conformColumn(rec, f, mem)
		if err != nil {
			return nil, fmt.Errorf("conform lake record: column %q: %w", f.Name, err)
		}
		cols = append(cols, col)
	}
	return array.NewRecordBatch(target, cols, rows), nil
}

// conformColumn returns rec's column for f, in f's type.
func conformColumn(rec arrow.RecordBatch, f arrow.Field, mem memory.Allocator) (arrow.Array, error) {
	i := scan.FieldIndex(rec.Schema(), f.Name)
	if i < 0 {
		if !f.Nullable {
			return nil, fmt.Errorf("NOT NULL column is missing from the lake record (%s)", rec.Schema())
		}
		return array.MakeArrayOfNull(mem, f.Type, int(rec.NumRows())), nil
	}
	col := rec.Column(i)
	if !f.Nullable && col.NullN() > 0 {
		return nil, fmt.Errorf("NOT NULL column has %d nulls in the lake", col.NullN())
	}
	data, err := conformData(col.Data(), f.Type, mem)
	if err != nil {
		return nil, err
	}
	defer data.Release()
	return array.MakeFromData(data), nil
}

// conformData returns d as type to, sharing d's buffers where the layouts
// match. The caller releases the result.
//
// Nested data is always rebuilt on its own buffers with the target type, so
// the result carries the target's field names and nullability rather than
// iceberg-go's (and no field-id metadata); only the children are converted.
func conformData(d arrow.ArrayData, to arrow.DataType, mem memory.Allocator) (arrow.ArrayData, error) {
	from := d.DataType()
	switch to := to.(type) {
	case *arrow.ListType:
		if from.ID() != arrow.LIST {
			return castData(d, to, mem)
		}
		return conformChildren(d, to, mem, to.Elem())
	case *arrow.MapType:
		if from.ID() != arrow.MAP {
			return castData(d, to, mem)
		}
		// The entries struct is matched by position: key then value, whatever
		// iceberg-go names them.
		entries := d.Children()[0]
		if len(entries.Children()) != 2 {
			return nil, fmt.Errorf("map entries of %s have %d fields, want key and value", from, len(entries.Children()))
		}
		return conformChildren(d, to, mem, to.Elem())
	case *arrow.StructType:
		if from.ID() != arrow.STRUCT {
			return nil, fmt.Errorf("cannot read %s as %s", from, to)
		}
		return conformStruct(d, to, mem)
	}
	if from.ID() == to.ID() && (arrow.TypeEqual(from, to) || sameTimestampUnit(from, to)) {
		return relabel(d, to, d.Children()), nil
	}
	return castData(d, to, mem)
}

// conformChildren rebuilds list-like d (a list, or a map whose child is its
// entries struct) as type to, its one child conformed to childType.
func conformChildren(d arrow.ArrayData, to arrow.DataType, mem memory.Allocator, childType arrow.DataType) (arrow.ArrayData, error) {
	var (
		child arrow.ArrayData
		err   error
	)
	if st, ok := childType.(*arrow.StructType); ok && to.ID() == arrow.MAP {
		child, err = conformEntries(d.Children()[0], st, mem)
	} else {
		child, err = conformData(d.Children()[0], childType, mem)
	}
	if err != nil {
		return nil, err
	}
	defer child.Release()
	return relabel(d, to, []arrow.ArrayData{child}), nil
}

// conformEntries conforms a map's entries struct by position.
func conformEntries(d arrow.ArrayData, to *arrow.StructType, mem memory.Allocator) (arrow.ArrayData, error) {
	children := make([]arrow.ArrayData, 0, 2)
	defer func() { releaseAll(children) }()
	for i, f := range to.Fields() {
		c, err := conformData(d.Children()[i], f.Type, mem)
		if err != nil {
			return nil, fmt.Errorf("map %s: %w", f.Name, err)
		}
		children = append(children, c)
	}
	return relabel(d, to, children), nil
}

// conformStruct conforms a struct's fields by name, ignoring case; a field
// d lacks reads as nulls.
func conformStruct(d arrow.ArrayData, to *arrow.StructType, mem memory.Allocator) (arrow.ArrayData, error) {
	from := d.DataType().(*arrow.StructType)
	fromSchema := arrow.NewSchema(from.Fields(), nil)
	children := make([]arrow.ArrayData, 0, to.NumFields())
	defer func() { releaseAll(children) }()
	for _, f := range to.Fields() {
		i := scan.FieldIndex(fromSchema, f.Name)
		if i < 0 {
			// A struct's children are indexed with the struct's offset.
			nulls := array.MakeArrayOfNull(mem, f.Type, d.Offset()+d.Len())
			children = append(children, nulls.Data())
			nulls.Data().Retain()
			nulls.Release()
			continue
		}
		c, err := conformData(d.Children()[i], f.Type, mem)
		if err != nil {
			return nil, fmt.Errorf("struct field %q: %w", f.Name, err)
		}
		children = append(children, c)
	}
	return relabel(d, to, children), nil
}

// relabel returns d's buffers under type to with the given children (all
// retained by the result).
func relabel(d arrow.ArrayData, to arrow.DataType, children []arrow.ArrayData) arrow.ArrayData {
	return array.NewData(to, d.Len(), d.Buffers(), children, d.NullN(), d.Offset())
}

// sameTimestampUnit reports whether from and to are timestamps that differ
// only in the spelling of the time zone ("UTC", "+00:00", "Etc/UTC"): the
// values are the same instants, so the buffers can be reused.
func sameTimestampUnit(from, to arrow.DataType) bool {
	f, ok1 := from.(*arrow.TimestampType)
	t, ok2 := to.(*arrow.TimestampType)
	return ok1 && ok2 && f.Unit == t.Unit && (f.TimeZone == "") == (t.TimeZone == "")
}

// castData casts d to type to with arrow's checked cast: an overflowing or
// truncating value is an error.
func castData(d arrow.ArrayData, to arrow.DataType, mem memory.Allocator) (arrow.ArrayData, error) {
	arr := array.MakeFromData(d)
	defer arr.Release()
	ctx := compute.WithAllocator(context.Background(), mem)
	out, err := compute.CastArray(ctx, arr, compute.SafeCastOptions(to))
	if err != nil {
		return nil, fmt.Errorf("cast %s to %s: %w", d.DataType(), to, err)
	}
	defer out.Release()
	data := out.Data()
	data.Retain()
	return data, nil
}

func releaseAll(ds []arrow.ArrayData) {
	for _, d := range ds {
		d.Release()
	}
}

// identifiersMissing returns the key columns of a primary-key table as
// identifier field paths when cur's identifier fields are not they; nil
// when they are, or for a log table.
func identifiersMissing(cur *iceberg.Schema, def *catalog.Table) [][]string {
	if !def.HasPrimaryKey() {
		return nil
	}
	have := map[string]bool{}
	for _, id := range cur.IdentifierFieldIDs {
		if f, ok := cur.FindFieldByID(id); ok {
			have[foldKey(f.Name)] = true
		}
	}
	same := len(have) == len(def.PrimaryKey)
	paths := make([][]string, len(def.PrimaryKey))
	for i, k := range def.PrimaryKey {
		same = same && have[foldKey(k)]
		paths[i] = []string{k}
	}
	if same {
		return nil
	}
	return paths
}
