package bench

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/jackc/pgx/v5"

	"github.com/lakestream/lakestream/internal/pgtest"
)

// The PostgreSQL baseline: a throwaway server started once per Run from
// the machine's binaries (initdb, postgres), on a free loopback port, trust
// auth, with commits as durable as the node's acknowledgements:
//
//	fsync=on, full_page_writes=on                         (the defaults)
//	synchronous_commit=on with sync=always (the default: a commit returns
//	    once its WAL is flushed), off with sync=never (it returns before)
//	shared_buffers=256MB, max_wal_size=4GB                 (room for the
//	    runs' WAL without a forced checkpoint in the middle of one)
//	max_parallel_workers_per_gather=GOMAXPROCS, TimeZone=UTC (as DuckDB)
//
// Under root it runs as the user nobody (PostgreSQL refuses root), the
// credential set on the process, in a temp dir handed to that user.
//
// Clients are pgx (github.com/jackc/pgx/v5), one connection per writer.
// Ingest is one binary COPY (pgx CopyFrom) per batch, each its own
// transaction, so each returns once its rows are durable, as an ingest
// call does. Queries read every row of the result; the count column is
// decoded, the others are received as bytes (as the DuckDB baseline
// leaves its vectors unconverted).

// pgServer is a running PostgreSQL (internal/pgtest starts it).
type pgServer struct {
	srv     *pgtest.Server
	addr    string
	uri     string
	version string
}

// pgTableDDL is eventsDDL in PostgreSQL's spelling.
const pgTableDDL = "(id bigint NOT NULL, amount double precision, kind text, ts timestamptz)"

var pgColumns = []string{"id", "amount", "kind", "ts"}

// postgresBinDir is where initdb and postgres are (pgtest.BinDir).
func postgresBinDir() string { return pgtest.BinDir() }

func startPostgres(ctx context.Context, sync string) (*pgServer, error) {
	commit := map[string]string{"always": "on", "never": "off"}[sync]
	srv, err := pgtest.Start(ctx, pgtest.Options{Settings: []string{
		"fsync=on", "synchronous_commit=" + commit, "full_page_writes=on",
		"shared_buffers=256MB", "max_wal_size=4GB", "max_connections=50",
		"max_parallel_workers_per_gather=" + strconv.Itoa(runtime.GOMAXPROCS(0)), "TimeZone=UTC",
	}})
	if errors.Is(err, pgtest.ErrNoPostgres) {
		return nil, fmt.Errorf("%w: install PostgreSQL", err)
	}
	if err != nil {
		return nil, err
	}
	return &pgServer{srv: srv, addr: srv.Addr, uri: srv.URI, version: srv.Version}, nil
}

// stop shuts the server down and removes its directory.
func (p *pgServer) stop() error { return p.srv.Stop() }

func (p *pgServer) connect(ctx context.Context) (*pgx.Conn, error) {
	c, err := pgx.Connect(ctx, p.uri)
	if err != nil {
		return nil, fmt.Errorf("postgres %s: %w", p.addr, err)
	}
	return c, nil
}

// connectN opens n connections, one per concurrent writer.
func (p *pgServer) connectN(ctx context.Context, n int) ([]*pgx.Conn, func(), error) {
	conns := make([]*pgx.Conn, 0, n)
	closeAll := func() {
		for _, c := range conns {
			_ = c.Close(context.Background()) // a benchmark connection: nothing to flush
		}
	}
	for range n {
		c, err := p.connect(ctx)
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		conns = append(conns, c)
	}
	return conns, closeAll, nil
}

// pgIngestAll sends recs round-robin over the connections, one COPY per
// batch (sendAll).
func pgIngestAll(ctx context.Context, conns []*pgx.Conn, table string, recs []arrow.RecordBatch, prog *progress) (time.Duration, error) {
	return sendAll(ctx, conns, recs, prog, func(ctx context.Context, c *pgx.Conn, rec arrow.RecordBatch) error {
		n, err := c.CopyFrom(ctx, pgx.Identifier{table}, pgColumns, newPGRows(rec))
		if err == nil && n != rec.NumRows() {
			err = fmt.Errorf("%d rows copied, %d sent", n, rec.NumRows())
		}
		if err != nil {
			return fmt.Errorf("postgres: copy into %s: %w", table, err)
		}
		return nil
	})
}

// pgRows feeds an events record to CopyFrom row by row (pgx's
// CopyFromSource), reusing one value slice.
type pgRows struct {
	ids     []int64
	amounts []float64
	kinds   *array.String
	ts      []arrow.Timestamp
	i       int
	vals    []any
}

func newPGRows(rec arrow.RecordBatch) *pgRows {
	return &pgRows{
		ids:     rec.Column(0).(*array.Int64).Int64Values(),
		amounts: rec.Column(1).(*array.Float64).Float64Values(),
		kinds:   rec.Column(2).(*array.String),
		ts:      rec.Column(3).(*array.Timestamp).TimestampValues(),
		i:       -1,
		vals:    make([]any, 4),
	}
}

func (r *pgRows) Next() bool { r.i++; return r.i < len(r.ids) }
func (r *pgRows) Err() error { return nil }

func (r *pgRows) Values() ([]any, error) {
	r.vals[0], r.vals[1], r.vals[2] = r.ids[r.i], r.amounts[r.i], r.kinds.Value(r.i)
	r.vals[3] = time.UnixMicro(int64(r.ts[r.i])).UTC()
	return r.vals, nil
}

// pgExec runs a statement without results.
func pgExec(ctx context.Context, c *pgx.Conn, sql string) error {
	if _, err := c.Exec(ctx, sql); err != nil {
		return fmt.Errorf("postgres: %s: %w", sql, err)
	}
	return nil
}

// pgCheckRows checks that table holds want rows.
func pgCheckRows(ctx context.Context, c *pgx.Conn, table string, want int64) error {
	var got int64
	if err := c.QueryRow(ctx, "SELECT count(*) FROM "+table).Scan(&got); err != nil {
		return fmt.Errorf("postgres: count %s: %w", table, err)
	}
	if got != want {
		return fmt.Errorf("postgres: %s holds %d rows after COPY, want %d", table, got, want)
	}
	return nil
}

// pgQuery runs sql and reads the whole result; it returns the result's
// rows and the sum of its bigint column sumCol.
func pgQuery(ctx context.Context, c *pgx.Conn, sql string, sumCol int) (rows, sum int64, err error) {
	rs, err := c.Query(ctx, sql)
	if err != nil {
		return 0, 0, fmt.Errorf("postgres: %w", err)
	}
	defer rs.Close()
	binaryCol := rs.FieldDescriptions()[sumCol].Format == pgx.BinaryFormatCode
	for rs.Next() {
		raw := rs.RawValues()[sumCol]
		var v int64
		if binaryCol && len(raw) == 8 {
			v = int64(binary.BigEndian.Uint64(raw))
		} else if v, err = strconv.ParseInt(string(raw), 10, 64); err != nil {
			return 0, 0, fmt.Errorf("postgres: column %d: %w", sumCol, err)
		}
		sum += v
		rows++
	}
	if err := rs.Err(); err != nil {
		return 0, 0, fmt.Errorf("postgres: %w", err)
	}
	return rows, sum, nil
}
