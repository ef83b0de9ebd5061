package catalog

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

func dbOrDefault(db string) string {
	if db == "" {
		return DefaultDatabase
	}
	return db
}

// CreateTable resolves and validates s (see CreateTable.Resolve) and stores
// the table with schema version 0 and a new ID. If the table exists, it
// returns ErrTableExists, or with s.IfNotExists the existing table.
func (c *Catalog) CreateTable(ctx context.Context, s *CreateTable) (*Table, error) {
	t, _, err := c.createTable(ctx, s)
	return t, err
}

// createTable also reports whether the table was created.
func (c *Catalog) createTable(ctx context.Context, s *CreateTable) (*Table, bool, error) {
	t, err := s.Resolve(c.cfg)
	if err != nil {
		return nil, false, fmt.Errorf("create table %q: %w", dbOrDefault(s.Table.DB)+"."+s.Table.Name, err)
	}
	var out *Table
	err = c.write(ctx, func(w *change) error {
		snap := w.state
		if !snap.dbs[t.DB] {
			return errorf(ErrDatabaseNotFound, "database %q does not exist", t.DB)
		}
		if v := snap.viewNamed(t.DB, t.Name); v != nil {
			if s.IfNotExists {
				return errorf(ErrTableExists, "%q is a view: CREATE TABLE IF NOT EXISTS cannot create a table of its name", v.FullName())
			}
			return errorf(ErrTableExists, "%q is a view: a table cannot take a view's name", v.FullName())
		}
		if old := snap.byName[TableName{DB: t.DB, Name: t.Name}]; old != nil {
			if s.IfNotExists {
				out = old
				return nil
			}
			return errorf(ErrTableExists, "table %q already exists", t.FullName())
		}
		if b, ok := snap.brokenNamed(t.DB, t.Name); ok && b.Name == t.Name {
			return errorf(ErrTableExists, "table %q already exists, and its definition cannot be loaded (%v); drop it first", t.FullName(), b.Err)
		}
		t.CreatedAt = c.now()
		t.schemas[0].CreatedAt = t.CreatedAt
		w.what = fmt.Sprintf("create table %q", t.FullName())
		if err := insertTable(w, t); err != nil {
			return err
		}
		w.next = snap.clone()
		w.next.putTable(t)
		out = t
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	return out, out == t, nil
}

// insertTable inserts t and its schema 0, setting t.ID.
func insertTable(w *change, t *Table) error {
	var err error
	t.ID, err = w.insertID(`INSERT INTO tables (db, name, schema_id, primary_key,
		partition_spec, options, raw_options, created_at) VALUES (?, ?, 0, ?, ?, ?, ?, ?)`,
		t.DB, t.Name, mustJSON(append([]string{}, t.PrimaryKey...)), encodePartition(t.Partition),
		encodeOptions(t.Options), mustJSON(t.RawOptions), micros(t.CreatedAt))
	if err != nil {
		return err
	}
	return insertSchema(w, t.ID, t.schemas[0])
}

func insertSchema(w *change, id int64, s *Schema) error {
	return w.exec(`INSERT INTO table_schemas (table_id, schema_id, columns, created_at)
		VALUES (?, ?, ?, ?)`, id, s.ID, encodeColumns(s.Columns), micros(s.CreatedAt))
}

// DropTable drops table db.name and returns it, so that the caller can
// delete its data (its directory is named by Table.ID, which is never
// reused). With ifExists, a missing table (or database) returns (nil, nil).
func (c *Catalog) DropTable(ctx context.Context, db, name string, ifExists bool) (*Table, error) {
	db = dbOrDefault(db)
	var dropped *Table
	err := c.write(ctx, func(w *change) error {
		snap := w.state
		t, err := snap.lookup(db, name)
		if errors.Is(err, ErrDefinitionBroken) {
			b, _ := snap.brokenNamed(db, name)
			t, err = b.stub(), nil
		}
		if v := snap.viewNamed(db, name); err != nil && v != nil {
			return invalidf("%q is a view, not a table: drop it with DROP VIEW", v.FullName())
		}
		if err != nil {
			if ifExists {
				return nil
			}
			return err
		}
		w.what = fmt.Sprintf("drop table %q", t.FullName())
		if err := w.exec(`DELETE FROM tables WHERE id = ?`, t.ID); err != nil {
			return err
		}
		w.next = snap.clone()
		w.next.deleteTable(t)
		dropped = t
		return nil
	})
	if err != nil {
		return nil, err
	}
	return dropped, nil
}

// AddColumn appends a nullable column to table db.name as a new schema
// version and returns the new table snapshot. Existing rows read the column
// as NULL; earlier versions stay available through SchemaAt.
func (c *Catalog) AddColumn(ctx context.Context, db, table string, col Column) (*Table, error) {
	db = dbOrDefault(db)
	if err := checkNewColumn(col); err != nil {
		return nil, fmt.Errorf("add column to table %q: %w", db+"."+table, err)
	}
	var t *Table
	err := c.write(ctx, func(w *change) error {
		old, err := w.state.lookup(db, table)
		if err != nil {
			return err
		}
		if slices.ContainsFunc(old.Columns, func(c Column) bool { return strings.EqualFold(c.Name, col.Name) }) {
			return errorf(ErrColumnExists, "column %q already exists in table %q", col.Name, old.FullName())
		}
		if err := checkWidth(quoteName(old.FullName()), append(slices.Clip(old.Columns), col)); err != nil {
			return fmt.Errorf("add column %q to table %q: %w", col.Name, old.FullName(), err)
		}
		t = old.withColumn(col, c.now())
		w.what = fmt.Sprintf("add column %q to table %q", col.Name, t.FullName())
		if err := insertSchema(w, t.ID, t.schemas[t.SchemaID]); err != nil {
			return err
		}
		if err := w.exec(`UPDATE tables SET schema_id = ? WHERE id = ?`, t.SchemaID, t.ID); err != nil {
			return err
		}
		w.next = w.state.clone()
		w.next.putTable(t)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return t, nil
}

// SetLakeCreated records that the lake (Iceberg) table of table id exists,
// once: from then on its disappearance is a loss, not a table to create
// anew (the tiering service refuses to re-create it). It returns the
// table with LakeCreatedAt set.
func (c *Catalog) SetLakeCreated(ctx context.Context, id int64) (*Table, error) {
	var out *Table
	err := c.write(ctx, func(w *change) error {
		old := w.state.byID[id]
		if old == nil {
			return errorf(ErrTableNotFound, "table with id %d does not exist", id)
		}
		if !old.LakeCreatedAt.IsZero() {
			out = old
			return nil
		}
		t := *old
		t.LakeCreatedAt = c.now()
		w.what = fmt.Sprintf("record the lake table of %q", t.FullName())
		if err := w.exec(`UPDATE tables SET lake_created_at = ? WHERE id = ?`, micros(t.LakeCreatedAt), id); err != nil {
			return err
		}
		w.next = w.state.clone()
		w.next.putTable(&t)
		out = &t
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func checkNewColumn(col Column) error {
	if col.NotNull {
		return invalidf("column %q cannot be NOT NULL: existing rows have no value for it; add it as nullable", col.Name)
	}
	return checkColumn(col)
}

// withColumn returns a copy of t with col appended as a new schema version.
func (t *Table) withColumn(col Column, at time.Time) *Table {
	n := *t
	n.Columns = append(append([]Column(nil), t.Columns...), col)
	n.SchemaID = t.SchemaID + 1
	n.schemas = append(append([]*Schema(nil), t.schemas...), newSchema(n.SchemaID, n.Columns, at))
	return &n
}

// Table returns table db.name ("" means the default database).
func (c *Catalog) Table(ctx context.Context, db, name string) (*Table, error) {
	snap, err := c.snap()
	if err != nil {
		return nil, err
	}
	return snap.lookup(dbOrDefault(db), name)
}

// TableByID returns the table with the given ID.
func (c *Catalog) TableByID(ctx context.Context, id int64) (*Table, error) {
	snap, err := c.snap()
	if err != nil {
		return nil, err
	}
	if t := snap.byID[id]; t != nil {
		return t, nil
	}
	if b, ok := snap.broken[id]; ok {
		return nil, b.error()
	}
	return nil, errorf(ErrTableNotFound, "table with id %d does not exist", id)
}

// Tables returns the tables of database db, sorted by name.
func (c *Catalog) Tables(ctx context.Context, db string) ([]*Table, error) {
	snap, err := c.snap()
	if err != nil {
		return nil, err
	}
	db = dbOrDefault(db)
	if !snap.dbs[db] {
		return nil, errorf(ErrDatabaseNotFound, "database %q does not exist", db)
	}
	return snap.tablesOf(db), nil
}

// AllTables returns every table, sorted by database and name.
func (c *Catalog) AllTables(ctx context.Context) ([]*Table, error) {
	snap, err := c.snap()
	if err != nil {
		return nil, err
	}
	return snap.allTables(), nil
}

// lookup finds db.name, distinguishing a missing database from a missing
// table.
func (s *snapshot) lookup(db, name string) (*Table, error) {
	if t := s.byName[TableName{DB: db, Name: name}]; t != nil {
		return t, nil
	}
	// SQL folds unquoted names to lower case, but tables created by an
	// ingest keep the client's spelling ("Visits"): a unique match that
	// differs only in case is the table meant, as in DuckDB.
	var match *Table
	for _, t := range s.tablesOf(db) {
		if strings.EqualFold(t.Name, name) {
			if match != nil {
				return nil, errorf(ErrTableNotFound, "table name %q is ambiguous: %q and %q differ only in case; quote it", name, match.Name, t.Name)
			}
			match = t
		}
	}
	if match != nil {
		return match, nil
	}
	if b, ok := s.brokenNamed(db, name); ok {
		return nil, b.error()
	}
	if !s.dbs[db] {
		return nil, errorf(ErrDatabaseNotFound, "database %q does not exist", db)
	}
	return nil, errorf(ErrTableNotFound, "table %q does not exist", db+"."+name)
}
