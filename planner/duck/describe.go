package duck

import (
	"context"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
)

// DescribeBound returns the result schema of a query with its parameters
// bound: the schema its Query with the same args streams. A result type can
// depend on the parameters' types (SELECT ? AS x is BIGINT with an int64,
// VARCHAR with a string), which DuckDB settles only when it binds the
// values, so the query runs wrapped in a filter that is always false:
// DuckDB's optimizer replaces the plan by an empty result, so no table is
// scanned. Column names are the statement's own (the wrapper would rename
// duplicates).
func (e *Engine) DescribeBound(ctx context.Context, sql string, args ...any) (*arrow.Schema, error) {
	result, _, err := e.Describe(ctx, sql)
	if err != nil || len(args) == 0 {
		return result, err
	}
	body := strings.TrimSpace(sql)
	body = strings.TrimSpace(strings.TrimSuffix(body, ";"))
	rs, schema, err := e.Query(ctx, "SELECT * FROM (\n"+body+"\n) AS __lakestream_describe WHERE false", args...)
	if err != nil {
		if result != nil && !isParamError(err) {
			return result, nil // e.g. EXPLAIN, which is no subquery: its schema does not depend on types
		}
		return nil, err
	}
	if err := rs.Close(); err != nil {
		return nil, err
	}
	if result == nil || result.NumFields() != schema.NumFields() {
		return schema, nil
	}
	fields := schema.Fields()
	for i := range fields {
		fields[i].Name = result.Field(i).Name
	}
	return arrow.NewSchema(fields, nil), nil
}
