package auth

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/lakestream/lakestream/catalog"
)

// Objects is where privileges and the objects they are held on are
// (*catalog.Catalog).
type Objects interface {
	Grants() *catalog.Grants
	Table(ctx context.Context, db, name string) (*catalog.Table, error)
	View(ctx context.Context, db, name string) (*catalog.View, error)
}

// Authorize is the one privilege check: it returns nil if the identity in
// ctx holds priv on db.name (a table, a view, a layer of a table such as
// "t$lake" or "t$changelog", which are the table's, or a system table in
// the lakestream database), an ErrPermissionDenied that names the object
// as PostgreSQL does (`permission denied for table "default.t"`) if not,
// and ErrUnauthenticated for a context without an identity. A superuser
// (and auth.Anonymous, with authentication off) holds every privilege; a
// user holds what it was granted, on the object or its database, itself or
// through its roles, and every privilege on what it owns. A name that
// names nothing passes: the caller's own lookup reports it missing.
func Authorize(ctx context.Context, objs Objects, priv catalog.Privilege, db, name string) error {
	id, ok := FromContext(ctx)
	if !ok {
		return fmt.Errorf("%w: no identity", ErrUnauthenticated)
	}
	if id.Superuser {
		return nil
	}
	o, ok := Resolve(ctx, objs, db, name)
	if !ok {
		return nil
	}
	return check(objs.Grants(), id, priv, o)
}

// AuthorizeObject is Authorize for an object already resolved (a database,
// for CREATE, is catalog.DatabaseObject(db)).
func AuthorizeObject(ctx context.Context, objs Objects, priv catalog.Privilege, o catalog.Object) error {
	id, ok := FromContext(ctx)
	if !ok {
		return fmt.Errorf("%w: no identity", ErrUnauthenticated)
	}
	if id.Superuser {
		return nil
	}
	return check(objs.Grants(), id, priv, o)
}

func check(g *catalog.Grants, id Identity, priv catalog.Privilege, o catalog.Object) error {
	if held := g.Held(id.UserID, o); held&priv == priv {
		return nil
	}
	return fmt.Errorf("%w for %s: user %q needs %s on it (GRANT %s ON %s TO %s)", ErrPermissionDenied, o, id.User, priv, priv, grantTarget(o), catalog.QuoteIdent(id.User))
}

func grantTarget(o catalog.Object) string {
	if o.Kind == catalog.ObjectDatabase {
		return "DATABASE " + catalog.QuoteIdent(o.DB)
	}
	return "TABLE " + catalog.TableName{DB: o.DB, Name: o.Name}.String()
}

// Visible reports whether the identity in ctx may see db.name in a
// listing (GetTables, SHOW TABLES): it holds some privilege on it.
func Visible(ctx context.Context, objs Objects, o catalog.Object) bool {
	id, ok := FromContext(ctx)
	if !ok {
		return false
	}
	return id.Superuser || objs.Grants().Held(id.UserID, o) != 0
}

// Resolve returns the object db.name names: a table, a view, the table of
// a layer ("t$lake", "t$changelog", "t$binlog": no table name holds a
// "$"), or else, in the lakestream database, a system table (by name: they
// are not in the catalog). ok is false if it names nothing.
func Resolve(ctx context.Context, objs Objects, db, name string) (catalog.Object, bool) {
	if db == "" {
		db = catalog.DefaultDatabase
	}
	base := name
	if i := strings.IndexByte(name, '$'); i > 0 {
		base = name[:i]
	}
	if t, err := objs.Table(ctx, db, base); err == nil {
		return catalog.TableObject(t), true
	}
	if v, err := objs.View(ctx, db, base); err == nil {
		return catalog.ViewObject(v), true
	}
	if strings.EqualFold(db, catalog.SystemDatabase) {
		return catalog.SystemObject(name), true
	}
	return catalog.Object{}, false
}

// IsPermissionDenied reports whether err is a refusal of Authorize.
func IsPermissionDenied(err error) bool { return errors.Is(err, ErrPermissionDenied) }
