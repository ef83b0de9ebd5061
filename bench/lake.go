package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"google.golang.org/grpc"

	"github.com/lakestream/lakestream/catalog"
	"github.com/lakestream/lakestream/columnarlog"
	"github.com/lakestream/lakestream/flightsrv"
	"github.com/lakestream/lakestream/planner/duck"
	"github.com/lakestream/lakestream/tables"
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
// planning of a union read (Resolver(store).Table(...).Plan, nothing read)
// over the first, the middle and the last lakeWindow rounds, late ÷ early
// and late ÷ middle (1 = flat).
// Once with maintenance as the node runs it (defaults, but snapshots expire
// by count: the rounds run back to back, milliseconds apart, so no
// snapshot would ever reach the default age of 10 minutes and age-based
// expiry would keep all of them), once without (no maintenance pass, and
// commit.manifest-merge.enabled turned off on the Iceberg table).
//
// union: Config.QueryRows rows, 90% tiered and 10% left in the log tail;
// GROUP BY queries over Flight SQL (the node's embedded DuckDB over the
// union, the query workload's path) against DuckDB in this process reading
// the snapshot's Parquet data files with read_parquet UNION ALL the same
// tail rows in a native table. Same answers on both sides, and every row
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

// lakeMaintenance is the maintenance policy of the workloads' service: the
// defaults of tiering.Maintenance except SnapshotAge (see above).
// EveryRounds and OrphanEveryRounds are spelled out because the workload,
// not the service's loop, runs the passes (flatRound); they are the
// defaults of maintain.go.
var lakeMaintenance = tiering.Maintenance{EveryRounds: 10, OrphanEveryRounds: 50, SnapshotAge: -1}

// lakeNode is a node's storage, lake and query path wired as node.Start
// wires them (tables.Store, tiering.Service on a SQLite Iceberg catalog
// with a file:// warehouse, the embedded DuckDB engine over the service's
// resolver, the Flight SQL server on 127.0.0.1:0), without the Serve loop:
// rounds and maintenance run only when the workload asks.
type lakeNode struct {
	dir, temp string // temp: removed by close
	cat       *catalog.Catalog
	store     *tables.Store
	ice       icecatalog.Catalog
	svc       *tiering.Service
	eng       *duck.Engine
	srv       *flightsrv.Server
	grpc      *grpc.Server
	served    chan error
	addr      string
	cl        *flightsql.Client
	created   int // tables, for their names
}

// startLakeNode opens a lake node in <DataDir>/<name>, or in a new temp dir.
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
	if err := os.MkdirAll(n.dir, 0o755); err != nil {
		return nil, err
	}
	quiet := slog.New(slog.DiscardHandler)
	if n.cat, err = catalog.Open(ctx, filepath.Join(n.dir, "catalog.db"), catalog.Config{DefaultBucketNum: 1}); err != nil {
		return nil, err
	}
	policy, _ := columnarlog.ParseSyncPolicy(cfg.Sync) // validated
	if n.store, err = tables.Open(ctx, n.cat, tables.Config{Dir: filepath.Join(n.dir, "tables"),
		Log: columnarlog.Options{Sync: policy, Logger: quiet}, Logger: quiet}); err != nil {
		return nil, err
	}
	if n.ice, err = tiering.OpenCatalog(ctx, tiering.StorageConfig{Catalog: "sqlite://" + filepath.Join(n.dir, "iceberg.db"),
		Warehouse: "file://" + filepath.Join(n.dir, "warehouse")}); err != nil {
		return nil, fmt.Errorf("lake catalog: %w", err)
	}
	if n.svc, err = tiering.New(ctx, n.ice, n.store, tiering.Config{Maintenance: lakeMaintenance, Logger: quiet}); err != nil {
		return nil, err
	}
	if n.eng, err = duck.New(n.store, duck.Options{Logger: quiet}); err != nil {
		return nil, err
	}
	if n.srv, err = flightsrv.New(n.store, n.eng, flightsrv.Options{Version: "bench", Logger: quiet}); err != nil {
		return nil, err
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	n.addr, n.grpc, n.served = lis.Addr().String(), n.srv.GRPCServer(), make(chan error, 1)
	go func() { n.served <- n.grpc.Serve(lis) }()
	if n.cl, err = dial(n.addr); err != nil {
		return nil, err
	}
	return n, nil
}

// close stops what start started, in reverse order.
func (n *lakeNode) close() error {
	var errs []error
	if n.cl != nil {
		errs = append(errs, n.cl.Close())
	}
	if n.grpc != nil {
		n.srv.Shutdown()
		n.grpc.Stop()
		if err := <-n.served; err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			errs = append(errs, err)
		}
	}
	if n.eng != nil {
		errs = append(errs, n.eng.Close())
	}
	if n.store != nil {
		n.store.SetLake(nil)
		errs = append(errs, n.store.Close())
	}
	if c, ok := n.ice.(interface{ Close() error }); ok {
		errs = append(errs, c.Close())
	}
	if n.cat != nil {
		errs = append(errs, n.cat.Close())
	}
	if n.temp != "" {
		errs = append(errs, os.RemoveAll(n.temp))
	}
	return errors.Join(errs...)
}

// createTable creates an events table like env.createTable (4 buckets by
// id, the configured codec), but one that tiers (datalake.enabled, the
// default).
func (n *lakeNode) createTable(ctx context.Context, prefix, codec string) (*tables.Table, error) {
	n.created++
	name := fmt.Sprintf("%s_%d", prefix, n.created)
	ddl := fmt.Sprintf("CREATE TABLE %s %s WITH ('bucket.num'='%d', 'bucket.key'='id', 'log.compression'='%s')",
		name, eventsDDL, tableBuckets, codec)
	if _, err := n.cl.ExecuteUpdate(ctx, ddl); err != nil {
		return nil, fmt.Errorf("%s: %w", ddl, err)
	}
	return n.store.Get(ctx, "", name)
}

func (n *lakeNode) dropTable(ctx context.Context, t *tables.Table) error {
	if _, err := n.cl.ExecuteUpdate(ctx, "DROP TABLE "+t.Def().Name); err != nil {
		return fmt.Errorf("drop %s: %w", t.Def().Name, err)
	}
	return nil
}

// tierAll runs rounds until everything committed to t's log is in the
// lake, and checks that want rows went.
func (n *lakeNode) tierAll(ctx context.Context, t *tables.Table, want int64) (rounds int, err error) {
	var rows int64
	for {
		res, err := n.svc.Round(ctx, t.Def().ID)
		if err != nil {
			return rounds, fmt.Errorf("tiering round %d of %s: %w", rounds+1, t.Name(), err)
		}
		rounds++
		rows += res.Rows
		if !res.Truncated {
			break
		}
	}
	if rows != want {
		return rounds, fmt.Errorf("tiering %s: %d rows went to the lake, want %d", t.Name(), rows, want)
	}
	return rounds, nil
}

// lakeTable loads t's Iceberg table from the catalog.
func (n *lakeNode) lakeTable(ctx context.Context, t *tables.Table) (*table.Table, error) {
	def := t.Def()
	return n.ice.LoadTable(ctx, table.Identifier{def.DB, def.Name})
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
