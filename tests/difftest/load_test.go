package difftest

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lakestream/lakestream/catalog"
	"github.com/lakestream/lakestream/tables"
)

// Loading the data set into Lakestream: DDL through Store.Exec, rows
// through Table.Conform + Table.Write, in writes of varied shape so that
// rows are spread over buckets, batches and encodings.

// chunkSizes are the row counts of successive writes, cycled.
var chunkSizes = []int{1, 3, 200, 997, 1500, 64, 2049, 4096, 5, 3333}

// writeShape is how one chunk is handed to Conform and Write.
type writeShape int

const (
	shapePlain    writeShape = iota // one record of exactly the table schema
	shapeSliced                     // a slice (non-zero offset) of a larger record
	shapeReversed                   // columns in reverse order: Conform reorders
	shapeTwoRecs                    // two records in one atomic Write
	numShapes
)

// loadLake creates t in Lakestream and writes its rows.
func loadLake(ctx context.Context, store *tables.Store, t *tableSpec) error {
	create, rows := t, t.rows
	if t.addColumnAt > 0 {
		create = &tableSpec{db: t.db, name: t.name, with: t.with, cols: t.cols[:len(t.cols)-1]}
		rows = nil
		for _, r := range t.rows[:t.addColumnAt] {
			rows = append(rows, r[:len(r)-1])
		}
	}
	if err := execDDL(ctx, store, create.ddl(true)); err != nil {
		return err
	}
	tbl, err := store.Get(ctx, t.db, t.name)
	if err != nil {
		return err
	}
	if err := writeRows(ctx, tbl, t, rows); err != nil || t.addColumnAt == 0 {
		return err
	}
	last := t.cols[len(t.cols)-1]
	if err := execDDL(ctx, store, fmt.Sprintf("ALTER TABLE %s ADD COLUMN %s %s", t.ref(), quoteIdent(last.name), last.typ)); err != nil {
		return err
	}
	return writeRows(ctx, tbl, t, t.rows[t.addColumnAt:])
}

func execDDL(ctx context.Context, store *tables.Store, ddl string) error {
	stmt, err := catalog.Parse(ddl)
	if err != nil {
		return fmt.Errorf("parse %s: %w", ddl, err)
	}
	if err := store.Exec(ctx, stmt); err != nil {
		return fmt.Errorf("%s: %w", ddl, err)
	}
	return nil
}

// writeRows writes rows to tbl, of its current schema, in writes of
// varied size and shape.
func writeRows(ctx context.Context, tbl *tables.Table, t *tableSpec, rows [][]any) error {
	schema := tbl.Schema()
	for i, start := 0, 0; start < len(rows); i++ {
		size := max(t.minChunk, chunkSizes[i%len(chunkSizes)])
		shape := writeShape(i % int(numShapes))
		if t.chunks != nil {
			size, shape = t.chunks[i], shapePlain // one batch per write, as specified
		}
		end := min(len(rows), start+size)
		recs, err := shapedRecords(schema, rows[start:end], shape)
		if err != nil {
			return fmt.Errorf("%s rows %d..%d: %w", t.name, start, end, err)
		}
		if err := conformAndWrite(ctx, tbl, recs); err != nil {
			return fmt.Errorf("%s rows %d..%d: %w", t.name, start, end, err)
		}
		start = end
	}
	return nil
}

func conformAndWrite(ctx context.Context, tbl *tables.Table, recs []arrow.RecordBatch) error {
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	var want int64
	for _, r := range recs {
		want += r.NumRows()
	}
	n, err := tbl.Write(ctx, recs...)
	if err != nil {
		return err
	}
	if n != want {
		return fmt.Errorf("wrote %d rows, want %d", n, want)
	}
	return nil
}

// shapedRecords builds the records of one write.
func shapedRecords(schema *arrow.Schema, rows [][]any, shape writeShape) ([]arrow.RecordBatch, error) {
	switch shape {
	case shapeSliced:
		pad := func(n int) [][]any { return rows[:min(n, len(rows))] }
		all := append(append(append([][]any{}, pad(5)...), rows...), pad(3)...)
		rec, err := buildRecord(schema, all)
		if err != nil {
			return nil, err
		}
		defer rec.Release()
		lead := min(5, len(rows))
		return []arrow.RecordBatch{rec.NewSlice(int64(lead), int64(lead+len(rows)))}, nil
	case shapeReversed:
		fields := schema.Fields()
		for i, j := 0, len(fields)-1; i < j; i, j = i+1, j-1 {
			fields[i], fields[j] = fields[j], fields[i]
		}
		rev := make([][]any, len(rows))
		for i, r := range rows {
			rev[i] = make([]any, len(r))
			for j := range r {
				rev[i][j] = r[len(r)-1-j]
			}
		}
		rec, err := buildRecord(arrow.NewSchema(fields, nil), rev)
		return []arrow.RecordBatch{rec}, err
	case shapeTwoRecs:
		if len(rows) > 1 {
			a, err := buildRecord(schema, rows[:len(rows)/2])
			if err != nil {
				return nil, err
			}
			b, err := buildRecord(schema, rows[len(rows)/2:])
			if err != nil {
				a.Release()
				return nil, err
			}
			return []arrow.RecordBatch{a, b}, nil
		}
	}
	rec, err := buildRecord(schema, rows)
	return []arrow.RecordBatch{rec}, err
}

func buildRecord(schema *arrow.Schema, rows [][]any) (rec arrow.RecordBatch, err error) {
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("build record: %v", p)
		}
	}()
	for _, row := range rows {
		for i, v := range row {
			appendValue(b.Field(i), v)
		}
	}
	return b.NewRecordBatch(), nil
}

// appendValue appends a data-set value (data_test.go) to an Arrow builder.
// It is a dispatcher on the builder type.
func appendValue(b array.Builder, v any) {
	if v == nil {
		b.AppendNull()
		return
	}
	switch b := b.(type) {
	case *array.BooleanBuilder:
		b.Append(v.(bool))
	case *array.Int8Builder:
		b.Append(v.(int8))
	case *array.Int16Builder:
		b.Append(v.(int16))
	case *array.Int32Builder:
		b.Append(v.(int32))
	case *array.Int64Builder:
		b.Append(v.(int64))
	case *array.Float32Builder:
		b.Append(v.(float32))
	case *array.Float64Builder:
		b.Append(v.(float64))
	case *array.Decimal128Builder:
		b.Append(v.(decimal128.Num))
	case *array.StringBuilder:
		b.Append(v.(string))
	case *array.BinaryBuilder:
		b.Append(v.([]byte))
	case *array.Date32Builder:
		b.Append(arrow.Date32(v.(int32)))
	case *array.Time64Builder:
		b.Append(arrow.Time64(v.(int64)))
	case *array.TimestampBuilder:
		b.Append(arrow.Timestamp(v.(int64)))
	case *array.MapBuilder: // before ListBuilder: a MapBuilder is one too
		b.Append(true)
		for _, e := range v.([]kv) {
			appendValue(b.KeyBuilder(), e.k)
			appendValue(b.ItemBuilder(), e.v)
		}
	case *array.ListBuilder:
		b.Append(true)
		for _, e := range v.([]any) {
			appendValue(b.ValueBuilder(), e)
		}
	case *array.StructBuilder:
		b.Append(true)
		for i, f := range v.([]any) {
			appendValue(b.FieldBuilder(i), f)
		}
	default:
		panic(fmt.Sprintf("no appender for %T", b))
	}
}
