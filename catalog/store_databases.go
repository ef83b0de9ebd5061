package catalog

import (
	"context"
	"fmt"
	"sort"
)

// CreateDatabase creates database name. With ifNotExists, an existing
// database is not an error.
func (c *Catalog) CreateDatabase(ctx context.Context, name string, ifNotExists bool) error {
	_, err := c.createDatabase(ctx, name, ifNotExists)
	return err
}

// createDatabase reports whether it created the database.
func (c *Catalog) createDatabase(ctx context.Context, name string, ifNotExists bool) (bool, error) {
	if err := checkObjectName("database", name); err != nil {
		return false, fmt.Errorf("create database: %w", err)
	}
	created := false
	err := c.write(ctx, func(w *change) error {
		if w.state.dbs[name] {
			if ifNotExists {
				return nil
			}
			return errorf(ErrDatabaseExists, "database %q already exists", name)
		}
		w.what = fmt.Sprintf("create database %q", name)
		if err := w.exec(`INSERT INTO databases (name, created_at) VALUES (?, ?)`, name, micros(c.now())); err != nil {
			return err
		}
		w.next = w.state.clone()
		w.next.dbs[name] = true
		created = true
		return nil
	})
	return created, err
}

// DropDatabase drops database name. A database with tables is refused
// (ErrDatabaseNotEmpty) unless cascade is set; then its tables are dropped
// too and returned, so that the caller can delete their data. The default
// database cannot be dropped. With ifExists, a missing database is not an
// error.
func (c *Catalog) DropDatabase(ctx context.Context, name string, ifExists, cascade bool) ([]*Table, error) {
	tables, _, err := c.dropDatabase(ctx, name, ifExists, cascade)
	return tables, err
}

// dropDatabase also reports whether the database was dropped.
func (c *Catalog) dropDatabase(ctx context.Context, name string, ifExists, cascade bool) ([]*Table, bool, error) {
	if name == DefaultDatabase {
		return nil, false, invalidf("database %q cannot be dropped", name)
	}
	var tables []*Table
	dropped := false
	err := c.write(ctx, func(w *change) error {
		snap := w.state
		if !snap.dbs[name] {
			if ifExists {
				return nil
			}
			return errorf(ErrDatabaseNotFound, "database %q does not exist", name)
		}
		tables = snap.tablesOf(name)
		for _, b := range snap.brokenOf(name) {
			tables = append(tables, b.stub())
		}
		views := snap.viewsOf(name)
		if len(tables)+len(views) > 0 && !cascade {
			return errorf(ErrDatabaseNotEmpty, "database %q is not empty (%d tables, %d views; use CASCADE to drop them too)", name, len(tables), len(views))
		}
		w.what = fmt.Sprintf("drop database %q", name)
		if err := deleteDatabase(w, name); err != nil {
			return err
		}
		next := snap.clone()
		delete(next.dbs, name)
		for _, t := range tables {
			next.deleteTable(t)
		}
		for _, v := range views {
			delete(next.views, TableName{DB: v.DB, Name: v.Name})
		}
		w.next, dropped = next, true
		return nil
	})
	if err != nil || !dropped {
		return nil, false, err
	}
	return tables, true, nil
}

// deleteDatabase deletes database name, its tables (their schemas go by
// ON DELETE CASCADE) and its views.
func deleteDatabase(w *change, name string) error {
	if err := w.exec(`DELETE FROM tables WHERE db = ?`, name); err != nil {
		return err
	}
	if err := w.exec(`DELETE FROM views WHERE db = ?`, name); err != nil {
		return err
	}
	return w.exec(`DELETE FROM databases WHERE name = ?`, name)
}

// Databases returns the database names, sorted.
func (c *Catalog) Databases(ctx context.Context) ([]string, error) {
	snap, err := c.snap()
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(snap.dbs))
	for n := range snap.dbs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names, nil
}
