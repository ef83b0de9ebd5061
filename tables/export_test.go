package tables

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lakestream/lakestream/internal/scan"
)

// Satisfies is the tests' reference evaluation of a scan.Filter on a row.
var Satisfies = satisfies

// Conform is conform against the table's current definition, as an
// Appender created now does.
func (t *Table) Conform(rec arrow.RecordBatch) (arrow.RecordBatch, error) {
	def := t.Def()
	return conform(def.FullName(), def.ArrowSchema(), rec, t.mem)
}

// Plan captures a read of the table as the query engine does.
func (t *Table) Plan(ctx context.Context, req scan.Request) (scan.Plan, error) {
	return layerTable{t, LayerTable}.Plan(ctx, req)
}
