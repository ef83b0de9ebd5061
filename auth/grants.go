package auth

import (
	"context"
	"fmt"
	"sort"

	"github.com/lakestream/lakestream/catalog"
)

// Grantor is where roles and privileges are stored (*catalog.Catalog).
type Grantor interface {
	Objects
	Tables(ctx context.Context, db string) ([]*catalog.Table, error)
	Views(ctx context.Context, db string) ([]*catalog.View, error)
	PrincipalNamed(name string) (catalog.Principal, bool)
	PrincipalName(p catalog.Principal) string
	CreateRole(ctx context.Context, name string, ifNotExists bool) (bool, error)
	DropRole(ctx context.Context, name string, ifExists bool) (bool, error)
	GrantRole(ctx context.Context, role string, member catalog.Principal) error
	RevokeRole(ctx context.Context, role string, member catalog.Principal) error
	GrantPrivileges(ctx context.Context, grantee catalog.Principal, objs []catalog.Object, privs catalog.Privilege) error
	RevokePrivileges(ctx context.Context, grantee catalog.Principal, objs []catalog.Object, privs catalog.Privilege) error
}

// ExecGrants applies a statement of roles and privileges (CREATE ROLE,
// DROP ROLE, GRANT, REVOKE) for the identity in ctx; ok is false for any
// other statement. Roles and database privileges are a superuser's to
// manage; the privileges on a table or view also its owner's.
func ExecGrants(ctx context.Context, g Grantor, stmt catalog.Statement) (ok bool, err error) {
	switch stmt.(type) {
	case *catalog.CreateRole, *catalog.DropRole, *catalog.GrantRoles, *catalog.GrantPrivileges:
	default:
		return false, nil
	}
	who, found := FromContext(ctx)
	if !found {
		return true, fmt.Errorf("%w: no identity", ErrUnauthenticated)
	}
	switch st := stmt.(type) {
	case *catalog.CreateRole:
		if !who.Superuser {
			return true, fmt.Errorf("%w to create role: only a superuser (admin) may", ErrPermissionDenied)
		}
		_, err := g.CreateRole(ctx, st.Name, st.IfNotExists)
		return true, err
	case *catalog.DropRole:
		if !who.Superuser {
			return true, fmt.Errorf("%w to drop role: only a superuser (admin) may", ErrPermissionDenied)
		}
		_, err := g.DropRole(ctx, st.Name, st.IfExists)
		return true, err
	case *catalog.GrantRoles:
		return true, execGrantRoles(ctx, g, who, st)
	case *catalog.GrantPrivileges:
		return true, execGrantPrivileges(ctx, g, who, st)
	}
	return true, nil
}

func execGrantRoles(ctx context.Context, g Grantor, who Identity, st *catalog.GrantRoles) error {
	if !who.Superuser {
		return fmt.Errorf("%w to grant or revoke role membership: only a superuser (admin) may", ErrPermissionDenied)
	}
	members, err := principals(g, st.Members)
	if err != nil {
		return err
	}
	for _, r := range st.Roles {
		if _, ok := g.Grants().Role(r); !ok {
			return fmt.Errorf("%w", roleMissing(r))
		}
		for _, m := range members {
			if st.Revoke {
				err = g.RevokeRole(ctx, r, m)
			} else {
				err = g.GrantRole(ctx, r, m)
			}
			if err != nil {
				return err
			}
		}
	}
	return nil
}

func execGrantPrivileges(ctx context.Context, g Grantor, who Identity, st *catalog.GrantPrivileges) error {
	grantees, err := principals(g, st.Grantees)
	if err != nil {
		return err
	}
	objs, err := grantObjects(ctx, g, st)
	if err != nil {
		return err
	}
	for _, o := range objs {
		if who.Superuser {
			break
		}
		if owner, ok := g.Grants().Owner(o); !ok || owner != who.UserID || o.Kind == catalog.ObjectDatabase {
			return fmt.Errorf("%w for %s: only its owner or a superuser may grant privileges on it", ErrPermissionDenied, o)
		}
	}
	privs := st.Privileges
	if st.All {
		privs = catalog.PrivAllTable
		if st.Target == catalog.TargetDatabase {
			privs = catalog.PrivAllDatabase
		}
	}
	for _, p := range grantees {
		if st.Revoke {
			err = g.RevokePrivileges(ctx, p, objs, privs)
		} else {
			err = g.GrantPrivileges(ctx, p, objs, privs)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// grantObjects resolves a grant's target to objects.
func grantObjects(ctx context.Context, g Grantor, st *catalog.GrantPrivileges) ([]catalog.Object, error) {
	switch st.Target {
	case catalog.TargetDatabase:
		if _, err := g.Tables(ctx, st.DB); err != nil {
			return nil, err // the database does not exist
		}
		return []catalog.Object{catalog.DatabaseObject(st.DB)}, nil
	case catalog.TargetAllTablesIn:
		ts, err := g.Tables(ctx, st.DB)
		if err != nil {
			return nil, err
		}
		vs, err := g.Views(ctx, st.DB)
		if err != nil {
			return nil, err
		}
		var out []catalog.Object
		for _, t := range ts {
			out = append(out, catalog.TableObject(t))
		}
		for _, v := range vs {
			out = append(out, catalog.ViewObject(v))
		}
		return out, nil
	}
	out := make([]catalog.Object, 0, len(st.Tables))
	for _, t := range st.Tables {
		o, ok := Resolve(ctx, g, t.DB, t.Name)
		if !ok {
			return nil, fmt.Errorf("%w: relation %s does not exist", catalog.ErrTableNotFound, t)
		}
		out = append(out, o)
	}
	return out, nil
}

func principals(g Grantor, names []string) ([]catalog.Principal, error) {
	out := make([]catalog.Principal, len(names))
	for i, n := range names {
		p, ok := g.PrincipalNamed(n)
		if !ok {
			return nil, roleMissing(n)
		}
		out[i] = p
	}
	return out, nil
}

func roleMissing(name string) error {
	return fmt.Errorf("%w: role %q does not exist", catalog.ErrRoleNotFound, name)
}

// GrantColumns are the columns of SHOW GRANTS' rows.
var GrantColumns = []string{"grantee", "grantee_type", "object_type", "database", "name", "privileges"}

// ShowGrants returns the rows of SHOW GRANTS [FOR name]: the privileges
// granted to the principal, its role memberships (object_type "role",
// privileges "MEMBER") and what it owns ("OWNER"). Without a name a
// superuser sees every principal's, anyone else its own; FOR another
// principal than oneself or one of one's roles needs a superuser.
func ShowGrants(ctx context.Context, g Grantor, forName string) ([][]any, error) {
	who, ok := FromContext(ctx)
	if !ok {
		return nil, fmt.Errorf("%w: no identity", ErrUnauthenticated)
	}
	gs := g.Grants()
	var of map[catalog.Principal]bool // nil: every principal
	switch {
	case forName != "":
		p, ok := g.PrincipalNamed(forName)
		if !ok {
			return nil, roleMissing(forName)
		}
		if !who.Superuser && !containsPrincipal(gs.Principals(who.UserID), p) {
			return nil, fmt.Errorf("%w to show the grants of %q: only a superuser may show another's", ErrPermissionDenied, forName)
		}
		of = map[catalog.Principal]bool{p: true}
	case !who.Superuser:
		of = map[catalog.Principal]bool{{ID: who.UserID}: true}
	}
	var rows [][]any
	add := func(p catalog.Principal, kind, db, name, privs string) {
		if of != nil && !of[p] {
			return
		}
		if n := g.PrincipalName(p); n != "" {
			typ := "user"
			if p.Role {
				typ = "role"
			}
			rows = append(rows, []any{n, typ, kind, db, name, privs})
		}
	}
	for _, gr := range gs.List() {
		if live(ctx, g, gr.Object) {
			add(gr.Grantee, string(gr.Object.Kind), gr.Object.DB, gr.Object.Name, gr.Privileges.String())
		}
	}
	for _, p := range memberships(g, gs) {
		for _, r := range gs.MemberOf(p) {
			if role, ok := gs.RoleByID(r); ok {
				add(p, "role", "", role.Name, "MEMBER")
			}
		}
	}
	for _, o := range gs.Owned() {
		if live(ctx, g, o.Object) {
			add(catalog.Principal{ID: o.Owner}, string(o.Object.Kind), o.Object.DB, o.Object.Name, "OWNER")
		}
	}
	return rows, nil
}

// memberships are the principals with role memberships, users first.
func memberships(g Grantor, gs *catalog.Grants) []catalog.Principal {
	ps := gs.Members()
	sort.Slice(ps, func(i, j int) bool {
		if ps[i].Role != ps[j].Role {
			return !ps[i].Role
		}
		return g.PrincipalName(ps[i]) < g.PrincipalName(ps[j])
	})
	return ps
}

// live reports whether a grant's object still exists: grants name a table
// by its ID, and one dropped leaves them naming nothing.
func live(ctx context.Context, g Grantor, o catalog.Object) bool {
	if o.Kind == catalog.ObjectDatabase || o.DB == catalog.SystemDatabase {
		return true
	}
	got, ok := Resolve(ctx, g, o.DB, o.Name)
	return ok && got == o
}

func containsPrincipal(ps []catalog.Principal, p catalog.Principal) bool {
	for _, q := range ps {
		if q == p {
			return true
		}
	}
	return false
}
