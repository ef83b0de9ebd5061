package tables

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lakestream/lakestream/catalog"
	"github.com/lakestream/lakestream/internal/arrowmsg"
	"github.com/lakestream/lakestream/internal/scan"
	"github.com/lakestream/lakestream/tables/merge"
)

// ErrNotPrimaryKey is returned by Delete, Overwrite and Lookup on a table
// without a primary key.
var ErrNotPrimaryKey = errors.New("the table has no primary key")

// addPK conforms rec as an upsert of a primary-key table: the columns it
// carries are the columns it updates.
func (a *Appender) addPK(ctx context.Context, rec arrow.RecordBatch) error {
	c, present, err := conformPK(a.def, rec, a.t.mem, false)
	if err != nil {
		return err
	}
	lay, err := a.t.pk.layout(a.def)
	if err != nil {
		c.Release()
		return err
	}
	if err := lay.engine.CheckPresent(present); err != nil {
		c.Release()
		return &SchemaError{Table: a.def.FullName(), Msg: trimInvalid(err)}
	}
	a.pending = append(a.pending, c)
	a.present = append(a.present, present)
	a.size += arrowmsg.RecordBytes(c)
	return a.full(ctx)
}

// trimInvalid is an engine error's text without the ErrInvalid prefix.
func trimInvalid(err error) string {
	s := err.Error()
	if i := strings.Index(s, merge.ErrInvalid.Error()+": "); i >= 0 {
		return s[:i] + s[i+len(merge.ErrInvalid.Error())+2:]
	}
	return s
}

func (a *Appender) flushPK(ctx context.Context) error {
	inputs := make([]pkInput, len(a.pending))
	for i, rec := range a.pending {
		inputs[i] = pkInput{rec: rec, present: a.present[i], op: opUpsert}
	}
	res, err := a.t.writePKAs(ctx, a.def, inputs, a.writer)
	if err != nil {
		return pkError(a.def, err)
	}
	a.written += res.rows
	return nil
}

// pkError turns a merge engine's refusal into a *SchemaError (an
// InvalidArgument for clients).
func pkError(def *catalog.Table, err error) error {
	if errors.Is(err, merge.ErrInvalid) {
		return &SchemaError{Table: def.FullName(), Msg: trimInvalid(err)}
	}
	return err
}

// Delete removes the rows of the keys in keys (a record of the key
// columns, by name; other columns are refused) and returns how many of
// them existed. Each removed row is a -D change record. The delete is one
// atomic write, durable on return.
func (t *Table) Delete(ctx context.Context, keys arrow.RecordBatch) (int64, error) {
	return t.delete(ctx, keys, PKState{})
}

func (t *Table) delete(ctx context.Context, keys arrow.RecordBatch, since PKState) (int64, error) {
	if t.pk == nil {
		return 0, fmt.Errorf("delete from %s: %w", t.Name(), ErrNotPrimaryKey)
	}
	def := t.Def()
	rec, present, err := conformPK(def, keys, t.mem, true)
	if err != nil {
		return 0, err
	}
	defer rec.Release()
	res, err := t.writePK(ctx, def, []pkInput{{rec: rec, present: present, op: opDelete, since: since}})
	return res.existed, pkError(def, err)
}

// Overwrite sets each key's row to exactly the row given (every column),
// bypassing the merge engine (SQL UPDATE computes the new rows): -U/+U
// for a key that had a row, +I for one that had none. It returns the rows
// written; one atomic write, durable on return.
func (t *Table) Overwrite(ctx context.Context, rows arrow.RecordBatch) (int64, error) {
	return t.overwrite(ctx, rows, PKState{})
}

func (t *Table) overwrite(ctx context.Context, rows arrow.RecordBatch, since PKState) (int64, error) {
	if t.pk == nil {
		return 0, fmt.Errorf("update %s: %w", t.Name(), ErrNotPrimaryKey)
	}
	def := t.Def()
	rec, present, err := conformPK(def, rows, t.mem, false)
	if err != nil {
		return 0, err
	}
	defer rec.Release()
	for i, p := range present {
		if !p {
			return 0, &SchemaError{Table: def.FullName(), Column: def.Columns[i].Name, Msg: "missing: an overwrite sets whole rows"}
		}
	}
	res, err := t.writePK(ctx, def, []pkInput{{rec: rec, present: present, op: opOverwrite, since: since}})
	return res.rows, pkError(def, err)
}

// conformPK returns rec as a record of def's schema for a primary-key
// write, and which columns rec carried: columns matched by name as
// conform does, safe widenings cast. The key columns must be there, and
// not null. A column rec lacks is a null column of the result, marked not
// present (a partial update leaves it alone), also when it is NOT NULL.
// With keysOnly, rec must carry the key columns and nothing else.
func conformPK(def *catalog.Table, rec arrow.RecordBatch, mem memory.Allocator, keysOnly bool) (arrow.RecordBatch, []bool, error) {
	table := def.FullName()
	in := rec.Schema()
	target := def.ArrowSchema()
	for i, c := range rec.Columns() {
		if err := array.ValidateFull(c); err != nil {
			return nil, nil, &SchemaError{table, in.Field(i).Name, "invalid data: " + err.Error()}
		}
	}
	keys := def.PrimaryKeyIndexes()
	used := make([]bool, in.NumFields())
	present := make([]bool, target.NumFields())
	cols := make([]arrow.Array, 0, target.NumFields())
	release := func() {
		for _, c := range cols {
			c.Release()
		}
	}
	for ti, f := range target.Fields() {
		i := scan.FieldIndex(in, f.Name)
		isKey := slices.Contains(keys, ti)
		if i < 0 || (keysOnly && !isKey) {
			if isKey {
				release()
				return nil, nil, &SchemaError{table, f.Name, "missing: every write to a primary-key table carries the primary key columns (" + joinNames(def.PrimaryKey) + ")"}
			}
			cols = append(cols, array.MakeArrayOfNull(mem, f.Type, int(rec.NumRows())))
			continue
		}
		used[i], present[ti] = true, true
		col, err := conformColumn(f, rec.Column(i), mem)
		if err != nil {
			release()
			msg := err.Error()
			if isKey {
				msg = "primary key column: " + msg
			}
			return nil, nil, &SchemaError{table, f.Name, msg}
		}
		cols = append(cols, col)
	}
	for i, u := range used {
		if !u {
			release()
			what := "not a column of the table (columns: " + fieldNames(target) + ")"
			if keysOnly && scan.FieldIndex(target, in.Field(i).Name) >= 0 {
				what = "not a primary key column: a delete takes the key columns only (" + joinNames(def.PrimaryKey) + ")"
			}
			return nil, nil, &SchemaError{table, in.Field(i).Name, what}
		}
	}
	// The result may hold nulls in NOT NULL columns that were not carried:
	// it is read by the write path only, which never stores them.
	out := array.NewRecordBatch(target, cols, rec.NumRows())
	release()
	return out, present, nil
}

func joinNames(names []string) string {
	out := ""
	for i, n := range names {
		if i > 0 {
			out += ", "
		}
		out += n
	}
	return out
}
