package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/iceberg-go/table"

	"github.com/lakestream/lakestream/node"
	"github.com/lakestream/lakestream/tiering"
)

// The lake workloads: tiering into Apache Iceberg, and queries over the
// union of the lake and the log tail.
//
// tiering (a), throughput: Config.Rows rows ingested into a fresh table
// (untimed), then tiering rounds until the backlog is in the lake, timed,
// with the process's CPU time (getrusage: every thread, DuckDB's and the
// idle env node's included) around them. The ceiling writes the same rows,
// from memory, to one zstd Parquet file per bucket with arrow-go's pqarrow
// and iceberg-go's default writer settings, the files in parallel: the
// Parquet encoding a round cannot avoid, without the log read, the
// partitioning, the manifests or the commit.
//
// tiering (b), flatness: Config.LakeRounds rounds, each after a 1,000-row
// ingest; commit latency (RoundResult.Commit), the whole round, and the
// planning of a union read (node.Resolver().Table(...).Plan, nothing read)
// over the first, the middle and the last lakeWindow rounds, late ÷ early
// and late ÷ middle (1 = flat).
// Once with maintenance as the node's loop runs it (a pass every
// lakeMaintainEvery rounds, orphans every lakeOrphansEvery; the policy's
// defaults, but snapshots expire by count: the rounds run back to back,
// milliseconds apart, so no snapshot would ever reach the default age of
// 10 minutes and age-based expiry would keep all of them), once without
// (no maintenance pass, and commit.manifest-merge.enabled turned off on
// the Iceberg table).
//
// union: Config.QueryRows rows, 90% tiered and 10% left in the log tail;
// SELECT * of the union and of "t$lake" against the ceiling serving the
// same records, then GROUP BY queries over Flight SQL (the node's embedded
// DuckDB over the union, the query workload's path) against DuckDB in this
// process reading the snapshot's Parquet data files with read_parquet
// UNION ALL the same tail rows in a native table (duckdb.go: a baseline,
// not the node's engine). Same answers on both sides, and every row
// counted once.
//
// Both run on a lakeNode of their own rather than on the env's node, whose
// Serve loop tiers every table on its own schedule (datalake.freshness):
// the workloads must choose when rounds run, and read RoundResult.

// lakeWindow is the rounds averaged at each end of the flatness series
// (trimmedMean).
const lakeWindow = 10

// flatIngestRows is the rows ingested before each round of the flatness
// series.
const flatIngestRows = 1000

// lakeMaintenance is the maintenance policy of the workloads' node: the
// defaults of tiering.Maintenance except SnapshotAge (see above).
var lakeMaintenance = tiering.Maintenance{SnapshotAge: -1}

// lakeMaintainEvery and lakeOrphansEvery schedule the flatness series'
// maintenance passes (runFlatSeries) as the node's loop schedules them by
// default (tiering.Maintenance's EveryRounds and OrphanEveryRounds): the
// lake node runs no loop, so the workload runs the passes.
const (
	lakeMaintainEvery = 10
	lakeOrphansEvery  = 50
)

// lakeNode is a node started by node.Start as `lakestream serve` starts one
// (its default SQLite Iceberg catalog and file:// warehouse in its data
// dir, Flight SQL on 127.0.0.1:0, HTTP off) but with node.TieringManual:
// Serve runs no tiering loop, so rounds and maintenance run only when the
// workload asks (node.Lake). The workloads reach the node's parts only
// through node's accessors.
type lakeNode struct {
	dir, temp string // temp: removed by close
	node      *node.Node
	stop      context.CancelFunc // ends Serve
	served    chan error         // Serve's result
	addr      string
	cl        *flightsql.Client
	created   int // tables, for their names
}

// lakeTableRef names a table of a lake node: its ID for the tiering
// service, its database and name for SQL and the Iceberg catalog, full
// ("db.name") as the service's Status reports it.
type lakeTableRef struct {
	id             int64
	db, name, full string
}

// startLakeNode starts a lake node in <DataDir>/<name>, or in a new temp
// dir, and serves it until close.
func startLakeNode(ctx context.Context, cfg Config, name string) (_ *lakeNode, err error) {
	n := &lakeNode{}
	defer func() {
		if err != nil {
			err = errors.Join(err, n.close())
		}
	}()
	if cfg.DataDir != "" {
		n.dir = filepath.Join(cfg.DataDir, name)
	} else if n.dir, err = os.MkdirTemp("", "lakestream-bench-"+name+"-"); err != nil {
		return nil, err
	} else {
		n.temp = n.dir
	}
	nd, err := node.Start(ctx, node.Config{DataDir: n.dir, Listen: "127.0.0.1:0", HTTP: "off", Sync: cfg.Sync,
		Tiering: node.TieringManual, LakeMaintenance: lakeMaintenance, Version: "bench", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return nil, fmt.Errorf("start lake node: %w", err)
	}
	serveCtx, stop := context.WithCancel(context.Background())
	n.node, n.stop, n.served, n.addr = nd, stop, make(chan error, 1), nd.Addr()
	go func() { n.served <- nd.Serve(serveCtx) }()
	if n.cl, err = dial(n.addr); err != nil {
		return nil, err
	}
	return n, nil
}

// close stops what start started, in reverse order: Serve closes the
// node's storage when it returns.
func (n *lakeNode) close() error {
	var errs []error
	if n.cl != nil {
		errs = append(errs, n.cl.Close())
	}
	if n.stop != nil {
		n.stop()
		errs = append(errs, <-n.served)
	}
	if n.temp != "" {
		errs = append(errs, os.RemoveAll(n.temp))
	}
	return errors.Join(errs...)
}

// createTable creates an events table like env.createTable (4 buckets by
// id, the configured codec), but one that tiers (datalake.enabled, the
// default).
func (n *lakeNode) createTable(ctx context.Context, prefix, codec string) (lakeTableRef, error) {
	n.created++
	name := fmt.Sprintf("%s_%d", prefix, n.created)
	ddl := fmt.Sprintf("CREATE TABLE %s %s WITH ('bucket.num'='%d', 'bucket.key'='id', 'log.compression'='%s')",
		name, eventsDDL, tableBuckets, codec)
	if _, err := n.cl.ExecuteUpdate(ctx, ddl); err != nil {
		return lakeTableRef{}, fmt.Errorf("%s: %w", ddl, err)
	}
	t, err := n.node.Tables().Get(ctx, "", name)
	if err != nil {
		return lakeTableRef{}, err
	}
	def := t.Def()
	return lakeTableRef{id: def.ID, db: def.DB, name: def.Name, full: def.FullName()}, nil
}

func (n *lakeNode) dropTable(ctx context.Context, t lakeTableRef) error {
	if _, err := n.cl.ExecuteUpdate(ctx, "DROP TABLE "+t.name); err != nil {
		return fmt.Errorf("drop %s: %w", t.name, err)
	}
	return nil
}

// tierAll runs rounds until everything committed to t's log is in the
// lake, and checks that want rows went.
func (n *lakeNode) tierAll(ctx context.Context, t lakeTableRef, want int64) (rounds int, err error) {
	var rows int64
	for {
		res, err := n.node.Lake().Round(ctx, t.id)
		if err != nil {
			return rounds, fmt.Errorf("tiering round %d of %s: %w", rounds+1, t.full, err)
		}
		rounds++
		rows += res.Rows
		if !res.Truncated {
			break
		}
	}
	if rows != want {
		return rounds, fmt.Errorf("tiering %s: %d rows went to the lake, want %d", t.full, rows, want)
	}
	return rounds, nil
}

// lakeTable loads t's Iceberg table from the node's lake catalog.
func (n *lakeNode) lakeTable(ctx context.Context, t lakeTableRef) (*table.Table, error) {
	return n.node.LakeCatalog().LoadTable(ctx, table.Identifier{t.db, t.name})
}

// cpuTime is the CPU time, user and system, of every thread of this
// process so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
