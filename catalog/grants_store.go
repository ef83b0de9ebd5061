package catalog

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
)

// Grants returns the current roles, privileges and owners.
func (c *Catalog) Grants() *Grants {
	if g := c.grants.Load(); g != nil {
		return g
	}
	return emptyGrants()
}

// PrincipalNamed returns the user or the role named name (they share one
// namespace, as in PostgreSQL).
func (c *Catalog) PrincipalNamed(name string) (Principal, bool) {
	if u, ok := c.User(name); ok {
		return Principal{ID: u.ID}, true
	}
	if r, ok := c.Grants().Role(name); ok {
		return Principal{Role: true, ID: r.ID}, true
	}
	return Principal{}, false
}

// PrincipalName returns the name of a user or role ("" if it is gone).
func (c *Catalog) PrincipalName(p Principal) string {
	if p.Role {
		if r, ok := c.Grants().RoleByID(p.ID); ok {
			return r.Name
		}
		return ""
	}
	if u, ok := c.UserByID(p.ID); ok {
		return u.Name
	}
	return ""
}

// CreateRole stores a new role; with ifNotExists an existing one is left
// as it is (created false).
func (c *Catalog) CreateRole(ctx context.Context, name string, ifNotExists bool) (created bool, err error) {
	if err := checkUserName(name); err != nil {
		return false, err
	}
	err = c.write(ctx, func(w *change) error {
		if _, ok := w.grants.roles[name]; ok {
			if ifNotExists {
				return nil
			}
			return errorf(ErrRoleExists, "role %s already exists", quoteName(name))
		}
		if _, ok := w.users.byName[name]; ok {
			return errorf(ErrRoleExists, "role %s already exists: a user has that name", quoteName(name))
		}
		w.what = "create role " + quoteName(name)
		r := &Role{Name: name}
		var err error
		if r.ID, err = w.insertID(`INSERT INTO roles (name, created_at) VALUES (?, ?)`, name, micros(c.now())); err != nil {
			return err
		}
		next := w.grants.clone()
		next.roles[name], next.rolesByID[r.ID] = r, r
		w.nextGrants, created = next, true
		return nil
	})
	return created, err
}

// DropRole deletes a role, its memberships (of it and in it) and its
// privileges; with ifExists a missing role is no error (dropped false).
func (c *Catalog) DropRole(ctx context.Context, name string, ifExists bool) (dropped bool, err error) {
	err = c.write(ctx, func(w *change) error {
		r, ok := w.grants.roles[name]
		switch {
		case !ok && ifExists:
			return nil
		case !ok:
			return roleNotFound(name)
		}
		w.what = "drop role " + quoteName(name)
		if err := w.exec(`DELETE FROM role_members WHERE role_id = ? OR (member_role = 1 AND member_id = ?)`, r.ID, r.ID); err != nil {
			return err
		}
		if err := w.exec(`DELETE FROM privileges WHERE grantee_role = 1 AND grantee_id = ?`, r.ID); err != nil {
			return err
		}
		if err := w.exec(`DELETE FROM roles WHERE id = ?`, r.ID); err != nil {
			return err
		}
		w.nextGrants, dropped = w.grants.withoutRole(r), true
		return nil
	})
	return dropped, err
}

// withoutRole returns a copy of g without r, its memberships and its
// privileges.
func (g *Grants) withoutRole(r *Role) *Grants {
	next := g.clone()
	delete(next.roles, r.Name)
	delete(next.rolesByID, r.ID)
	rp := Principal{Role: true, ID: r.ID}
	delete(next.memberOf, rp)
	for p, roles := range next.memberOf {
		if slices.Contains(roles, r.ID) {
			next.memberOf[p] = slices.DeleteFunc(slices.Clone(roles), func(id int64) bool { return id == r.ID })
		}
	}
	for k := range next.privs {
		if k.grantee == rp {
			delete(next.privs, k)
		}
	}
	return next
}

func roleNotFound(name string) error {
	return errorf(ErrRoleNotFound, "role %s does not exist", quoteName(name))
}

// GrantRole makes member a member of role. A membership that would make
// a role a member of itself, through others or directly, is refused.
func (c *Catalog) GrantRole(ctx context.Context, role string, member Principal) error {
	return c.changeMembership(ctx, role, member, true)
}

// RevokeRole ends member's membership of role (none is no error).
func (c *Catalog) RevokeRole(ctx context.Context, role string, member Principal) error {
	return c.changeMembership(ctx, role, member, false)
}

func (c *Catalog) changeMembership(ctx context.Context, role string, member Principal, grant bool) error {
	return c.write(ctx, func(w *change) error {
		g := w.grants
		r, ok := g.roles[role]
		if !ok {
			return roleNotFound(role)
		}
		if grant == slices.Contains(g.memberOf[member], r.ID) {
			return nil
		}
		if grant && member.Role && g.reaches(r.ID, member.ID) {
			return invalidf("role %s is a member of role %s: the membership would make a cycle", quoteName(role), quoteName(c.PrincipalName(member)))
		}
		w.what = "membership of role " + quoteName(role)
		q := `INSERT INTO role_members (role_id, member_role, member_id) VALUES (?, ?, ?)`
		if !grant {
			q = `DELETE FROM role_members WHERE role_id = ? AND member_role = ? AND member_id = ?`
		}
		if err := w.exec(q, r.ID, b2i(member.Role), member.ID); err != nil {
			return err
		}
		next := g.clone()
		if grant {
			next.memberOf[member] = append(slices.Clone(g.memberOf[member]), r.ID)
		} else {
			next.memberOf[member] = slices.DeleteFunc(slices.Clone(g.memberOf[member]), func(id int64) bool { return id == r.ID })
		}
		w.nextGrants = next
		return nil
	})
}

// GrantPrivileges adds privs on each object to what grantee holds.
func (c *Catalog) GrantPrivileges(ctx context.Context, grantee Principal, objs []Object, privs Privilege) error {
	return c.changePrivileges(ctx, grantee, objs, func(old Privilege) Privilege { return old | privs })
}

// RevokePrivileges takes privs on each object from what grantee holds
// (privileges not held are no error, as in PostgreSQL).
func (c *Catalog) RevokePrivileges(ctx context.Context, grantee Principal, objs []Object, privs Privilege) error {
	return c.changePrivileges(ctx, grantee, objs, func(old Privilege) Privilege { return old &^ privs })
}

func (c *Catalog) changePrivileges(ctx context.Context, grantee Principal, objs []Object, apply func(Privilege) Privilege) error {
	return c.write(ctx, func(w *change) error {
		w.what = "grant"
		next := w.grants.clone()
		for _, o := range objs {
			k := grantKey{grantee, o}
			p := apply(next.privs[k])
			if p == next.privs[k] {
				continue
			}
			var err error
			if p == 0 {
				delete(next.privs, k)
				err = w.exec(`DELETE FROM privileges WHERE grantee_role = ? AND grantee_id = ? AND object_kind = ? AND db = ? AND name = ? AND object_id = ?`,
					b2i(grantee.Role), grantee.ID, string(o.Kind), o.DB, o.Name, o.ID)
			} else {
				next.privs[k] = p
				err = w.exec(`INSERT INTO privileges (grantee_role, grantee_id, object_kind, db, name, object_id, privileges) VALUES (?, ?, ?, ?, ?, ?, ?)
					ON CONFLICT (grantee_role, grantee_id, object_kind, db, name, object_id) DO UPDATE SET privileges = excluded.privileges`,
					b2i(grantee.Role), grantee.ID, string(o.Kind), o.DB, o.Name, o.ID, int64(p))
			}
			if err != nil {
				return err
			}
		}
		w.nextGrants = next
		return nil
	})
}

// SetOwner records user as the owner of a table or view (its creator).
func (c *Catalog) SetOwner(ctx context.Context, o Object, user int64) error {
	return c.write(ctx, func(w *change) error {
		w.what = "owner of " + o.String()
		if err := w.exec(`INSERT INTO owners (object_kind, object_id, db, name, owner_id) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (object_kind, object_id) DO UPDATE SET owner_id = excluded.owner_id`, string(o.Kind), o.ID, o.DB, o.Name, user); err != nil {
			return err
		}
		next := w.grants.clone()
		next.owners[o] = user
		w.nextGrants = next
		return nil
	})
}

// ForgetDatabase deletes the privileges granted on database db as a
// whole, once it is dropped: a database of that name created later is
// another, which they must not reach. (Tables and views need no such
// step: their privileges name them by id.)
func (c *Catalog) ForgetDatabase(ctx context.Context, db string) error {
	return c.write(ctx, func(w *change) error {
		o := DatabaseObject(db)
		next := w.grants.clone()
		for k := range next.privs {
			if k.object == o {
				delete(next.privs, k)
			}
		}
		if len(next.privs) == len(w.grants.privs) {
			return nil
		}
		w.what = "forget the privileges on " + o.String()
		if err := w.exec(`DELETE FROM privileges WHERE object_kind = ? AND db = ?`, string(ObjectDatabase), o.DB); err != nil {
			return err
		}
		w.nextGrants = next
		return nil
	})
}

// forgetUser deletes, in w, the privileges and role memberships of the
// user with id, which is being dropped. Its ids are never reused, so
// rows left behind would name nobody; they are deleted to keep the
// catalog clean.
func (w *change) forgetUser(id int64) error {
	p := Principal{ID: id}
	if err := w.exec(`DELETE FROM privileges WHERE grantee_role = 0 AND grantee_id = ?`, id); err != nil {
		return err
	}
	if err := w.exec(`DELETE FROM role_members WHERE member_role = 0 AND member_id = ?`, id); err != nil {
		return err
	}
	next := w.grants.clone()
	delete(next.memberOf, p)
	for k := range next.privs {
		if k.grantee == p {
			delete(next.privs, k)
		}
	}
	w.nextGrants = next
	return nil
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// loadGrants reads the roles, memberships, privileges and owners at start.
func loadGrants(ctx context.Context, db querier) (*Grants, error) {
	g := emptyGrants()
	read := func(q string, scan func(*sql.Rows) error) error {
		rows, err := db.QueryContext(ctx, q)
		if err != nil {
			return fmt.Errorf("read grants: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			if err := scan(rows); err != nil {
				return fmt.Errorf("read grants: %w", err)
			}
		}
		return rows.Err()
	}
	err := read(`SELECT id, name FROM roles`, func(rows *sql.Rows) error {
		r := &Role{}
		err := rows.Scan(&r.ID, &r.Name)
		g.roles[r.Name], g.rolesByID[r.ID] = r, r
		return err
	})
	if err == nil {
		err = read(`SELECT role_id, member_role, member_id FROM role_members ORDER BY role_id`, func(rows *sql.Rows) error {
			var role, isRole int64
			var m Principal
			err := rows.Scan(&role, &isRole, &m.ID)
			m.Role = isRole == 1
			g.memberOf[m] = append(g.memberOf[m], role)
			return err
		})
	}
	if err == nil {
		err = read(`SELECT grantee_role, grantee_id, object_kind, db, name, object_id, privileges FROM privileges`, func(rows *sql.Rows) error {
			var k grantKey
			var kind string
			var p, isRole int64
			err := rows.Scan(&isRole, &k.grantee.ID, &kind, &k.object.DB, &k.object.Name, &k.object.ID, &p)
			k.grantee.Role = isRole == 1
			k.object.Kind = ObjectKind(kind)
			g.privs[k] = Privilege(p)
			return err
		})
	}
	if err == nil {
		err = read(`SELECT object_kind, object_id, db, name, owner_id FROM owners`, func(rows *sql.Rows) error {
			var o Object
			var kind string
			var owner int64
			err := rows.Scan(&kind, &o.ID, &o.DB, &o.Name, &owner)
			o.Kind = ObjectKind(kind)
			g.owners[o] = owner
			return err
		})
	}
	return g, err
}
