package node

import (
	"context"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lakestream/lakestream/internal/scan"
	"github.com/lakestream/lakestream/membership"
)

// nodesSchema is lakestream.nodes: the cluster's members as this node sees
// them (docs/cluster.md). A single node lists itself, without an id.
var nodesSchema = arrow.NewSchema([]arrow.Field{
	{Name: "node_id", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "state", Type: arrow.BinaryTypes.String},
	{Name: "self", Type: arrow.FixedWidthTypes.Boolean},
	{Name: "flight_addr", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "http_addr", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "gossip_addr", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "rack", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "since", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
}, nil)

// nodesTable is the system table lakestream.nodes.
type nodesTable struct{ n *Node }

func isNodesTable(db, name string) bool {
	return strings.EqualFold(db, "lakestream") && strings.EqualFold(name, "nodes")
}

func (nodesTable) Name() string          { return "lakestream.nodes" }
func (nodesTable) Schema() *arrow.Schema { return nodesSchema }

func (t nodesTable) Plan(ctx context.Context, req scan.Request) (scan.Plan, error) {
	return planRecord(t.Name(), nodesSchema, req, t.record(memory.DefaultAllocator))
}

// record is the table's one batch: every member ever seen, ordered by id;
// on a single node, the node itself.
func (t nodesTable) record(mem memory.Allocator) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, nodesSchema)
	defer b.Release()
	str := func(i int, s string) {
		if s == "" {
			b.Field(i).AppendNull()
		} else {
			b.Field(i).(*array.StringBuilder).Append(s)
		}
	}
	m := t.n.Members()
	if m == nil {
		str(0, "")
		b.Field(1).(*array.StringBuilder).Append(string(membership.Alive))
		b.Field(2).(*array.BooleanBuilder).Append(true)
		str(3, t.n.Addr())
		str(4, t.n.HTTPAddr())
		str(5, "")
		str(6, "")
		b.Field(7).AppendNull()
		return b.NewRecordBatch()
	}
	self := m.Self().ID
	for _, mb := range m.Members() {
		str(0, mb.ID)
		b.Field(1).(*array.StringBuilder).Append(string(mb.State))
		b.Field(2).(*array.BooleanBuilder).Append(mb.ID == self)
		str(3, mb.Flight)
		str(4, mb.HTTP)
		str(5, mb.Gossip)
		str(6, mb.Rack)
		if mb.Since.IsZero() {
			b.Field(7).AppendNull()
		} else {
			b.Field(7).(*array.TimestampBuilder).Append(arrow.Timestamp(mb.Since.UnixMicro()))
		}
	}
	return b.NewRecordBatch()
}
