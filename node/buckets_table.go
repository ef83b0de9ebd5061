package node

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lakestream/lakestream/cluster"
	"github.com/lakestream/lakestream/cluster/meta"
	"github.com/lakestream/lakestream/internal/scan"
)

// bucketsSchema is lakestream.buckets: every bucket of the cluster as the
// metadata store holds it, with this node's replica of it
// (docs/cluster.md). A single node has no rows.
var bucketsSchema = arrow.NewSchema([]arrow.Field{
	{Name: "table_name", Type: arrow.BinaryTypes.String, Nullable: true}, // null: a table this node does not know (yet)
	{Name: "table_id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "bucket", Type: arrow.PrimitiveTypes.Int32},
	{Name: "leader", Type: arrow.BinaryTypes.String, Nullable: true}, // null: no leader, the bucket is offline
	{Name: "leader_epoch", Type: arrow.PrimitiveTypes.Int32},
	{Name: "replicas", Type: arrow.ListOf(arrow.BinaryTypes.String)},
	{Name: "isr", Type: arrow.ListOf(arrow.BinaryTypes.String)},
	{Name: "under_replicated", Type: arrow.FixedWidthTypes.Boolean},
	{Name: "version", Type: arrow.PrimitiveTypes.Int64},
	{Name: "local_role", Type: arrow.BinaryTypes.String},                             // leader, follower or none on this node
	{Name: "local_high_watermark", Type: arrow.PrimitiveTypes.Int64, Nullable: true}, // null without a replica here
	{Name: "local_log_end", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
}, nil)

// bucketsTable is the system table lakestream.buckets.
type bucketsTable struct{ n *Node }

func isBucketsTable(db, name string) bool {
	return strings.EqualFold(db, "lakestream") && strings.EqualFold(name, "buckets")
}

func (bucketsTable) Name() string          { return "lakestream.buckets" }
func (bucketsTable) Schema() *arrow.Schema { return bucketsSchema }

func (t bucketsTable) Plan(ctx context.Context, req scan.Request) (scan.Plan, error) {
	rec, err := t.record(ctx, memory.DefaultAllocator)
	if err != nil {
		return nil, fmt.Errorf("scan %s: %w", t.Name(), err)
	}
	return planRecord(t.Name(), bucketsSchema, req, rec)
}

// record reads every bucket from the metadata store, ordered by table and
// bucket.
func (t bucketsTable) record(ctx context.Context, mem memory.Allocator) (arrow.RecordBatch, error) {
	b := array.NewRecordBuilder(mem, bucketsSchema)
	defer b.Release()
	r := t.n.repl
	if r == nil {
		return b.NewRecordBatch(), nil
	}
	all, err := r.store.AllBuckets(ctx)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(all, func(x, y meta.Bucket) int {
		if c := cmp.Compare(x.Key.TableID, y.Key.TableID); c != 0 {
			return c
		}
		return cmp.Compare(x.Key.Bucket, y.Key.Bucket)
	})
	list := func(i int, ids []string) {
		lb := b.Field(i).(*array.ListBuilder)
		lb.Append(true)
		for _, id := range ids {
			lb.ValueBuilder().(*array.StringBuilder).Append(id)
		}
	}
	for _, bk := range all {
		if tb, err := t.n.store.ByID(ctx, bk.Key.TableID); err == nil {
			b.Field(0).(*array.StringBuilder).Append(tb.Name())
		} else {
			b.Field(0).AppendNull()
		}
		b.Field(1).(*array.Int64Builder).Append(bk.Key.TableID)
		b.Field(2).(*array.Int32Builder).Append(bk.Key.Bucket)
		if bk.Leader == "" {
			b.Field(3).AppendNull()
		} else {
			b.Field(3).(*array.StringBuilder).Append(bk.Leader)
		}
		b.Field(4).(*array.Int32Builder).Append(bk.Epoch)
		list(5, bk.Replicas)
		list(6, bk.ISR)
		b.Field(7).(*array.BooleanBuilder).Append(len(bk.ISR) < len(bk.Replicas))
		b.Field(8).(*array.Int64Builder).Append(bk.Version)
		role := "none"
		if a, ok := r.reps.Role(bk.Key); ok {
			switch a.Leader {
			case r.self:
				role = "leader"
			case "":
			default:
				role = "follower"
			}
		}
		b.Field(9).(*array.StringBuilder).Append(role)
		hw, end, ok := r.local(bk.Key)
		if ok {
			b.Field(10).(*array.Int64Builder).Append(hw)
			b.Field(11).(*array.Int64Builder).Append(end)
		} else {
			b.Field(10).AppendNull()
			b.Field(11).AppendNull()
		}
	}
	return b.NewRecordBatch(), nil
}

// local is this node's high watermark and durable end of a bucket, ok
// false when it holds no replica of it.
func (r *replication) local(ref cluster.BucketRef) (hw, end int64, ok bool) {
	r.mu.Lock()
	t, open := r.logs[ref.TableID]
	r.mu.Unlock()
	if !open || int(ref.Bucket) >= t.log.Buckets() {
		return 0, 0, false
	}
	return t.log.HighWatermark(int(ref.Bucket)), t.log.Bucket(int(ref.Bucket)).Durable(), true
}
