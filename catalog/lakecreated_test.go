package catalog

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
)

// SetLakeCreated is recorded once, kept across ADD COLUMN and a reopen.
func TestSetLakeCreated(t *testing.T) { forEachBackend(t, testSetLakeCreated) }

func testSetLakeCreated(t *testing.T, b backend) {
	c, path := b.newCatalog(t)
	ctx := context.Background()
	tbl := exec(t, c, "CREATE TABLE t (a INT)").Table
	if !tbl.LakeCreatedAt.IsZero() {
		t.Fatalf("new table has LakeCreatedAt %v", tbl.LakeCreatedAt)
	}
	got, err := c.SetLakeCreated(ctx, tbl.ID)
	if err != nil || got.LakeCreatedAt.IsZero() {
		t.Fatalf("SetLakeCreated: %v, %v", got, err)
	}
	first := got.LakeCreatedAt
	if again, err := c.SetLakeCreated(ctx, tbl.ID); err != nil || !again.LakeCreatedAt.Equal(first) {
		t.Errorf("second SetLakeCreated: %v, %v; want the first time kept", again, err)
	}
	exec(t, c, "ALTER TABLE t ADD COLUMN b INT")
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	c = b.open(t, path)
	defer c.Close()
	tbl, err = c.Table(ctx, "", "t")
	if err != nil || !tbl.LakeCreatedAt.Equal(first) || tbl.SchemaID != 1 {
		t.Errorf("after ADD COLUMN and a reopen: %+v, %v; want LakeCreatedAt %v", tbl, err, first)
	}
}

// A catalog of schema version 1 migrates: its tables have no record of
// their lake tables.
func TestMigrateFromVersion1(t *testing.T) {
	path := filepath.Join(t.TempDir(), "catalog.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	stmts := append([]string{
		`CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL)`,
		`INSERT INTO schema_migrations VALUES (1, 0)`,
	}, migrations[0].sqlite...)
	stmts = append(stmts,
		`INSERT INTO tables (db, name, schema_id, primary_key, partition_spec, options, raw_options, created_at)
			VALUES ('default', 'old', 0, '[]', '[]', '{"bucket_num":1}', '{}', 0)`,
		`INSERT INTO table_schemas VALUES (1, 0, '[{"name":"a","type":"INTEGER"}]', 0)`)
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	db.Close()
	c := openTest(t, path)
	defer c.Close()
	tbl, err := c.Table(context.Background(), "", "old")
	if err != nil || !tbl.LakeCreatedAt.IsZero() {
		t.Fatalf("old table after migration: %+v, %v", tbl, err)
	}
	if _, err := c.SetLakeCreated(context.Background(), tbl.ID); err != nil {
		t.Errorf("SetLakeCreated after migration: %v", err)
	}
}
