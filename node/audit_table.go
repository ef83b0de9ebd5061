package node

import (
	"context"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lakestream/lakestream/audit"
	"github.com/lakestream/lakestream/auth"
	"github.com/lakestream/lakestream/internal/scan"
)

// auditSchema is lakestream.audit: the audit log's latest events, oldest
// first (audit.Event; docs/security.md, "Audit log").
var auditSchema = arrow.NewSchema([]arrow.Field{
	{Name: "time", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
	{Name: "kind", Type: arrow.BinaryTypes.String},
	{Name: "user", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "peer", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "statement", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "outcome", Type: arrow.BinaryTypes.String},
}, nil)

// auditTable is the system table lakestream.audit. Only a superuser reads
// it: it names users, their addresses and their statements.
type auditTable struct{ log *audit.Log }

func isAuditTable(db, name string) bool {
	return strings.EqualFold(db, "lakestream") && strings.EqualFold(name, "audit")
}

func (auditTable) Name() string          { return "lakestream.audit" }
func (auditTable) Schema() *arrow.Schema { return auditSchema }

func (t auditTable) Plan(ctx context.Context, req scan.Request) (scan.Plan, error) {
	if id, ok := auth.FromContext(ctx); !ok || !id.Superuser {
		return nil, fmt.Errorf("scan %s: %w: only a superuser may read the audit log", t.Name(), auth.ErrPermissionDenied)
	}
	return planRecord(t.Name(), auditSchema, req, auditRecord(memory.DefaultAllocator, t.log.Events()))
}

func auditRecord(mem memory.Allocator, events []audit.Event) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, auditSchema)
	defer b.Release()
	str := func(i int, s string) {
		if s == "" {
			b.Field(i).AppendNull()
		} else {
			b.Field(i).(*array.StringBuilder).Append(s)
		}
	}
	for _, e := range events {
		b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(e.Time.UnixMicro()))
		b.Field(1).(*array.StringBuilder).Append(string(e.Kind))
		str(2, e.User)
		str(3, e.Peer)
		str(4, e.Statement)
		b.Field(5).(*array.StringBuilder).Append(e.Outcome)
	}
	return b.NewRecordBatch()
}
