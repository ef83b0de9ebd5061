package catalog

import (
	"fmt"
	"strings"
)

// describe renders everything a *Table holds, for golden files and for
// comparing tables (reflect.DeepEqual would compare Arrow's internal caches).
func describe(t *Table) string {
	var b strings.Builder
	fmt.Fprintf(&b, "id: %d\nname: %s\ncreated: %s\nschema id: %d\n", t.ID, t.FullName(), t.CreatedAt.Format("2006-01-02T15:04:05.999999Z07:00"), t.SchemaID)
	fmt.Fprintf(&b, "primary key: %q\npartition: %v\n", t.PrimaryKey, t.Partition)
	fmt.Fprintf(&b, "options: %+v\nraw options: %v\n", t.Options, t.RawOptions)
	fmt.Fprintf(&b, "bucket key indexes: %v\n", t.BucketKeyIndexes())
	for _, s := range t.Schemas() {
		fmt.Fprintf(&b, "schema %d (created %s):\n", s.ID, s.CreatedAt.Format("2006-01-02T15:04:05Z07:00"))
		for _, c := range s.Columns {
			fmt.Fprintf(&b, "  %s %s not_null=%v\n", c.Name, c.Type, c.NotNull)
		}
		for _, f := range s.Arrow().Fields() {
			fmt.Fprintf(&b, "  arrow %s: %s nullable=%v\n", f.Name, f.Type, f.Nullable)
		}
	}
	fmt.Fprintf(&b, "ddl:\n%s\n", t.DDL())
	return b.String()
}
