package catalog

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
)

// ErrViewNotFound is returned for a view that does not exist.
var ErrViewNotFound = errors.New("view not found")

// View is a persistent view: a name for a query, which the query engine
// expands where the name is used (docs/sql.md, "Views"). A view and a
// table of one database never share a name, ignoring case, so a name is
// one or the other. Immutable, like *Table.
type View struct {
	ID        int64
	DB        string
	Name      string
	Query     string // the defining query, as written
	CreatedAt time.Time
	UpdatedAt time.Time // CREATE OR REPLACE
}

// FullName returns "db.name".
func (v *View) FullName() string { return v.DB + "." + v.Name }

// DDL returns the CREATE VIEW statement that recreates the view.
func (v *View) DDL() string {
	return fmt.Sprintf("CREATE VIEW %s AS\n%s", TableName{DB: v.DB, Name: v.Name}, v.Query)
}

// viewNamed finds db.name among the views: exactly, else the one view
// whose name differs only in case.
func (s *snapshot) viewNamed(db, name string) *View {
	if v := s.views[TableName{DB: db, Name: name}]; v != nil {
		return v
	}
	var match *View
	for k, v := range s.views {
		if k.DB == db && strings.EqualFold(k.Name, name) {
			if match != nil {
				return nil
			}
			match = v
		}
	}
	return match
}

// tableNamed reports whether db.name is a table (or a table whose
// definition did not load), ignoring case.
func (s *snapshot) tableNamed(db, name string) bool {
	for _, t := range s.tablesOf(db) {
		if strings.EqualFold(t.Name, name) {
			return true
		}
	}
	_, ok := s.brokenNamed(db, name)
	return ok
}

func (s *snapshot) viewsOf(db string) []*View {
	var out []*View
	for _, v := range s.views {
		if db == "" || v.DB == db {
			out = append(out, v)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].DB != out[j].DB {
			return out[i].DB < out[j].DB
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// CreateView stores a view (see CreateView): a new one, or with OrReplace
// a new query for an existing one. It does not check the query: the
// caller does, with the query engine.
func (c *Catalog) CreateView(ctx context.Context, s *CreateView) (*View, error) {
	v, _, err := c.createView(ctx, s)
	return v, err
}

// createView also reports whether it stored anything (false for IF NOT
// EXISTS on an existing view).
func (c *Catalog) createView(ctx context.Context, s *CreateView) (*View, bool, error) {
	db := dbOrDefault(s.View.DB)
	if err := checkObjectName("view", s.View.Name); err != nil {
		return nil, false, err
	}
	if strings.TrimSpace(s.Query) == "" {
		return nil, false, invalidf("view %q has no query", db+"."+s.View.Name)
	}
	var out *View
	stored := false
	err := c.write(ctx, func(w *change) error {
		snap := w.state
		if !snap.dbs[db] {
			return errorf(ErrDatabaseNotFound, "database %q does not exist", db)
		}
		if snap.tableNamed(db, s.View.Name) {
			return errorf(ErrTableExists, "%q is a table: a view cannot take a table's name", db+"."+s.View.Name)
		}
		now := c.now()
		old := snap.viewNamed(db, s.View.Name)
		switch {
		case old != nil && s.IfNotExists:
			out = old
			return nil
		case old != nil && !s.OrReplace:
			return errorf(ErrTableExists, "view %q already exists", old.FullName())
		}
		v := &View{DB: db, Name: s.View.Name, Query: s.Query, CreatedAt: now, UpdatedAt: now}
		if old != nil {
			v.ID, v.Name, v.CreatedAt = old.ID, old.Name, old.CreatedAt
		}
		w.what = fmt.Sprintf("create view %q", v.FullName())
		if old != nil {
			if err := w.exec(`UPDATE views SET query = ?, updated_at = ? WHERE id = ?`, v.Query, micros(now), v.ID); err != nil {
				return err
			}
		} else {
			var err error
			v.ID, err = w.insertID(`INSERT INTO views (db, name, query, created_at, updated_at) VALUES (?, ?, ?, ?, ?)`,
				v.DB, v.Name, v.Query, micros(now), micros(now))
			if err != nil {
				return err
			}
		}
		w.next = snap.clone()
		if old != nil {
			delete(w.next.views, TableName{DB: old.DB, Name: old.Name})
		}
		w.next.views[TableName{DB: v.DB, Name: v.Name}] = v
		out, stored = v, true
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	return out, stored, nil
}

// DropView drops view db.name and returns it; with ifExists a missing
// view returns (nil, nil).
func (c *Catalog) DropView(ctx context.Context, db, name string, ifExists bool) (*View, error) {
	db = dbOrDefault(db)
	var dropped *View
	err := c.write(ctx, func(w *change) error {
		snap := w.state
		v := snap.viewNamed(db, name)
		switch {
		case v == nil && snap.tableNamed(db, name):
			return invalidf("%q is a table, not a view: drop it with DROP TABLE", db+"."+name)
		case v == nil && ifExists:
			return nil
		case v == nil:
			return errorf(ErrViewNotFound, "view %q does not exist", db+"."+name)
		}
		w.what = fmt.Sprintf("drop view %q", v.FullName())
		if err := w.exec(`DELETE FROM views WHERE id = ?`, v.ID); err != nil {
			return err
		}
		w.next = snap.clone()
		delete(w.next.views, TableName{DB: v.DB, Name: v.Name})
		dropped = v
		return nil
	})
	if err != nil {
		return nil, err
	}
	return dropped, nil
}

// View returns view db.name ("" means the default database), matched as
// tables are: exactly, else ignoring case when that is unambiguous.
func (c *Catalog) View(ctx context.Context, db, name string) (*View, error) {
	snap, err := c.snap()
	if err != nil {
		return nil, err
	}
	db = dbOrDefault(db)
	if v := snap.viewNamed(db, name); v != nil {
		return v, nil
	}
	return nil, errorf(ErrViewNotFound, "view %q does not exist", db+"."+name)
}

// Views returns the views of database db ("": of every database), sorted
// by database and name.
func (c *Catalog) Views(ctx context.Context, db string) ([]*View, error) {
	snap, err := c.snap()
	if err != nil {
		return nil, err
	}
	if db != "" && !snap.dbs[db] {
		return nil, errorf(ErrDatabaseNotFound, "database %q does not exist", db)
	}
	return snap.viewsOf(db), nil
}

func loadViews(ctx context.Context, db querier, s *snapshot) error {
	rows, err := db.QueryContext(ctx, `SELECT id, db, name, query, created_at, updated_at FROM views`)
	if err != nil {
		return fmt.Errorf("read views: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		v := &View{}
		var created, updated int64
		if err := rows.Scan(&v.ID, &v.DB, &v.Name, &v.Query, &created, &updated); err != nil {
			return fmt.Errorf("read views: %w", err)
		}
		v.CreatedAt, v.UpdatedAt = time.UnixMicro(created).UTC(), time.UnixMicro(updated).UTC()
		s.views[TableName{DB: v.DB, Name: v.Name}] = v
	}
	return rows.Err()
}
