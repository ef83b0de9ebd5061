package catalog

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
)

// BenchmarkCreateDropTable measures one CREATE TABLE and one DROP TABLE,
// the write path that every DDL statement takes: on a SQLite file, and on
// PostgreSQL (the test server runs with fsync=off, so the figure is the
// round trips and the counter's lock, not the disk).
func BenchmarkCreateDropTable(b *testing.B) {
	ctx := context.Background()
	for _, bk := range []struct {
		name string
		open func(b *testing.B) (*Catalog, error)
	}{
		{"sqlite", func(b *testing.B) (*Catalog, error) {
			return Open(ctx, filepath.Join(b.TempDir(), "catalog.db"), Config{})
		}},
		{"postgres", func(b *testing.B) (*Catalog, error) { return OpenPostgres(ctx, freshPostgres(b), Config{}) }},
	} {
		b.Run(bk.name, func(b *testing.B) {
			c, err := bk.open(b)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			for i := 0; b.Loop(); i++ {
				name := fmt.Sprintf("t%d", i)
				if _, err := c.CreateTable(ctx, &CreateTable{Table: TableName{Name: name}, Columns: []Column{{Name: "a", Type: Prim(KindInteger)}}}); err != nil {
					b.Fatal(err)
				}
				if _, err := c.DropTable(ctx, "", name, false); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
