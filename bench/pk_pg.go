package bench

import (
	"context"
	"fmt"
	"net"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/jackc/pgx/v5"
)

// The PostgreSQL side of the primary-key workload (pk.go), on the same
// server as the other workloads (postgres.go):
//
//   - upserts take PostgreSQL's fastest path for a batch: in one
//     transaction, a binary COPY into a temporary staging table (ON COMMIT
//     DELETE ROWS: not WAL-logged, emptied by the commit) and
//     INSERT INTO t SELECT * FROM staging ON CONFLICT (id) DO UPDATE SET
//     every other column = EXCLUDED's; the commit is durable as an ingest
//     call is (synchronous_commit follows -sync).
//   - a point lookup is a named prepared statement, SELECT * FROM t
//     WHERE id = $1, run by pgx in one round trip (Bind, Execute, Sync in
//     one write);
//   - a batch lookup is the prepared SELECT * FROM t WHERE id = ANY($1),
//     the keys as one bigint[] parameter.
//
// Connections count the writes they make to their socket, so the report
// gives the round trips per lookup measured, not assumed.

const pgUpsertSQL = "INSERT INTO %s SELECT * FROM pk_stage ON CONFLICT (id) DO UPDATE SET " +
	"amount = EXCLUDED.amount, kind = EXCLUDED.kind, ts = EXCLUDED.ts"

// countConn counts the writes made to a connection.
type countConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c countConn) Write(b []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(b)
}

// pgConnectCounting opens n connections whose socket writes add to writes.
func (p *pgServer) connectCounting(ctx context.Context, n int, writes *atomic.Int64) ([]*pgx.Conn, func(), error) {
	conns := make([]*pgx.Conn, 0, n)
	closeAll := func() {
		for _, c := range conns {
			_ = c.Close(context.Background()) // a benchmark connection: nothing to flush
		}
	}
	for range n {
		cfg, err := pgx.ParseConfig(p.uri)
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		var d net.Dialer
		cfg.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return countConn{Conn: c, writes: writes}, nil
		}
		c, err := pgx.ConnectConfig(ctx, cfg)
		if err != nil {
			closeAll()
			return nil, nil, fmt.Errorf("postgres %s: %w", p.addr, err)
		}
		conns = append(conns, c)
	}
	return conns, closeAll, nil
}

// pgUpsert creates table with a primary key, upserts each writer's
// batches in order over its own connection (as sendLists does for the
// node), and returns the wall time of the upserts alone.
func pgUpsert(ctx context.Context, e *env, conns []*pgx.Conn, table string, lists [][]arrow.RecordBatch) (time.Duration, error) {
	if err := pgExec(ctx, conns[0], "CREATE TABLE "+table+" "+pgPKTableDDL); err != nil {
		return 0, err
	}
	for _, c := range conns {
		if err := pgExec(ctx, c, "CREATE TEMP TABLE IF NOT EXISTS pk_stage "+pgTableDDL+" ON COMMIT DELETE ROWS"); err != nil {
			return 0, err
		}
	}
	upsert := fmt.Sprintf(pgUpsertSQL, table)
	return sendLists(ctx, conns, lists, e.prog, func(ctx context.Context, c *pgx.Conn, rec arrow.RecordBatch) error {
		err := pgx.BeginFunc(ctx, c, func(tx pgx.Tx) error {
			n, err := tx.CopyFrom(ctx, pgx.Identifier{"pk_stage"}, pgColumns, newPGRows(rec))
			if err == nil && n != rec.NumRows() {
				err = fmt.Errorf("%d rows copied, %d sent", n, rec.NumRows())
			}
			if err != nil {
				return err
			}
			tag, err := tx.Exec(ctx, upsert)
			if err == nil && tag.RowsAffected() != rec.NumRows() {
				err = fmt.Errorf("%d rows upserted, %d sent", tag.RowsAffected(), rec.NumRows())
			}
			return err
		})
		if err != nil {
			return fmt.Errorf("postgres: upsert into %s: %w", table, err)
		}
		return nil
	})
}

// pgPKTableDDL is pgTableDDL with id the primary key.
const pgPKTableDDL = "(id bigint PRIMARY KEY, amount double precision, kind text, ts timestamptz)"

// pgLookup is one client's point lookup: the row of key, checked.
func pgLookup(ctx context.Context, c *pgx.Conn, key int64) error {
	var (
		id     int64
		amount float64
		kind   string
		ts     time.Time
	)
	if err := c.QueryRow(ctx, "pk_lookup", key).Scan(&id, &amount, &kind, &ts); err != nil {
		return fmt.Errorf("postgres: lookup %d: %w", key, err)
	}
	if id != key {
		return fmt.Errorf("postgres: lookup %d returned key %d", key, id)
	}
	return nil
}

// pgBatchLookup looks keys up in one call and checks that every key's row
// came back.
func pgBatchLookup(ctx context.Context, c *pgx.Conn, keys []int64) error {
	rows, err := c.Query(ctx, "pk_batch", keys)
	if err != nil {
		return fmt.Errorf("postgres: batch lookup: %w", err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		n++
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("postgres: batch lookup: %w", err)
	}
	if n != len(keys) {
		return fmt.Errorf("postgres: batch lookup of %d keys returned %d rows", len(keys), n)
	}
	return nil
}

// pgPrepareLookups prepares the point and batch lookups of table on every
// connection.
func pgPrepareLookups(ctx context.Context, conns []*pgx.Conn, table string) error {
	for _, c := range conns {
		if _, err := c.Prepare(ctx, "pk_lookup", "SELECT * FROM "+table+" WHERE id = $1"); err != nil {
			return fmt.Errorf("postgres: prepare: %w", err)
		}
		if _, err := c.Prepare(ctx, "pk_batch", "SELECT * FROM "+table+" WHERE id = ANY($1)"); err != nil {
			return fmt.Errorf("postgres: prepare: %w", err)
		}
	}
	return nil
}
