package catalog

import (
	"context"
	"database/sql"
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
	snap, err := c.lockWrite()
	if err != nil {
		return false, err
	}
	defer c.writeMu.Unlock()
	if snap.dbs[name] {
		if ifNotExists {
			return false, nil
		}
		return false, errorf(ErrDatabaseExists, "database %q already exists", name)
	}
	err = c.inTx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO databases (name, created_at) VALUES (?, ?)`, name, micros(c.now()))
		return err
	})
	if err != nil {
		return false, fmt.Errorf("create database %q: %w", name, err)
	}
	next := snap.clone()
	next.dbs[name] = true
	c.state.Store(next)
	return true, nil
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
	snap, err := c.lockWrite()
	if err != nil {
		return nil, false, err
	}
	defer c.writeMu.Unlock()
	if !snap.dbs[name] {
		if ifExists {
			return nil, false, nil
		}
		return nil, false, errorf(ErrDatabaseNotFound, "database %q does not exist", name)
	}
	tables := snap.tablesOf(name)
	for _, b := range snap.brokenOf(name) {
		tables = append(tables, b.stub())
	}
	views := snap.viewsOf(name)
	if len(tables)+len(views) > 0 && !cascade {
		return nil, false, errorf(ErrDatabaseNotEmpty, "database %q is not empty (%d tables, %d views; use CASCADE to drop them too)", name, len(tables), len(views))
	}
	if err := c.inTx(ctx, func(tx *sql.Tx) error { return deleteDatabase(ctx, tx, name) }); err != nil {
		return nil, false, fmt.Errorf("drop database %q: %w", name, err)
	}
	next := snap.clone()
	delete(next.dbs, name)
	for _, t := range tables {
		next.deleteTable(t)
	}
	for _, v := range views {
		delete(next.views, TableName{DB: v.DB, Name: v.Name})
	}
	c.state.Store(next)
	return tables, true, nil
}

// deleteDatabase deletes database name, its tables (their schemas go by
// ON DELETE CASCADE) and its views.
func deleteDatabase(ctx context.Context, tx *sql.Tx, name string) error {
	if _, err := tx.ExecContext(ctx, `DELETE FROM tables WHERE db = ?`, name); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM views WHERE db = ?`, name); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, `DELETE FROM databases WHERE name = ?`, name)
	return err
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
