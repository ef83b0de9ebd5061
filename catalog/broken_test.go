package catalog

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
)

// storeRaw changes a closed catalog's SQLite file directly, as an older
// release (or damage) could have left it.
func storeRaw(t *testing.T, path, stmt string, args ...any) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(stmt, args...); err != nil {
		t.Fatalf("%s: %v", stmt, err)
	}
}

// A stored definition that breaks the limits (a type nested 10,000 deep,
// saved before there were limits) or does not decode does not stop the
// catalog from opening: the table is reported broken, its name stays
// taken, and DROP TABLE removes it.
func TestBrokenDefinitionsLoadAsBroken(t *testing.T) {
	forEachBackend(t, testBrokenDefinitionsLoadAsBroken)
}

func testBrokenDefinitionsLoadAsBroken(t *testing.T, b backend) {
	c, path := b.newCatalog(t)
	ctx := context.Background()
	exec(t, c, "CREATE TABLE deep (c INT)")
	exec(t, c, "CREATE TABLE garbled (c INT)")
	exec(t, c, "CREATE TABLE good (c INT)")
	exec(t, c, "CREATE DATABASE other")
	exec(t, c, "CREATE TABLE other.deep2 (c INT)")
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	deep := `[{"name":"c","type":"` + strings.Repeat("STRUCT(a ", 10000) + "INT" + strings.Repeat(")", 10000) + `"}]`
	b.raw(t, path, `UPDATE table_schemas SET columns = ? WHERE table_id IN (SELECT id FROM tables WHERE name IN ('deep', 'deep2'))`, deep)
	b.raw(t, path, `UPDATE tables SET options = '{' WHERE name = 'garbled'`)

	c = b.open(t, path)
	defer c.Close()
	broken, err := c.BrokenTables(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, b := range broken {
		names = append(names, b.FullName())
	}
	if strings.Join(names, " ") != "default.deep default.garbled other.deep2" {
		t.Fatalf("broken tables %v", names)
	}
	if !strings.Contains(broken[0].Err.Error(), "deeper than the limit of 32 levels") {
		t.Errorf("deep table's reason: %v", broken[0].Err)
	}
	all, _ := c.AllTables(ctx)
	if len(all) != 1 || all[0].Name != "good" {
		t.Errorf("AllTables = %v, want only good", all)
	}
	if _, err := c.Table(ctx, "", "deep"); !errors.Is(err, ErrDefinitionBroken) || !strings.Contains(err.Error(), "DROP TABLE removes it") {
		t.Errorf("Table(deep): %v", err)
	}
	if _, err := c.TableByID(ctx, broken[1].ID); !errors.Is(err, ErrDefinitionBroken) {
		t.Errorf("TableByID(garbled): %v", err)
	}
	if err := execErr(t, c, "CREATE TABLE deep (c INT)"); !errors.Is(err, ErrTableExists) {
		t.Errorf("CREATE TABLE over a broken table: %v, want ErrTableExists", err)
	}
	if err := execErr(t, c, "DROP DATABASE other"); !errors.Is(err, ErrDatabaseNotEmpty) {
		t.Errorf("DROP DATABASE holding a broken table: %v, want ErrDatabaseNotEmpty", err)
	}
	res := exec(t, c, "DROP TABLE deep")
	if len(res.Dropped) != 1 || res.Dropped[0].ID != broken[0].ID {
		t.Errorf("DROP TABLE deep dropped %v", res.Dropped)
	}
	if res := exec(t, c, "DROP DATABASE other CASCADE"); len(res.Dropped) != 1 || res.Dropped[0].ID != broken[2].ID {
		t.Errorf("DROP DATABASE other CASCADE dropped %v, want the broken deep2", res.Dropped)
	}
	exec(t, c, "CREATE TABLE deep (c INT)")
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	c = b.open(t, path)
	defer c.Close()
	broken, _ = c.BrokenTables(ctx)
	if len(broken) != 1 || broken[0].Name != "garbled" {
		t.Errorf("after the drops and a reopen, broken = %v", broken)
	}
	if _, err := c.Table(ctx, "", "deep"); err != nil {
		t.Errorf("re-created deep: %v", err)
	}
}
