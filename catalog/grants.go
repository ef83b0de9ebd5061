package catalog

import (
	"errors"
	"maps"
	"slices"
	"sort"
	"strings"
)

// Privileges, roles and owners (docs/security.md, "Authorization"). The
// catalog stores them and answers what a user holds on an object; it
// decides nothing about who may do what with a statement: that is package
// auth's (auth.Authorize), the one check every path calls.

// ErrRoleExists and ErrRoleNotFound are the kinds of the role errors.
var (
	ErrRoleExists   = errors.New("role already exists")
	ErrRoleNotFound = errors.New("role not found")
)

// Privilege is a set of privileges, a bit each.
type Privilege uint16

// The privileges. CREATE applies to databases only (creating tables and
// views in them); the others to tables and views, or, granted on a
// database, to every table and view in it.
const (
	PrivSelect Privilege = 1 << iota
	PrivInsert
	PrivUpdate
	PrivDelete
	PrivAlter
	PrivDrop
	PrivCreate

	// PrivAllTable is ALL [PRIVILEGES] on a table.
	PrivAllTable = PrivSelect | PrivInsert | PrivUpdate | PrivDelete | PrivAlter | PrivDrop
	// PrivAllDatabase is ALL [PRIVILEGES] on a database.
	PrivAllDatabase = PrivAllTable | PrivCreate
)

var privNames = []string{"SELECT", "INSERT", "UPDATE", "DELETE", "ALTER", "DROP", "CREATE"}

// String lists the privileges as SQL writes them: "SELECT, INSERT".
func (p Privilege) String() string {
	var names []string
	for i, n := range privNames {
		if p&(1<<i) != 0 {
			names = append(names, n)
		}
	}
	return strings.Join(names, ", ")
}

// privilegeNamed returns the privilege of a keyword (lower case).
func privilegeNamed(kw string) (Privilege, bool) {
	for i, n := range privNames {
		if strings.EqualFold(n, kw) {
			return 1 << i, true
		}
	}
	return 0, false
}

// ObjectKind is what an Object is.
type ObjectKind string

// The kinds of objects privileges are held on.
const (
	ObjectTable    ObjectKind = "table"
	ObjectView     ObjectKind = "view"
	ObjectDatabase ObjectKind = "database"
)

// SystemDatabase holds the system tables (lakestream.tiering,
// lakestream.nodes), which are not in the catalog: privileges on them name
// them with ID 0.
const SystemDatabase = "lakestream"

// Object is what a privilege is held on. A table's or view's ID is part
// of it: a table dropped and created again under the same name is another
// object, which the old grants do not reach. A database has ID 0, as
// have the system tables.
type Object struct {
	Kind ObjectKind
	DB   string
	Name string // "" for a database
	ID   int64
}

// String names the object as PostgreSQL's messages do: `table "db.t"`.
func (o Object) String() string {
	if o.Kind == ObjectDatabase {
		return "database " + quoteName(o.DB)
	}
	return string(o.Kind) + " " + quoteName(o.DB+"."+o.Name)
}

// TableObject returns the object of table t.
func TableObject(t *Table) Object { return Object{Kind: ObjectTable, DB: t.DB, Name: t.Name, ID: t.ID} }

// ViewObject returns the object of view v.
func ViewObject(v *View) Object { return Object{Kind: ObjectView, DB: v.DB, Name: v.Name, ID: v.ID} }

// DatabaseObject returns the object of database db.
func DatabaseObject(db string) Object { return Object{Kind: ObjectDatabase, DB: dbOrDefault(db)} }

// SystemObject returns the object of the system table lakestream.name.
func SystemObject(name string) Object {
	return Object{Kind: ObjectTable, DB: SystemDatabase, Name: strings.ToLower(name)}
}

// Role is a named set of privileges that users (and other roles) are
// granted membership of. Immutable.
type Role struct {
	// ID is never reused, like a user's.
	ID   int64
	Name string
}

// Principal is who holds privileges: a user or a role, by ID.
type Principal struct {
	Role bool
	ID   int64
}

// Grant is one grantee's privileges on one object.
type Grant struct {
	Grantee    Principal
	Object     Object
	Privileges Privilege
}

type grantKey struct {
	grantee Principal
	object  Object
}

// Grants is an immutable copy of the roles, memberships, privileges and
// owners, replaced after each change: a privilege check reads it without
// a lock.
type Grants struct {
	roles     map[string]*Role
	rolesByID map[int64]*Role
	// memberOf are the roles each principal is a direct member of.
	memberOf map[Principal][]int64
	privs    map[grantKey]Privilege
	// owners are the owning users of tables and views.
	owners map[Object]int64
}

func emptyGrants() *Grants {
	return &Grants{roles: map[string]*Role{}, rolesByID: map[int64]*Role{}, memberOf: map[Principal][]int64{},
		privs: map[grantKey]Privilege{}, owners: map[Object]int64{}}
}

func (g *Grants) clone() *Grants {
	n := &Grants{roles: maps.Clone(g.roles), rolesByID: maps.Clone(g.rolesByID), memberOf: maps.Clone(g.memberOf),
		privs: maps.Clone(g.privs), owners: maps.Clone(g.owners)}
	return n
}

// Role returns the role named name.
func (g *Grants) Role(name string) (*Role, bool) {
	r, ok := g.roles[name]
	return r, ok
}

// Roles returns every role, by name.
func (g *Grants) Roles() []*Role {
	out := slices.Collect(maps.Values(g.roles))
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// RoleByID returns the role with id.
func (g *Grants) RoleByID(id int64) (*Role, bool) {
	r, ok := g.rolesByID[id]
	return r, ok
}

// MemberOf returns the roles p is a direct member of, by ID.
func (g *Grants) MemberOf(p Principal) []int64 { return g.memberOf[p] }

// Owner returns the user owning a table or view.
func (g *Grants) Owner(o Object) (int64, bool) {
	u, ok := g.owners[o]
	return u, ok
}

// Principals returns user and every role it is a member of, directly or
// through other roles.
func (g *Grants) Principals(user int64) []Principal {
	out := []Principal{{ID: user}}
	for i := 0; i < len(out); i++ {
		for _, r := range g.memberOf[out[i]] {
			p := Principal{Role: true, ID: r}
			if !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	return out
}

// Held returns the privileges user holds on o: granted on o itself or on
// its database, to the user or to a role it is a member of, transitively;
// an owner holds every privilege on what it owns. It says nothing about
// superusers, who need no privileges (auth.Authorize).
func (g *Grants) Held(user int64, o Object) Privilege {
	if owner, ok := g.owners[o]; ok && owner == user && o.Kind != ObjectDatabase {
		return PrivAllTable
	}
	db := DatabaseObject(o.DB)
	var held Privilege
	for _, p := range g.Principals(user) {
		held |= g.privs[grantKey{p, o}]
		if o.Kind != ObjectDatabase {
			held |= g.privs[grantKey{p, db}] &^ PrivCreate
		}
	}
	return held
}

// List returns every grant, ordered by grantee (users first) and object.
func (g *Grants) List() []Grant {
	out := make([]Grant, 0, len(g.privs))
	for k, v := range g.privs {
		out = append(out, Grant{Grantee: k.grantee, Object: k.object, Privileges: v})
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Grantee != b.Grantee {
			if a.Grantee.Role != b.Grantee.Role {
				return !a.Grantee.Role
			}
			return a.Grantee.ID < b.Grantee.ID
		}
		if a.Object.DB != b.Object.DB {
			return a.Object.DB < b.Object.DB
		}
		return a.Object.Name < b.Object.Name
	})
	return out
}

// reaches reports whether role from is role to or has it among its roles,
// transitively: granting to's membership to from would then make a cycle.
func (g *Grants) reaches(from, to int64) bool {
	seen := map[int64]bool{}
	stack := []int64{from}
	for len(stack) > 0 {
		r := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if r == to {
			return true
		}
		if seen[r] {
			continue
		}
		seen[r] = true
		stack = append(stack, g.memberOf[Principal{Role: true, ID: r}]...)
	}
	return false
}

// Owned is one object and its owner.
type Owned struct {
	Object Object
	Owner  int64
}

// Owned returns every table and view with an owner, by database and name.
func (g *Grants) Owned() []Owned {
	out := make([]Owned, 0, len(g.owners))
	for o, u := range g.owners {
		out = append(out, Owned{Object: o, Owner: u})
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].Object, out[j].Object
		if a.DB != b.DB {
			return a.DB < b.DB
		}
		return a.Name < b.Name
	})
	return out
}

// Members returns every principal that is a member of some role.
func (g *Grants) Members() []Principal {
	out := make([]Principal, 0, len(g.memberOf))
	for p, roles := range g.memberOf {
		if len(roles) > 0 {
			out = append(out, p)
		}
	}
	return out
}
