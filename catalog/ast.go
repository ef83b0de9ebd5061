package catalog

// Statement is a parsed DDL statement: *CreateDatabase, *DropDatabase,
// *CreateTable, *DropTable, *AddColumn, *CreateView or *DropView.
type Statement interface {
	statement()
}

// DefaultDatabase is the database that exists from the start, cannot be
// dropped, and holds tables named without a database.
const DefaultDatabase = "default"

// TableName is a possibly qualified table name. An empty DB means the
// session's current database; Catalog.Exec uses DefaultDatabase, and a caller
// with another current database sets DB before calling Exec.
type TableName struct {
	DB   string
	Name string
}

// String returns db.name with each part quoted as needed.
func (n TableName) String() string {
	if n.DB == "" {
		return QuoteIdent(n.Name)
	}
	return QuoteIdent(n.DB) + "." + QuoteIdent(n.Name)
}

// CreateDatabase is CREATE DATABASE [IF NOT EXISTS] name.
type CreateDatabase struct {
	Name        string
	IfNotExists bool
}

// DropDatabase is DROP DATABASE [IF EXISTS] name [CASCADE].
type DropDatabase struct {
	Name     string
	IfExists bool
	Cascade  bool
}

// CreateTable is CREATE TABLE as written: nothing is resolved or validated
// yet beyond syntax (see Resolve).
type CreateTable struct {
	Table       TableName
	IfNotExists bool
	Columns     []Column
	PrimaryKey  []string
	Partition   []PartitionField
	// Options are the WITH ('key' = 'value') pairs; keys are lower-cased.
	Options map[string]string
	// AsQuery is the query of CREATE TABLE ... AS <query>, as written
	// (without a trailing semicolon); "" for a plain CREATE TABLE. Its
	// columns are the query's, which the caller fills in as Columns
	// before Exec; the parenthesised list may then hold only PRIMARY KEY.
	AsQuery string
}

// DropTable is DROP TABLE [IF EXISTS] name.
type DropTable struct {
	Table    TableName
	IfExists bool
}

// AddColumn is ALTER TABLE name ADD [COLUMN] col TYPE. The column is always
// nullable: existing rows have no value for it.
type AddColumn struct {
	Table  TableName
	Column Column
}

func (*CreateDatabase) statement() {}
func (*DropDatabase) statement()   {}
func (*CreateTable) statement()    {}
func (*DropTable) statement()      {}
func (*AddColumn) statement()      {}
func (*CreateView) statement()     {}
func (*DropView) statement()       {}

// CreateView is CREATE [OR REPLACE] VIEW [IF NOT EXISTS] name AS query. The
// query is kept as written; the caller checks it with the query engine
// before Exec.
type CreateView struct {
	View        TableName
	OrReplace   bool
	IfNotExists bool
	Query       string
}

// DropView is DROP VIEW [IF EXISTS] name.
type DropView struct {
	View     TableName
	IfExists bool
}
