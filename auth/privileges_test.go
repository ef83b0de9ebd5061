package auth

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/lakestream/lakestream/catalog"
)

// Authorize: no identity is Unauthenticated; a superuser passes; a user
// holds what it was granted, on the table, on its database, or through a
// role; a layer of a table ("t$lake", "t$changelog") is the table; a
// system table is granted by name; a name that names nothing passes (the
// caller's lookup reports it missing).
func TestAuthorize(t *testing.T) {
	ctx := context.Background()
	cat, err := catalog.Open(ctx, filepath.Join(t.TempDir(), "catalog.db"), catalog.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	for _, sql := range []string{"CREATE TABLE t (a INT)", "CREATE TABLE u (a INT)", "CREATE DATABASE d", "CREATE TABLE d.x (a INT)"} {
		st, _ := catalog.Parse(sql)
		if _, err := cat.Exec(ctx, st); err != nil {
			t.Fatal(err)
		}
	}
	alice, _, _ := cat.CreateUser(ctx, "alice", "hash", false, false)
	admin := WithIdentity(ctx, Identity{Superuser: true})
	for _, sql := range []string{
		"CREATE ROLE r", "GRANT r TO alice", "GRANT SELECT ON TABLE t TO r",
		"GRANT INSERT ON DATABASE d TO alice", "GRANT SELECT ON TABLE lakestream.tiering TO alice",
	} {
		st, _ := catalog.Parse(sql)
		if ok, err := ExecGrants(admin, cat, st); !ok || err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	as := WithIdentity(ctx, Identity{User: "alice", UserID: alice.ID, Method: MethodToken})
	for _, tc := range []struct {
		ctx      context.Context
		priv     catalog.Privilege
		db, name string
		want     error
	}{
		{ctx, catalog.PrivSelect, "", "t", ErrUnauthenticated},
		{admin, catalog.PrivDrop, "", "u", nil},
		{as, catalog.PrivSelect, "", "t", nil},
		{as, catalog.PrivSelect, "default", "t$lake", nil},
		{as, catalog.PrivSelect, "", "t$changelog", nil},
		{as, catalog.PrivInsert, "", "t", ErrPermissionDenied},
		{as, catalog.PrivSelect, "", "u", ErrPermissionDenied},
		{as, catalog.PrivInsert, "d", "x", nil},
		{as, catalog.PrivSelect, "d", "x", ErrPermissionDenied},
		{as, catalog.PrivSelect, "lakestream", "tiering", nil},
		{as, catalog.PrivSelect, "lakestream", "nodes", ErrPermissionDenied},
		{as, catalog.PrivSelect, "", "nothere", nil},
	} {
		err := Authorize(tc.ctx, cat, tc.priv, tc.db, tc.name)
		if (tc.want == nil) != (err == nil) || (tc.want != nil && !errors.Is(err, tc.want)) {
			t.Errorf("%s on %s.%s: %v, want %v", tc.priv, tc.db, tc.name, err, tc.want)
		}
	}
	err = Authorize(as, cat, catalog.PrivSelect, "", "u")
	if want := `permission denied for table "default.u": user "alice" needs SELECT on it (GRANT SELECT ON TABLE default.u TO alice)`; err == nil || err.Error() != want {
		t.Errorf("the refusal reads %q, want %q", err, want)
	}
}
