package main

import (
	"fmt"

	"github.com/lakestream/lakestream/catalog"
	"github.com/lakestream/lakestream/planner"
)

// commandTag is what `lakestream sql` prints for a statement that returns
// no rows, as psql does: INSERT n (psql's "INSERT 0 n" without the OID,
// which Lakestream does not have), DELETE n and UPDATE n, SELECT n for CREATE TABLE ... AS, and
// the statement's name for other DDL. n is the row count the server
// reported.
func commandTag(sql string, n int64) string {
	st, err := planner.Classify(sql)
	if err != nil {
		return "OK"
	}
	switch st.Kind {
	case planner.KindInsert:
		return fmt.Sprintf("INSERT %d", n)
	case planner.KindDelete:
		return fmt.Sprintf("DELETE %d", n)
	case planner.KindUpdate:
		return fmt.Sprintf("UPDATE %d", n)
	case planner.KindDDL:
	default:
		return "OK"
	}
	switch d := st.DDL.(type) {
	case *catalog.CreateTable:
		if d.AsQuery != "" {
			return fmt.Sprintf("SELECT %d", n)
		}
		return "CREATE TABLE"
	case *catalog.DropTable:
		return "DROP TABLE"
	case *catalog.AddColumn:
		return "ALTER TABLE"
	case *catalog.CreateDatabase:
		return "CREATE DATABASE"
	case *catalog.DropDatabase:
		return "DROP DATABASE"
	case *catalog.CreateView:
		return "CREATE VIEW"
	case *catalog.DropView:
		return "DROP VIEW"
	}
	return "OK"
}
