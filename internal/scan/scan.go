// Package scan is the read contract between the query engine and the places
// a table's rows live: the columnar log and the Iceberg lake. The engine
// reads data only through these interfaces, so a query runs the same over
// the log, the lake, or their union (package tables captures which one a
// read covers; docs/architecture.md).
//
// scan imports nothing of the project.
package scan

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
)

// ErrTableNotFound is returned by a Resolver for an unknown table.
var ErrTableNotFound = errors.New("table not found")

// Resolver finds tables by name. An empty db means the default database.
type Resolver interface {
	Table(ctx context.Context, db, name string) (Table, error)
}

// Table is a readable table.
type Table interface {
	// Name is "db.table".
	Name() string
	// Schema is the table's current schema.
	Schema() *arrow.Schema
	// Plan captures what a scan will read, as of now: rows committed after
	// Plan returns are not part of it.
	Plan(ctx context.Context, req Request) (Plan, error)
}

// Request narrows a scan. Pushdown may only prune: the caller re-applies its
// full predicate to whatever the scan returns.
type Request struct {
	// Columns are indexes into the table schema, in output order; nil means
	// all columns.
	Columns []int
	// Filters are conjuncts the scan may use to skip data. Optional.
	Filters []Filter
}

// Filter is one simple predicate: Column Op Value.
type Filter struct {
	Column int    // index into the table schema
	Op     string // "=", "<", "<=", ">", ">=", "IS NULL", "IS NOT NULL"
	Value  any    // Go value of the column's type; nil for the IS forms
}

// Plan is a captured scan, split into parts that can be read in parallel.
type Plan interface {
	// Schema is the schema of the records the parts return.
	Schema() *arrow.Schema
	Parts() []Part
}

// Part is an independently readable piece of a plan (e.g. one bucket).
type Part interface {
	Open(ctx context.Context) (RecordStream, error)
}

// RecordStream yields decoded record batches. Next returns (nil, io.EOF) at
// the end. A returned record is owned by the caller, who releases it.
type RecordStream interface {
	Next() (arrow.RecordBatch, error)
	Close() error
}

// Columns is cols, or every column of a schema of n fields when cols is
// nil (a Request's "all columns").
func Columns(cols []int, n int) []int {
	if cols != nil {
		return cols
	}
	all := make([]int, n)
	for i := range all {
		all[i] = i
	}
	return all
}

// ProjectSchema is the schema of the fields cols of schema, in that order;
// an index out of range is an error.
func ProjectSchema(schema *arrow.Schema, cols []int) (*arrow.Schema, error) {
	fields := make([]arrow.Field, len(cols))
	for i, c := range cols {
		if c < 0 || c >= schema.NumFields() {
			return nil, fmt.Errorf("column %d out of range (%d columns)", c, schema.NumFields())
		}
		fields[i] = schema.Field(c)
	}
	return arrow.NewSchema(fields, nil), nil
}

// NewPlan returns a Plan of the given schema and parts.
func NewPlan(schema *arrow.Schema, parts []Part) Plan { return plan{schema, parts} }

type plan struct {
	schema *arrow.Schema
	parts  []Part
}

func (p plan) Schema() *arrow.Schema { return p.schema }
func (p plan) Parts() []Part         { return p.parts }

// FieldIndex is the index of the field of schema named name as an unquoted
// SQL name resolves: the exact name if a field has it, else the first
// field whose name matches ignoring case; -1 when none does.
func FieldIndex(schema *arrow.Schema, name string) int {
	if idx := schema.FieldIndices(name); len(idx) > 0 {
		return idx[0]
	}
	for i, f := range schema.Fields() {
		if strings.EqualFold(f.Name, name) {
			return i
		}
	}
	return -1
}

// RecordPart is a part that streams rec, once per Open: a system table's
// rows, built when planned. The part keeps its own reference to rec.
func RecordPart(rec arrow.RecordBatch) Part { return recordPart{rec} }

type recordPart struct{ rec arrow.RecordBatch }

func (p recordPart) Open(context.Context) (RecordStream, error) {
	p.rec.Retain()
	return &recordStream{rec: p.rec}, nil
}

type recordStream struct{ rec arrow.RecordBatch }

func (s *recordStream) Next() (arrow.RecordBatch, error) {
	if s.rec == nil {
		return nil, io.EOF
	}
	r := s.rec
	s.rec = nil
	return r, nil
}

func (s *recordStream) Close() error {
	if s.rec != nil {
		s.rec.Release()
		s.rec = nil
	}
	return nil
}
