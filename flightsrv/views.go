package flightsrv

import (
	"context"
	"sort"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"

	"github.com/lakestream/lakestream/catalog"
)

// viewType is the Flight SQL table_type of a persistent view.
const viewType = "VIEW"

func viewTypeMatches(types []string) bool {
	if len(types) == 0 {
		return true
	}
	for _, t := range types {
		if strings.EqualFold(t, viewType) {
			return true
		}
	}
	return false
}

// viewRows are GetTables' rows of the views that match cmd; with
// include_schema, each view's schema is its query's result as the engine
// describes it (an empty schema if the view no longer resolves, e.g. a
// table it reads was dropped).
func (s *Server) viewRows(ctx context.Context, cmd flightsql.GetTables) ([][]any, error) {
	views, err := s.store.Catalog().Views(ctx, "")
	if err != nil {
		return nil, err
	}
	var rows [][]any
	for _, v := range views {
		if !like(cmd.GetDBSchemaFilterPattern(), v.DB) || !like(cmd.GetTableNameFilterPattern(), v.Name) || !s.visible(ctx, catalog.ViewObject(v)) {
			continue
		}
		row := []any{catalogName, v.DB, v.Name, viewType}
		if cmd.GetIncludeSchema() {
			schema := emptySchema
			if s.engine != nil {
				ref := "SELECT * FROM " + catalog.TableName{DB: v.DB, Name: v.Name}.String()
				if res, _, err := s.engine.Describe(ctx, ref); err == nil && res != nil {
					schema = res
				}
			}
			row = append(row, flight.SerializeSchema(schema, s.opts.Mem))
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// sortTableRows orders GetTables rows as the Flight SQL spec asks: by
// catalog, schema, table name and table type.
func sortTableRows(rows [][]any) {
	key := func(r []any) [3]string { return [3]string{r[1].(string), r[2].(string), r[3].(string)} }
	sort.SliceStable(rows, func(i, j int) bool {
		a, b := key(rows[i]), key(rows[j])
		for k := range a {
			if a[k] != b[k] {
				return a[k] < b[k]
			}
		}
		return false
	})
}
