package catalog

import (
	"context"
	"database/sql"
	"strconv"
	"strings"
)

// dialect is what differs between the catalog's two databases. The
// statements are shared, written for SQLite with ? placeholders and
// unqualified table names; on PostgreSQL the tables live in the schema
// pgSchema, which every connection has as its search_path, so the names
// need no rewriting (postgres.go).
type dialect struct {
	name string // "sqlite" or "postgres", for errors
	// shared is set when other processes may write the same catalog
	// (PostgreSQL): every write then locks the change counter first and
	// reloads the snapshot when it moved (write.go).
	shared bool
	// writeTx are the options of a write transaction: on PostgreSQL READ
	// COMMITTED whatever the server's default_transaction_isolation, so
	// that the statements after the counter's lock see every write
	// committed before it (under REPEATABLE READ the lock would fail
	// with a serialization error instead of waiting its turn).
	writeTx *sql.TxOptions
}

var (
	sqliteDialect   = dialect{name: "sqlite"}
	postgresDialect = dialect{name: "postgres", shared: true, writeTx: &sql.TxOptions{Isolation: sql.LevelReadCommitted}}
)

// q turns a statement's ? placeholders into the database's.
func (d dialect) q(query string) string {
	if d.shared {
		return rebindDollar(query)
	}
	return query
}

// insertID runs an INSERT into a table whose id column the database
// assigns, and returns the id: SQLite's last insert rowid, PostgreSQL's
// RETURNING id (pgx has no LastInsertId).
func (d dialect) insertID(ctx context.Context, tx *sql.Tx, query string, args ...any) (int64, error) {
	if !d.shared {
		res, err := tx.ExecContext(ctx, query, args...)
		if err != nil {
			return 0, err
		}
		return res.LastInsertId()
	}
	var id int64
	err := tx.QueryRowContext(ctx, d.q(query+" RETURNING id"), args...).Scan(&id)
	return id, err
}

// rebindDollar numbers ? placeholders as $1, $2, … (PostgreSQL). The
// catalog's statements hold no ? inside a literal.
func rebindDollar(q string) string {
	var b strings.Builder
	n := 0
	for _, r := range q {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// querier is a *sql.DB or a *sql.Tx: the loads run on either.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}
