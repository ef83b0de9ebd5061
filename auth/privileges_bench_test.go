package auth

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/lakestream/lakestream/catalog"
)

// BenchmarkAuthorize is the privilege check of one call by a user that
// holds SELECT through a role (docs/benchmarks.md, "Security").
func BenchmarkAuthorize(b *testing.B) {
	ctx := context.Background()
	cat, err := catalog.Open(ctx, filepath.Join(b.TempDir(), "catalog.db"), catalog.Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer cat.Close()
	st, _ := catalog.Parse("CREATE TABLE t (a INT)")
	if _, err := cat.Exec(ctx, st); err != nil {
		b.Fatal(err)
	}
	u, _, _ := cat.CreateUser(ctx, "alice", "hash", false, false)
	ctx = WithIdentity(ctx, Identity{User: "alice", UserID: u.ID, Method: MethodToken})
	for _, sql := range []string{"CREATE ROLE readers", "GRANT SELECT ON TABLE t TO readers", "GRANT readers TO alice"} {
		st, _ := catalog.Parse(sql)
		if ok, err := ExecGrants(WithIdentity(context.Background(), Identity{Superuser: true}), cat, st); !ok || err != nil {
			b.Fatal(sql, err)
		}
	}
	b.ResetTimer()
	for range b.N {
		if err := Authorize(ctx, cat, catalog.PrivSelect, "", "t"); err != nil {
			b.Fatal(err)
		}
	}
}
