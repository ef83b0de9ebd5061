package node

import (
	"cmp"
	"context"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lakestream/lakestream/internal/scan"
	"github.com/lakestream/lakestream/tables"
)

// offsetsSchema is lakestream.offsets: each bucket of each table this node
// holds, with the offsets a streaming reader positions itself by
// (docs/sql.md, "Changelog and subscriptions"). Reading it touches no
// data: the offsets are the logs' in-memory state, so a streaming
// source can ask for them on every trigger.
var offsetsSchema = arrow.NewSchema([]arrow.Field{
	{Name: "table_name", Type: arrow.BinaryTypes.String}, // db.name
	{Name: "bucket", Type: arrow.PrimitiveTypes.Int32},
	// earliest_offset is the first offset changes() can start at: 0 for a
	// table with a lake (older rows are read from it), else the log's
	// retained start.
	{Name: "earliest_offset", Type: arrow.PrimitiveTypes.Int64},
	{Name: "log_start_offset", Type: arrow.PrimitiveTypes.Int64},
	// end_offset is the committed end: the offset the next row will take.
	// Every offset below it is readable and final.
	{Name: "end_offset", Type: arrow.PrimitiveTypes.Int64},
}, nil)

// offsetsTable is the system table lakestream.offsets.
type offsetsTable struct{ store *tables.Store }

func isOffsetsTable(db, name string) bool {
	return strings.EqualFold(db, "lakestream") && strings.EqualFold(name, "offsets")
}

func (offsetsTable) Name() string          { return "lakestream.offsets" }
func (offsetsTable) Schema() *arrow.Schema { return offsetsSchema }

func (t offsetsTable) Plan(ctx context.Context, req scan.Request) (scan.Plan, error) {
	return planRecord(t.Name(), offsetsSchema, req, t.record(memory.DefaultAllocator))
}

// record lists every bucket of the open tables, ordered by table name and
// bucket.
func (t offsetsTable) record(mem memory.Allocator) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, offsetsSchema)
	defer b.Release()
	open := t.store.Tables()
	slices.SortFunc(open, func(x, y *tables.Table) int { return cmp.Compare(x.Name(), y.Name()) })
	for _, tb := range open {
		name := tb.Name()
		for _, r := range tb.LogRanges() {
			b.Field(0).(*array.StringBuilder).Append(name)
			b.Field(1).(*array.Int32Builder).Append(int32(r.Bucket))
			b.Field(2).(*array.Int64Builder).Append(tb.Earliest(r.Bucket))
			b.Field(3).(*array.Int64Builder).Append(r.From)
			b.Field(4).(*array.Int64Builder).Append(r.To)
		}
	}
	return b.NewRecordBatch()
}
