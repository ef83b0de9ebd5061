package catalog

import (
	"context"
	goparser "go/parser"
	gotoken "go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestDurabilitySettings checks that the connection really runs with the
// settings the DSN asks for.
func TestDurabilitySettings(t *testing.T) {
	c, _ := newTestCatalog(t)
	ctx := context.Background()
	for pragma, want := range map[string]string{
		"journal_mode": "wal",
		"synchronous":  "2", // FULL
		"foreign_keys": "1",
		"locking_mode": "exclusive",
		"busy_timeout": "50",
	} {
		var got string
		if err := c.db.QueryRowContext(ctx, "PRAGMA "+pragma).Scan(&got); err != nil {
			t.Fatalf("PRAGMA %s: %v", pragma, err)
		}
		if strings.ToLower(got) != want {
			t.Errorf("PRAGMA %s = %s, want %s", pragma, got, want)
		}
	}
	var version int
	if err := c.db.QueryRowContext(ctx, "SELECT MAX(version) FROM schema_migrations").Scan(&version); err != nil || version != len(migrations) {
		t.Errorf("schema version %d, %v; want %d", version, err, len(migrations))
	}
}

// TestImports keeps the package map of docs/architecture.md: catalog imports only the standard
// library, arrow-go, the SQLite driver and pgx; its tests also start PostgreSQL with
// internal/pgtest, which imports no project package.
func TestImports(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range files {
		f, err := goparser.ParseFile(gotoken.NewFileSet(), name, nil, goparser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path := strings.Trim(imp.Path.Value, `"`)
			first := strings.Split(path, "/")[0]
			allowed := !strings.Contains(first, ".") ||
				strings.HasPrefix(path, "github.com/apache/arrow-go/v18/") || path == "modernc.org/sqlite" ||
				strings.HasPrefix(path, "github.com/jackc/pgx/v5") ||
				strings.HasSuffix(name, "_test.go") && path == "github.com/lakestream/lakestream/internal/pgtest"
			if !allowed {
				t.Errorf("%s imports %s", name, path)
			}
		}
	}
}
