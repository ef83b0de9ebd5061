package catalog

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestParseGrants(t *testing.T) {
	for sql, want := range map[string]string{
		"CREATE ROLE analysts":                                 "&{analysts false}",
		"create role if not exists r":                          "&{r true}",
		"DROP ROLE IF EXISTS r;":                               "&{r true}",
		"GRANT analysts, writers TO alice, bob":                "&{[analysts writers] [alice bob] false}",
		"REVOKE analysts FROM alice":                           "&{[analysts] [alice] true}",
		"GRANT SELECT ON TABLE t TO alice":                     "&{SELECT false 0 [t]  [alice] false}",
		"GRANT select, insert ON db.t, u TO r":                 "&{SELECT, INSERT false 0 [db.t u]  [r] false}",
		"GRANT ALL PRIVILEGES ON DATABASE sales TO r":          "&{ true 1 [] sales [r] false}",
		"GRANT CREATE ON SCHEMA sales TO r":                    "&{CREATE false 1 [] sales [r] false}",
		"REVOKE DELETE ON ALL TABLES IN DATABASE s FROM alice": "&{DELETE false 2 [] s [alice] true}",
		"REVOKE ALL ON t FROM alice":                           "&{ true 0 [t]  [alice] true}",
	} {
		got, err := Parse(sql)
		if err != nil {
			t.Errorf("Parse(%q): %v", sql, err)
			continue
		}
		if g := fmt.Sprint(got); g != want {
			t.Errorf("Parse(%q) = %s, want %s", sql, g, want)
		}
	}
	for _, sql := range []string{
		"GRANT SELECT ON TABLE t", "GRANT SELECT, analysts ON t TO a", "GRANT CREATE ON TABLE t TO a",
		"GRANT r FROM a", "REVOKE r TO a", "GRANT SELECT ON ALL TABLES t TO a", "GRANT TO a",
	} {
		if _, err := Parse(sql); err == nil {
			t.Errorf("Parse(%q): no error", sql)
		}
	}
}

// grantModel is the reference the catalog's grant state is compared with:
// names only, the rules written out plainly.
type grantModel struct {
	roles   map[string]bool
	members map[[2]string]bool // {role, member}
	privs   map[[2]string]Privilege
}

func (m *grantModel) closure(user string) []string {
	out := []string{user}
	for i := 0; i < len(out); i++ {
		for rm := range m.members {
			if rm[1] == out[i] && !slices.Contains(out, rm[0]) {
				out = append(out, rm[0])
			}
		}
	}
	return out
}

func (m *grantModel) held(user, obj, db string) Privilege {
	var p Privilege
	for _, who := range m.closure(user) {
		p |= m.privs[[2]string{who, obj}] | m.privs[[2]string{who, "db:" + db}]&^PrivCreate
	}
	return p
}

// Random CREATE/DROP ROLE, role membership and GRANT/REVOKE of
// privileges, compared after each step with the model, for every user
// and object; and again after the catalog is reopened; on both backends.
func TestGrantsModel(t *testing.T) { forEachBackend(t, testGrantsModel) }

func testGrantsModel(t *testing.T, b backend) {
	ctx := context.Background()
	c, path := b.newCatalog(t)
	var err error
	users := []string{"u1", "u2", "u3"}
	for _, u := range users {
		if _, _, err := c.CreateUser(ctx, u, "hash", false, false); err != nil {
			t.Fatal(err)
		}
	}
	objs := map[string]Object{}
	for _, name := range []string{"t1", "t2"} {
		st, _ := Parse("CREATE TABLE " + name + " (a INT)")
		res, err := c.Exec(ctx, st)
		if err != nil {
			t.Fatal(err)
		}
		objs[name] = TableObject(res.Table)
	}
	roles := []string{"r1", "r2", "r3"}
	m := &grantModel{roles: map[string]bool{}, members: map[[2]string]bool{}, privs: map[[2]string]Privilege{}}
	rng := rand.New(rand.NewPCG(7, 19))
	principal := func(name string) Principal {
		p, ok := c.PrincipalNamed(name)
		if !ok {
			t.Fatalf("no principal %s", name)
		}
		return p
	}
	compare := func(step int, what string) {
		t.Helper()
		for _, u := range users {
			uid := principal(u).ID
			for name, o := range objs {
				got, want := c.Grants().Held(uid, o), m.held(u, name, DefaultDatabase)
				if got != want {
					t.Fatalf("step %d (%s): %s holds %q on %s, model says %q", step, what, u, got, name, want)
				}
			}
		}
	}
	for step := range 1000 {
		r := roles[rng.IntN(len(roles))]
		var what string
		switch op := rng.IntN(10); op {
		case 0:
			what = "create role " + r
			if _, err := c.CreateRole(ctx, r, true); err != nil {
				t.Fatal(err)
			}
			m.roles[r] = true
		case 1:
			if rng.IntN(3) > 0 {
				continue
			}
			what = "drop role " + r
			if _, err := c.DropRole(ctx, r, true); err != nil {
				t.Fatal(err)
			}
			delete(m.roles, r)
			for k := range m.members {
				if k[0] == r || k[1] == r {
					delete(m.members, k)
				}
			}
			for k := range m.privs {
				if k[0] == r {
					delete(m.privs, k)
				}
			}
		case 2, 3, 4, 5:
			member := append(users, roles...)[rng.IntN(len(users)+len(roles))]
			revoke := op == 5
			what = fmt.Sprintf("grant %s to %s (revoke %v)", r, member, revoke)
			if !m.roles[r] || (slices.Contains(roles, member) && !m.roles[member]) {
				continue
			}
			p := principal(member)
			if revoke {
				if err := c.RevokeRole(ctx, r, p); err != nil {
					t.Fatal(err)
				}
				delete(m.members, [2]string{r, member})
				break
			}
			err := c.GrantRole(ctx, r, p)
			cycle := p.Role && slices.Contains(m.closure(r), member)
			if cycle != (err != nil) {
				t.Fatalf("step %d: %s: %v, model says cycle %v", step, what, err, cycle)
			}
			if err == nil {
				m.members[[2]string{r, member}] = true
			}
		default:
			grantee := append(users, roles...)[rng.IntN(len(users)+len(roles))]
			if slices.Contains(roles, grantee) && !m.roles[grantee] {
				continue
			}
			objName, o := "db:"+DefaultDatabase, DatabaseObject("")
			if rng.IntN(3) > 0 {
				objName = []string{"t1", "t2"}[rng.IntN(2)]
				o = objs[objName]
			}
			privs := Privilege(1 + rng.IntN(int(PrivAllTable)))
			key := [2]string{grantee, objName}
			what = fmt.Sprintf("privileges %s on %s to %s", privs, objName, grantee)
			if op < 8 {
				err = c.GrantPrivileges(ctx, principal(grantee), []Object{o}, privs)
				m.privs[key] |= privs
			} else {
				err = c.RevokePrivileges(ctx, principal(grantee), []Object{o}, privs)
				m.privs[key] &^= privs
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		compare(step, what)
		if step%250 == 249 {
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			c = b.open(t, path)
			defer c.Close()
			compare(step, "reopened")
		}
	}
}

// An owner holds every privilege on what it owns, after a reopen too; a
// table dropped and created again under its name is another object, which
// neither its grants nor its owner reach; on both backends.
func TestGrantsOwnerAndRecreate(t *testing.T) { forEachBackend(t, testGrantsOwnerAndRecreate) }

func testGrantsOwnerAndRecreate(t *testing.T, b backend) {
	ctx := context.Background()
	c, path := b.newCatalog(t)
	u, _, _ := c.CreateUser(ctx, "alice", "hash", false, false)
	st, _ := Parse("CREATE TABLE t (a INT)")
	res, _ := c.Exec(ctx, st)
	o := TableObject(res.Table)
	if err := c.SetOwner(ctx, o, u.ID); err != nil {
		t.Fatal(err)
	}
	if err := c.GrantPrivileges(ctx, Principal{ID: u.ID}, []Object{DatabaseObject("")}, PrivCreate); err != nil {
		t.Fatal(err)
	}
	c.Close()
	c = b.open(t, path)
	defer c.Close()
	if got := c.Grants().Held(u.ID, o); got != PrivAllTable {
		t.Fatalf("owner holds %q", got)
	}
	if got := c.Grants().Held(u.ID, DatabaseObject("")); got != PrivCreate {
		t.Fatalf("CREATE on the database: held %q", got)
	}
	if _, err := c.DropTable(ctx, "", "t", false); err != nil {
		t.Fatal(err)
	}
	res, _ = c.Exec(ctx, st)
	if got := c.Grants().Held(u.ID, TableObject(res.Table)); got != 0 {
		t.Fatalf("the table made again: alice holds %q", got)
	}
	st, _ = Parse("CREATE DATABASE d")
	if _, err := c.Exec(ctx, st); err != nil {
		t.Fatal(err)
	}
	if err := c.GrantPrivileges(ctx, Principal{ID: u.ID}, []Object{DatabaseObject("d")}, PrivSelect); err != nil {
		t.Fatal(err)
	}
	if err := c.ForgetDatabase(ctx, "d"); err != nil {
		t.Fatal(err)
	}
	if got := c.Grants().Held(u.ID, DatabaseObject("d")); got != 0 {
		t.Fatalf("a dropped database's privileges: held %q", got)
	}
	if got := c.Grants().Held(u.ID, DatabaseObject("")); got != PrivCreate {
		t.Fatalf("forgetting d took the default database's privileges: held %q", got)
	}
	if _, err := c.CreateRole(ctx, "readers", false); err != nil {
		t.Fatal(err)
	}
	if err := c.GrantRole(ctx, "readers", Principal{ID: u.ID}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.DropUser(ctx, "alice", false); err != nil {
		t.Fatal(err)
	}
	c.Close()
	c = b.open(t, path)
	defer c.Close()
	for _, g := range c.Grants().List() {
		if g.Grantee == (Principal{ID: u.ID}) {
			t.Fatalf("a dropped user's privilege is left: %+v", g)
		}
	}
	if roles := c.Grants().MemberOf(Principal{ID: u.ID}); len(roles) != 0 {
		t.Fatalf("a dropped user is left a member of %v", roles)
	}
	if _, _, err := c.CreateUser(ctx, "r", "h", false, false); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateRole(ctx, "r", false); err == nil {
		t.Fatal("a role with a user's name was created")
	}
}
