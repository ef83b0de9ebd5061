package catalog

import (
	"context"
	"fmt"
)

// Result is what applying a statement did.
type Result struct {
	// Table is the created or altered table (for CREATE TABLE IF NOT
	// EXISTS on an existing table: the existing one), else nil.
	Table *Table
	// Dropped are the tables whose data the caller must now delete (DROP
	// TABLE, DROP DATABASE ... CASCADE).
	Dropped []*Table
	// View is the created, replaced or dropped view, else nil.
	View *View
	// NoOp is set when IF [NOT] EXISTS turned the statement into nothing.
	NoOp bool
}

// Exec applies a parsed statement. Table names without a database use
// DefaultDatabase; a caller with another current database sets
// TableName.DB first.
func (c *Catalog) Exec(ctx context.Context, stmt Statement) (Result, error) {
	switch s := stmt.(type) {
	case *CreateDatabase:
		created, err := c.createDatabase(ctx, s.Name, s.IfNotExists)
		return Result{NoOp: err == nil && !created}, err
	case *DropDatabase:
		tables, dropped, err := c.dropDatabase(ctx, s.Name, s.IfExists, s.Cascade)
		return Result{Dropped: tables, NoOp: err == nil && !dropped}, err
	case *CreateTable:
		t, created, err := c.createTable(ctx, s)
		return Result{Table: t, NoOp: err == nil && !created}, err
	case *DropTable:
		t, err := c.DropTable(ctx, s.Table.DB, s.Table.Name, s.IfExists)
		if t == nil {
			return Result{NoOp: err == nil}, err
		}
		return Result{Dropped: []*Table{t}}, err
	case *AddColumn:
		t, err := c.AddColumn(ctx, s.Table.DB, s.Table.Name, s.Column)
		return Result{Table: t}, err
	case *CreateView:
		v, created, err := c.createView(ctx, s)
		return Result{View: v, NoOp: err == nil && !created}, err
	case *DropView:
		v, err := c.DropView(ctx, s.View.DB, s.View.Name, s.IfExists)
		return Result{View: v, NoOp: err == nil && v == nil}, err
	case nil:
		return Result{}, invalidf("no statement")
	}
	return Result{}, fmt.Errorf("exec: unsupported statement %T: %w", stmt, ErrInvalid)
}
