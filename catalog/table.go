package catalog

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
)

// Column is one column of a table.
type Column struct {
	Name    string
	Type    Type
	NotNull bool
}

// Transform is a partition transform, named as in Iceberg.
type Transform string

// The partition transforms. Day, month and year apply to DATE, TIMESTAMP and
// TIMESTAMPTZ columns; hour to TIMESTAMP and TIMESTAMPTZ.
const (
	TransformIdentity Transform = "identity"
	TransformYear     Transform = "year"
	TransformMonth    Transform = "month"
	TransformDay      Transform = "day"
	TransformHour     Transform = "hour"
)

func (t Transform) valid() bool {
	switch t {
	case TransformIdentity, TransformYear, TransformMonth, TransformDay, TransformHour:
		return true
	}
	return false
}

// PartitionField is one field of PARTITIONED BY: a column and a transform.
type PartitionField struct {
	Column    string
	Transform Transform
}

// String returns the field as written in DDL: col or day(col).
func (f PartitionField) String() string {
	if f.Transform == TransformIdentity {
		return QuoteIdent(f.Column)
	}
	return string(f.Transform) + "(" + QuoteIdent(f.Column) + ")"
}

// Schema is one version of a table's columns. Versions only ever append
// nullable columns, so a column keeps its index in every later version.
type Schema struct {
	ID        int32
	Columns   []Column
	CreatedAt time.Time
	arrow     *arrow.Schema
}

// Arrow returns the Arrow schema of this version: one field per column,
// nullable unless the column is NOT NULL.
func (s *Schema) Arrow() *arrow.Schema { return s.arrow }

func newSchema(id int32, cols []Column, at time.Time) *Schema {
	fields := make([]arrow.Field, len(cols))
	for i, c := range cols {
		fields[i] = arrow.Field{Name: c.Name, Type: ArrowType(c.Type), Nullable: !c.NotNull}
	}
	return &Schema{ID: id, Columns: cols, CreatedAt: at, arrow: arrow.NewSchema(fields, nil)}
}

// Table is an immutable snapshot of a table definition. Callers must not
// modify it (nor its slices and maps); a change to the table, such as ADD
// COLUMN, produces a new *Table.
type Table struct {
	// ID is unique and never reused, also after DROP TABLE; callers use it
	// as the table's directory name on disk.
	ID         int64
	DB         string
	Name       string
	Columns    []Column // the current schema's columns
	PrimaryKey []string // empty for log (append-only) tables
	Partition  []PartitionField
	Options    Options
	// RawOptions are the WITH options as written, lower-cased keys, for
	// display (SHOW CREATE TABLE, GetTables).
	RawOptions map[string]string
	SchemaID   int32 // the current schema version, starting at 0
	CreatedAt  time.Time
	// LakeCreatedAt is when the table's lake table was created, as the
	// tiering service recorded it (SetLakeCreated); zero if it did not,
	// or before the catalog recorded it (tables of catalog schema
	// version 1).
	LakeCreatedAt time.Time

	schemas []*Schema // every version, index = schema id
}

// FullName returns "db.name", for messages and logs.
func (t *Table) FullName() string { return t.DB + "." + t.Name }

// HasPrimaryKey reports whether the table is a primary-key table.
func (t *Table) HasPrimaryKey() bool { return len(t.PrimaryKey) > 0 }

// ArrowSchema returns the Arrow schema of the current version.
func (t *Table) ArrowSchema() *arrow.Schema { return t.schemas[t.SchemaID].arrow }

// SchemaAt returns schema version id.
func (t *Table) SchemaAt(id int32) (*Schema, error) {
	if id < 0 || int(id) >= len(t.schemas) {
		return nil, fmt.Errorf("table %q schema %d: %w", t.FullName(), id, ErrSchemaNotFound)
	}
	return t.schemas[id], nil
}

// Schemas returns every schema version, oldest first.
func (t *Table) Schemas() []*Schema { return t.schemas }

// ArrowSchemaAt returns the Arrow schema of version id.
func (t *Table) ArrowSchemaAt(id int32) (*arrow.Schema, error) {
	s, err := t.SchemaAt(id)
	if err != nil {
		return nil, err
	}
	return s.arrow, nil
}

// ColumnIndex returns the index of the named column, or -1.
func (t *Table) ColumnIndex(name string) int { return columnIndex(t.Columns, name) }

// ColumnIndexFold finds a column by name as DuckDB resolves an unquoted
// name: exactly, else ignoring case; -1 if none.
func (t *Table) ColumnIndexFold(name string) int {
	if c := t.ColumnIndex(name); c >= 0 {
		return c
	}
	for i, c := range t.Columns {
		if strings.EqualFold(c.Name, name) {
			return i
		}
	}
	return -1
}

// The suffixes of a table's virtual names: "t$lake" is table t's lake layer
// alone, "t$changelog" its retained log as a changelog.
const (
	LakeSuffix      = "$lake"
	ChangelogSuffix = "$changelog"
)

// CutSuffixFold returns name without suffix, compared ignoring case, and
// whether name ended with it after at least one other character.
func CutSuffixFold(name, suffix string) (string, bool) {
	n := len(name) - len(suffix)
	if n > 0 && strings.EqualFold(name[n:], suffix) {
		return name[:n], true
	}
	return name, false
}

func columnIndex(cols []Column, name string) int {
	for i, c := range cols {
		if c.Name == name {
			return i
		}
	}
	return -1
}

// BucketKeyIndexes returns the column indexes of the bucket key (empty:
// batches are spread round-robin). They are valid in every schema version.
func (t *Table) BucketKeyIndexes() []int { return t.indexes(t.Options.BucketKey) }

// PrimaryKeyIndexes returns the column indexes of the primary key.
func (t *Table) PrimaryKeyIndexes() []int { return t.indexes(t.PrimaryKey) }

func (t *Table) indexes(names []string) []int {
	idx := make([]int, len(names))
	for i, n := range names {
		idx[i] = t.ColumnIndex(n)
	}
	return idx
}

// DDL returns a CREATE TABLE statement that recreates the current
// definition, with the options as written.
func (t *Table) DDL() string {
	var b strings.Builder
	fmt.Fprintf(&b, "CREATE TABLE %s (\n", TableName{DB: t.DB, Name: t.Name})
	for i, c := range t.Columns {
		fmt.Fprintf(&b, "    %s %s", QuoteIdent(c.Name), TypeString(c.Type))
		if c.NotNull {
			b.WriteString(" NOT NULL")
		}
		if i < len(t.Columns)-1 || t.HasPrimaryKey() {
			b.WriteString(",")
		}
		b.WriteString("\n")
	}
	if t.HasPrimaryKey() {
		fmt.Fprintf(&b, "    PRIMARY KEY (%s)\n", joinIdents(t.PrimaryKey))
	}
	b.WriteString(")")
	if len(t.Partition) > 0 {
		parts := make([]string, len(t.Partition))
		for i, f := range t.Partition {
			parts[i] = f.String()
		}
		fmt.Fprintf(&b, "\nPARTITIONED BY (%s)", strings.Join(parts, ", "))
	}
	writeOptions(&b, t.RawOptions)
	return b.String()
}

func writeOptions(b *strings.Builder, opts map[string]string) {
	if len(opts) == 0 {
		return
	}
	keys := make([]string, 0, len(opts))
	for k := range opts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	b.WriteString("\nWITH (")
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(b, "%s = %s", quoteString(k), quoteString(opts[k]))
	}
	b.WriteString(")")
}

func joinIdents(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = QuoteIdent(n)
	}
	return strings.Join(q, ", ")
}

func quoteString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
