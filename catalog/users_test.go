package catalog

import (
	"context"
	"errors"
	"testing"
)

func TestParseUsers(t *testing.T) {
	for sql, want := range map[string]Statement{
		"CREATE USER alice WITH PASSWORD 's3cret'":            &CreateUser{Name: "alice", Password: "s3cret"},
		"create user if not exists \"Bob\" with password 'x'": &CreateUser{Name: "Bob", Password: "x", IfNotExists: true},
		"ALTER USER alice WITH PASSWORD 'it''s'":              &AlterUser{Name: "alice", Password: "it's"},
		"ALTER USER alice PASSWORD 'y';":                      &AlterUser{Name: "alice", Password: "y"},
		"DROP USER IF EXISTS alice":                           &DropUser{Name: "alice", IfExists: true},
	} {
		got, err := Parse(sql)
		if err != nil {
			t.Errorf("Parse(%q): %v", sql, err)
			continue
		}
		if g, w := describeStmt(got), describeStmt(want); g != w {
			t.Errorf("Parse(%q) = %s, want %s", sql, g, w)
		}
	}
	for _, sql := range []string{"CREATE USER alice", "CREATE USER alice WITH PASSWORD ''", "CREATE USER alice WITH PASSWORD secret"} {
		if _, err := Parse(sql); err == nil {
			t.Errorf("Parse(%q): no error", sql)
		}
	}
}

func describeStmt(s Statement) string {
	switch v := s.(type) {
	case *CreateUser:
		return "create " + v.Name + " " + v.Password + map[bool]string{true: " ine"}[v.IfNotExists]
	case *AlterUser:
		return "alter " + v.Name + " " + v.Password
	case *DropUser:
		return "drop " + v.Name + map[bool]string{true: " ie"}[v.IfExists]
	}
	return "?"
}

func TestRedactPasswords(t *testing.T) {
	for in, want := range map[string]string{
		"CREATE USER a WITH PASSWORD 'x''y'":  "CREATE USER a WITH PASSWORD '***'",
		"alter user a password 'p' -- c":      "alter user a password '***' -- c",
		"SELECT 'password'":                   "SELECT 'password'",
		"SELECT 1":                            "SELECT 1",
		"CREATE USER a WITH PASSWORD 'unterm": "CREATE USER a WITH PASSWORD ***",
	} {
		if got := RedactPasswords(in); got != want {
			t.Errorf("RedactPasswords(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestUsersStore(t *testing.T) { forEachBackend(t, testUsersStore) }

func testUsersStore(t *testing.T, b backend) {
	ctx := context.Background()
	path := b.fresh(t)
	c, err := b.openAt(ctx, path, Config{})
	if err != nil {
		t.Fatal(err)
	}
	u, created, err := c.CreateUser(ctx, "alice", "h1", false, false)
	if err != nil || !created || u.ID == 0 {
		t.Fatalf("CreateUser = %+v, %v, %v", u, created, err)
	}
	if _, _, err := c.CreateUser(ctx, "alice", "h2", false, false); !errors.Is(err, ErrUserExists) {
		t.Fatalf("second CreateUser: %v, want ErrUserExists", err)
	}
	u2, err := c.SetPassword(ctx, "alice", "h3")
	if err != nil || u2.Generation != 1 || u2.PasswordHash != "h3" {
		t.Fatalf("SetPassword = %+v, %v", u2, err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	c, err = b.openAt(ctx, path, Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got, ok := c.UserByID(u.ID)
	if !ok || got.Name != "alice" || got.Generation != 1 || got.PasswordHash != "h3" {
		t.Fatalf("after reopen: %+v, %v", got, ok)
	}
	if _, err := c.DropUser(ctx, "alice", false); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.User("alice"); ok {
		t.Fatal("alice still there after DropUser")
	}
	again, _, err := c.CreateUser(ctx, "alice", "h4", false, false)
	if err != nil || again.ID == u.ID {
		t.Fatalf("recreated alice: id %d (old %d), %v: want a new id", again.ID, u.ID, err)
	}
	if _, err := c.DropUser(ctx, "nobody", false); !errors.Is(err, ErrUserNotFound) {
		t.Fatalf("DropUser(nobody): %v", err)
	}
}
