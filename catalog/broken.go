package catalog

import (
	"context"
	"errors"
	"fmt"
	"sort"
)

// ErrDefinitionBroken is returned for a table whose stored definition does
// not load (BrokenTable): it exists, but cannot be used until it is
// dropped (or the catalog repaired).
var ErrDefinitionBroken = errors.New("table definition cannot be loaded")

// BrokenTable is a table whose stored definition did not load: a value
// that does not decode, or a type beyond the limits the parser keeps (an
// older release stored it). Its ID and name are known, so that its data
// directory is not taken for an orphan and DROP TABLE can remove it.
type BrokenTable struct {
	ID       int64
	DB, Name string
	Err      error // why it did not load
}

// FullName returns "db.name".
func (b BrokenTable) FullName() string { return b.DB + "." + b.Name }

func (b BrokenTable) error() error { return &BrokenError{Table: b} }

// BrokenError is the error of a lookup of a broken table; it matches
// ErrDefinitionBroken and carries the table's ID, for DROP TABLE.
type BrokenError struct{ Table BrokenTable }

func (e *BrokenError) Error() string {
	return fmt.Sprintf("table %q: %v: %v (DROP TABLE removes it)", e.Table.FullName(), ErrDefinitionBroken, e.Table.Err)
}

// Is makes errors.Is(err, ErrDefinitionBroken) true.
func (e *BrokenError) Is(target error) bool { return target == ErrDefinitionBroken }

// BrokenTables returns the tables whose stored definition did not load,
// sorted by database and name.
func (c *Catalog) BrokenTables(ctx context.Context) ([]BrokenTable, error) {
	snap, err := c.snap()
	if err != nil {
		return nil, err
	}
	out := make([]BrokenTable, 0, len(snap.broken))
	for _, b := range snap.broken {
		out = append(out, b)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].DB != out[j].DB {
			return out[i].DB < out[j].DB
		}
		return out[i].Name < out[j].Name
	})
	return out, nil
}

// stub returns a *Table naming b, for the results of DROP: callers use
// the ID, database and name of a dropped table, nothing else.
func (b BrokenTable) stub() *Table { return &Table{ID: b.ID, DB: b.DB, Name: b.Name} }
