package node

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/lakestream/lakestream/internal/scan"
)

// planRecord is the plan of a system table whose rows are one record built
// when the scan is planned (lakestream.nodes, .buckets, .offsets, .audit):
// the requested columns of rec, which it releases.
func planRecord(name string, full *arrow.Schema, req scan.Request, rec arrow.RecordBatch) (scan.Plan, error) {
	defer rec.Release()
	cols := scan.Columns(req.Columns, full.NumFields())
	schema, err := scan.ProjectSchema(full, cols)
	if err != nil {
		return nil, fmt.Errorf("scan %s: %w", name, err)
	}
	arrs := make([]arrow.Array, len(cols))
	for i, c := range cols {
		arrs[i] = rec.Column(c)
	}
	return scan.NewPlan(schema, []scan.Part{scan.RecordPart(array.NewRecordBatch(schema, arrs, rec.NumRows()))}), nil
}
