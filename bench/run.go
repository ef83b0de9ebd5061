package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// env is what the workloads share: the node, the ceiling and the progress
// line.
type env struct {
	cfg      Config
	prog     *progress
	nodeAddr string
	node     *flightsql.Client // for DDL and single-client work
	ceilAddr string
	ceilCl   *flightsql.Client // one connection, as e.node
	tables   int
	base     *baselines // PostgreSQL, Kafka: started once, or why not (baselines.go)
	dataDir  string     // the node's
	// nodeCPU and ceilCPU are the CPU time each server process has used,
	// in seconds; nil when the servers run in this process (server.go).
	nodeCPU, ceilCPU func() (float64, error)
	nodePID          int // the node's process; 0: this one
}

// runners run one workload each.
var runners = map[string]func(context.Context, *env) (*WorkloadReport, error){
	"ingest":    runIngest,
	"scan":      runScan,
	"query":     runQuery,
	"subscribe": runSubscribe,
	"pk":        runPK,
	// lake.go: on a lake node of their own, not on this env's node
	"tiering": runTiering,
	"union":   runUnion,
	"pklake":  runPKLake,  // pk_lake.go
	"cluster": runCluster, // cluster.go: a cluster of its own
}

// Run starts a node and the baselines in this process, runs the selected
// workloads in the order of Workloads, and writes results.json and
// results.html to cfg.OutDir when it is set. On a workload's error it
// returns the report of the workloads before it with the error.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	cfg.EnsureDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("bench config: %w", err)
	}
	start := time.Now()
	rep := &Report{Started: start.UTC().Truncate(time.Second), Machine: thisMachine(), Settings: settingsOf(cfg)}
	e, closeEnv, err := openEnv(ctx, cfg)
	if err != nil {
		return nil, err
	}
	runErr := func() error {
		for _, name := range Workloads {
			if !cfg.has(name) {
				continue
			}
			w, err := runners[name](ctx, e)
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			rep.Workloads = append(rep.Workloads, w)
		}
		return nil
	}()
	err = errors.Join(runErr, closeEnv())
	rep.ElapsedS = time.Since(start).Seconds()
	if err == nil && cfg.OutDir != "" {
		err = rep.writeFiles(cfg.OutDir)
	}
	return rep, err
}

// openEnv starts the node (a temp data dir unless cfg.DataDir) and the
// ceiling; closeEnv stops both and removes the temp dir.
func openEnv(ctx context.Context, cfg Config) (*env, func() error, error) {
	prog := newProgress(cfg.Progress)
	dir, temp := cfg.DataDir, cfg.DataDir == ""
	if temp {
		var err error
		if dir, err = os.MkdirTemp("", "lakestream-bench-"); err != nil {
			prog.close()
			return nil, nil, err
		}
	}
	cleanups := []func() error{func() error { prog.close(); return nil }}
	closeAll := func() error {
		var errs []error
		for i := len(cleanups) - 1; i >= 0; i-- {
			errs = append(errs, cleanups[i]())
		}
		if temp {
			errs = append(errs, os.RemoveAll(dir))
		}
		return errors.Join(errs...)
	}
	fail := func(err error) (*env, func() error, error) {
		return nil, nil, errors.Join(err, closeAll())
	}
	nodeSrv, ceilSrv, err := startServers(ctx, cfg, dir, prog)
	if err != nil {
		return fail(err)
	}
	cleanups = append(cleanups, nodeSrv.stop, ceilSrv.stop)
	cl, err := dial(nodeSrv.addr)
	if err != nil {
		return fail(err)
	}
	cleanups = append(cleanups, cl.Close)
	ceilCl, err := dial(ceilSrv.addr)
	if err != nil {
		return fail(err)
	}
	cleanups = append(cleanups, ceilCl.Close)
	base, stopBase := startBaselines(ctx, cfg, prog)
	cleanups = append(cleanups, stopBase)
	return &env{cfg: cfg, prog: prog, nodeAddr: nodeSrv.addr, node: cl, ceilAddr: ceilSrv.addr, ceilCl: ceilCl, base: base, dataDir: dir,
		nodeCPU: nodeSrv.cpu, ceilCPU: ceilSrv.cpu, nodePID: nodeSrv.pid}, closeAll, nil
}

// startServers starts the node (its data in dir) and the ceiling, each in
// a child process when cfg.ServerCommand is set, else in this process.
func startServers(ctx context.Context, cfg Config, dir string, prog *progress) (nodeSrv, ceilSrv *server, err error) {
	if len(cfg.ServerCommand) > 0 {
		prog.logf("starting a node process in %s (sync=%s) and a ceiling process", dir, cfg.Sync)
		nodeArgs, ceilArgs := []string{"-data-dir", dir, "-sync", cfg.Sync}, []string(nil)
		if p := cfg.ServerCPUProfile; p != "" {
			ext := filepath.Ext(p)
			nodeArgs = append(nodeArgs, "-cpuprofile", p)
			ceilArgs = append(ceilArgs, "-cpuprofile", strings.TrimSuffix(p, ext)+"-ceiling"+ext)
		}
		if nodeSrv, err = startChild(cfg.ServerCommand, "node", nodeArgs...); err != nil {
			return nil, nil, err
		}
		if ceilSrv, err = startChild(cfg.ServerCommand, "ceiling", ceilArgs...); err != nil {
			return nil, nil, errors.Join(err, nodeSrv.stop())
		}
		return nodeSrv, ceilSrv, nil
	}
	prog.logf("starting a node in %s (sync=%s)", dir, cfg.Sync)
	serveCtx, stopServe := context.WithCancel(context.Background())
	n, err := startNode(ctx, dir, "127.0.0.1:0", cfg.Sync)
	if err != nil {
		stopServe()
		return nil, nil, err
	}
	served := make(chan error, 1)
	go func() { served <- n.Serve(serveCtx) }()
	nodeSrv = &server{addr: n.Addr(), stop: func() error { stopServe(); return <-served }}
	_, ceilAddr, stopCeil, err := startCeiling(serveCtx, "127.0.0.1:0")
	if err != nil {
		return nil, nil, errors.Join(err, nodeSrv.stop())
	}
	return nodeSrv, &server{addr: ceilAddr, stop: func() error { stopCeil(); return nil }}, nil
}

// dial connects a Flight SQL client, as a Go application would, with the
// message limits raised like the node's.
func dial(addr string) (*flightsql.Client, error) {
	cl, err := flightsql.NewClient(addr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMsg), grpc.MaxCallSendMsgSize(maxMsg)))
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	return cl, nil
}

// dialN connects n clients: concurrent writers and readers each have their
// own connection, as ADBC connections do.
func dialN(addr string, n int) ([]*flightsql.Client, func(), error) {
	cls := make([]*flightsql.Client, 0, n)
	closeAll := func() {
		for _, c := range cls {
			c.Close()
		}
	}
	for range n {
		c, err := dial(addr)
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		cls = append(cls, c)
	}
	return cls, closeAll, nil
}

// createTable creates a new table of the event columns, 4 buckets by id,
// with the configured codec, and returns its name. The table does not tier
// (datalake.enabled false): these workloads measure the log, the fresh
// rows; the tiering and union workloads (lake.go) measure the lake.
func (e *env) createTable(ctx context.Context, prefix string) (string, error) {
	e.tables++
	name := fmt.Sprintf("%s_%d", prefix, e.tables)
	ddl := fmt.Sprintf("CREATE TABLE %s %s WITH ('bucket.num'='%d', 'bucket.key'='id', 'log.compression'='%s', 'datalake.enabled'='false')",
		name, eventsDDL, tableBuckets, e.cfg.Codec)
	if _, err := e.node.ExecuteUpdate(ctx, ddl); err != nil {
		return "", fmt.Errorf("%s: %w", ddl, err)
	}
	return name, nil
}

// dropTable drops a table that a measurement no longer needs, so that the
// data dir stays small across runs.
func (e *env) dropTable(ctx context.Context, name string) error {
	if _, err := e.node.ExecuteUpdate(ctx, "DROP TABLE "+name); err != nil {
		return fmt.Errorf("drop %s: %w", name, err)
	}
	return nil
}

// tableBuckets is bucket.num of every benchmark table.
const tableBuckets = 4

func thisMachine() Machine {
	return Machine{CPUs: runtime.NumCPU(), CPUModel: cpuModel(), OS: runtime.GOOS, Arch: runtime.GOARCH, Go: runtime.Version()}
}

// cpuModel is the first "model name" of /proc/cpuinfo, or "unknown".
func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

func settingsOf(c Config) Settings {
	return Settings{Workloads: c.Workloads, Rows: c.Rows, QueryRows: c.QueryRows, BatchRows: c.BatchRows,
		Writers: c.Writers, Runs: c.Runs, Rate: c.Rate, SubscribeBatchRows: c.SubscribeBatchRows,
		DurationS: c.Duration.Seconds(), Sync: c.Sync, Codec: c.Codec, Short: c.Short, Baselines: c.Baselines}
}
