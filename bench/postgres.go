package bench

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/jackc/pgx/v5"
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

// pgServer is a running PostgreSQL.
type pgServer struct {
	srv     *server
	dir     string
	addr    string
	uri     string
	version string
}

// pgTableDDL is eventsDDL in PostgreSQL's spelling.
const pgTableDDL = "(id bigint NOT NULL, amount double precision, kind text, ts timestamptz)"

var pgColumns = []string{"id", "amount", "kind", "ts"}

// postgresBinDir is where initdb and postgres are: on PATH, else the
// newest of Debian's /usr/lib/postgresql/<version>/bin, else /usr/local/bin.
func postgresBinDir() string {
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p)
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.Sort(dirs)
	if len(dirs) > 0 {
		return dirs[len(dirs)-1]
	}
	return "/usr/local/bin"
}

func startPostgres(ctx context.Context, sync string) (*pgServer, error) {
	bin := postgresBinDir()
	if _, err := os.Stat(filepath.Join(bin, "initdb")); err != nil {
		return nil, fmt.Errorf("initdb not found (PATH, /usr/lib/postgresql/*/bin, /usr/local/bin): install PostgreSQL")
	}
	cred, err := unprivileged()
	if err != nil {
		return nil, err
	}
	base, err := os.MkdirTemp("", "lakestream-bench-pg-")
	if err != nil {
		return nil, err
	}
	p := &pgServer{dir: base}
	if err := p.initdb(ctx, bin, cred); err != nil {
		return nil, errors.Join(err, p.stop())
	}
	if err := p.serve(ctx, bin, cred, sync); err != nil {
		return nil, errors.Join(err, p.stop())
	}
	return p, nil
}

// env is the environment of initdb and postgres.
func (p *pgServer) env(bin string) []string {
	return []string{"LC_ALL=C", "LANG=C", "PATH=" + bin + ":/usr/bin:/bin", "HOME=" + p.dir}
}

// initdb creates the cluster in dir/data, owned by cred's user.
func (p *pgServer) initdb(ctx context.Context, bin string, cred *syscall.Credential) error {
	data, sock := filepath.Join(p.dir, "data"), filepath.Join(p.dir, "sock")
	if err := pgDirs(p.dir, cred, data, sock); err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres",
		"--auth=trust", "--encoding=UTF8", "--no-sync", "--no-instructions") // --no-sync: initdb's own writes only
	cmd.Env, cmd.SysProcAttr = p.env(bin), &syscall.SysProcAttr{Credential: cred}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("initdb: %v: %s", err, tailOf(out, 1500))
	}
	return nil
}

// serve starts postgres on a free loopback port and waits until it
// answers.
func (p *pgServer) serve(ctx context.Context, bin string, cred *syscall.Credential, sync string) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	commit := map[string]string{"always": "on", "never": "off"}[sync]
	cmd := exec.Command(filepath.Join(bin, "postgres"), "-D", filepath.Join(p.dir, "data"),
		"-h", "127.0.0.1", "-p", strconv.Itoa(port), "-k", filepath.Join(p.dir, "sock"),
		"-c", "fsync=on", "-c", "synchronous_commit="+commit, "-c", "full_page_writes=on",
		"-c", "shared_buffers=256MB", "-c", "max_wal_size=4GB", "-c", "max_connections=50",
		"-c", "max_parallel_workers_per_gather="+strconv.Itoa(runtime.GOMAXPROCS(0)), "-c", "TimeZone=UTC")
	cmd.Env = p.env(bin)
	// SIGINT is PostgreSQL's fast shutdown: it ends the sessions and waits
	// for every backend before the postmaster exits.
	if p.srv, err = startServer("postgres", cmd, cred, syscall.SIGINT); err != nil {
		return err
	}
	p.addr = fmt.Sprintf("127.0.0.1:%d", port)
	p.uri = fmt.Sprintf("postgres://postgres@%s/postgres?sslmode=disable", p.addr)
	return p.srv.waitReady(60*time.Second, func() error {
		c, err := p.connect(ctx)
		if err != nil {
			return err
		}
		defer c.Close(ctx)
		return c.QueryRow(ctx, "SHOW server_version").Scan(&p.version)
	})
}

// pgDirs makes data and sock, owned by cred's user, under base, which that
// user must be able to traverse.
func pgDirs(base string, cred *syscall.Credential, dirs ...string) error {
	if err := os.Chmod(base, 0o755); err != nil {
		return err
	}
	for _, d := range dirs {
		if err := os.Mkdir(d, 0o700); err != nil {
			return err
		}
		if cred != nil {
			if err := os.Chown(d, int(cred.Uid), int(cred.Gid)); err != nil {
				return err
			}
		}
	}
	return nil
}

// stop shuts the server down and removes its directory.
func (p *pgServer) stop() error {
	var err error
	if p.srv != nil {
		err = p.srv.stop()
	}
	return errors.Join(err, os.RemoveAll(p.dir))
}

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

// tailOf is the last n bytes of out, on one line.
func tailOf(out []byte, n int) string {
	t := &tailBuffer{max: n}
	_, _ = t.Write(out)
	return t.tail(n)
}
