package node

import (
	"context"

	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	icecatalog "github.com/apache/iceberg-go/catalog"

	"github.com/lakestream/lakestream/audit"
	"github.com/lakestream/lakestream/catalog"
	"github.com/lakestream/lakestream/columnarlog"
	"github.com/lakestream/lakestream/flightsrv"
	"github.com/lakestream/lakestream/internal/scan"
	"github.com/lakestream/lakestream/membership"
	"github.com/lakestream/lakestream/tables"
	"github.com/lakestream/lakestream/tiering"
)

// Node is a running Lakestream process.
type Node struct {
	cfg     Config
	cat     *catalog.Catalog
	store   *tables.Store
	ice     icecatalog.Catalog
	lake    *tiering.Service
	flight  *flightsrv.Server
	engine  engine
	flightL net.Listener
	httpL   net.Listener
	mon     *monitor                              // request, ingest and scan counts (monitor.go)
	members atomic.Pointer[membership.Membership] // nil on a single node (cluster.go)
	repl    *replication                          // nil on a single node (replication.go)
	// catChanged is signalled when another node changed the shared
	// catalog; nil without one (replication.go).
	catChanged chan struct{}
	sec        security   // authentication and TLS (security.go)
	audit      *audit.Log // the audit log (audit.go)
}

// Addr is the Flight SQL listen address (useful with port 0).
func (n *Node) Addr() string { return n.flightL.Addr().String() }

// HTTPAddr is the status address, or "" when disabled.
func (n *Node) HTTPAddr() string {
	if n.httpL == nil {
		return ""
	}
	return n.httpL.Addr().String()
}

// Tables is the node's open tables. Tables, Lake, LakeCatalog and Resolver
// are the node's own parts, valid from Start until Serve returns (Serve
// closes them): use them, never close them.
func (n *Node) Tables() *tables.Store { return n.store }

// Lake is the tiering service. With Config.Tiering TieringManual its Round
// and Maintain are the only way a table's rows reach the lake; with
// TieringBackground they run beside Serve's loop (each holds the table's
// committer). Status reports every tiered bucket's lag.
func (n *Node) Lake() *tiering.Service { return n.lake }

// LakeCatalog is the Iceberg catalog the lake commits to (Config.Catalog).
func (n *Node) LakeCatalog() icecatalog.Catalog { return n.ice }

// Resolver resolves table names as the node's query engine does (the
// package's Resolver over the node's tables and lake).
func (n *Node) Resolver() scan.Resolver { return Resolver(n.store, n.lake) }

// Start opens storage and binds the listeners; Serve then serves.
// Start order: the table catalog, the tables (log recovery), the
// relocation of an embedded lake whose data directory was moved, the Iceberg
// catalog and the tiering service over the tables (the lake: it opens or
// creates the Iceberg table of each table that tiers), the query engine
// over the union of lake and log, Flight SQL, then the Flight and HTTP
// listeners. close releases them in reverse. A table that cannot be opened
// (its definition, its log or its lake) does not stop the start: it is
// quarantined (tables.Store.Quarantined) and reported in the log, on the
// status page and in the metrics, as are data directories without a
// catalog entry, which are kept.
func Start(ctx context.Context, cfg Config) (*Node, error) {
	cfg.EnsureDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	n := &Node{cfg: cfg, mon: newMonitor()}
	if err := n.open(ctx); err != nil {
		n.close()
		return nil, err
	}
	return n, nil
}

func (n *Node) open(ctx context.Context) error {
	cfg := n.cfg
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	began := time.Now()
	cat, where, err := n.openCatalog(ctx)
	if err != nil {
		return err
	}
	n.cat = cat
	cfg.Logger.Info("catalog opened", "path", where, "elapsed", time.Since(began).Round(time.Millisecond))
	if err := n.openAudit(); err != nil { // audit.go
		return err
	}
	if err := n.openClusterTLS(); err != nil { // clustertls.go
		return err
	}
	if cfg.Cluster.enabled() {
		if n.repl, err = newReplication(ctx, cfg, n.clusterDialOptions(), n.members.Load); err != nil {
			return err
		}
	}
	if err := n.openSecurity(ctx); err != nil { // security.go
		return err
	}
	sync, _ := columnarlog.ParseSyncPolicy(cfg.Sync)
	start := time.Now()
	cacheBytes, _ := cfg.cacheBytes()
	store, err := tables.Open(ctx, cat, tables.Config{
		CacheBytes: cacheBytes,
		Dir:        filepath.Join(cfg.DataDir, "tables"),
		Log:        columnarlog.Options{FS: cfg.LogFS, Sync: sync, Logger: cfg.Logger, OnSync: n.mon.synced, WriterExpiry: cfg.WriterExpiry},
		Logger:     cfg.Logger,
		OnWrite:    n.mon.wrote,
		Replication: func() tables.Replication {
			if n.repl == nil {
				return nil // a nil *replication is not a nil interface
			}
			return n.repl
		}(),
		Remote: func() tables.Remote {
			if n.repl == nil {
				return nil
			}
			return n.repl // remote.go
		}(),
	})
	if err != nil {
		return err
	}
	n.store = store
	cfg.Logger.Info("tables recovered", "elapsed", time.Since(start).Round(time.Millisecond))
	var reloc *tiering.Relocation
	if file, wh, ok := cfg.embeddedLake(); ok {
		// After a move or copy of the data directory its lake's paths name
		// the old place (docs/lake.md#moving-the-data-directory).
		reloc, err = tiering.Relocate(ctx, tiering.RelocateConfig{CatalogFile: file, Warehouse: wh, Logger: cfg.Logger, BeforeSwitch: cfg.relocateBeforeSwitch})
		if err != nil {
			return fmt.Errorf("lake catalog: %w", err)
		}
	}
	if n.ice, err = tiering.OpenCatalog(ctx, cfg.storage()); err != nil {
		return fmt.Errorf("lake catalog: %w", err)
	}
	began = time.Now()
	tc := cfg.tieringConfig(reloc)
	tc.OnRound = n.mon.round
	if n.repl != nil && cfg.sharedLake() {
		tc.Leases = newCommitterLeases(n.repl, store) // tierlease.go
	}
	if n.lake, err = tiering.New(ctx, n.ice, store, tc); err != nil {
		return err
	}
	cfg.Logger.Info("lake opened", "catalog", cfg.Catalog, "elapsed", time.Since(began).Round(time.Millisecond))
	n.reportStart()
	if n.engine, err = newEngine(countingResolver{resolver{store: store, lake: n.lake, nodes: nodesTable{n}, buckets: bucketsTable{n}, audit: auditTable{n.audit}, checked: true}, n.mon}, cfg); err != nil {
		return err
	}
	streamMemory, _ := cfg.streamMemory()
	streamWindow, _ := cfg.streamWindow()
	engineMemory, _ := cfg.engineMemory()
	cfg.Logger.Info("memory limits", "available", availableMemory(), "engine_memory", engineMemory, "query_timeout", cfg.QueryTimeout,
		"stream_memory", streamMemory, "stream_window", streamWindow, "stall_timeout", cfg.StallTimeout)
	var place flightsrv.Placement // nil on a single node
	var ticketKey []byte
	if n.repl != nil {
		place = placement{n: n, followerReads: cfg.Cluster.FollowerReads}
		if ticketKey, err = n.repl.sharedTicketKey(ctx); err != nil { // placement.go
			return err
		}
	}
	srv, err := flightsrv.New(store, n.engine, flightsrv.Options{
		StreamMemory: streamMemory,
		StreamWindow: streamWindow,
		StallTimeout: cfg.StallTimeout,
		TicketTTL:    cfg.TicketTTL,
		SlowQuery:    cfg.SlowQuery,
		Observer:     n.mon,
		Auth:         n.sec.auth,
		Placement:    place,
		TicketKey:    ticketKey,
		Nodes:        n.nodeAuthenticator(), // clustertls.go
		Limits:       cfg.Limits.flightLimits(),
		Audit:        n.audit,
		Version:      cfg.Version,
		Logger:       cfg.Logger,
	})
	if err != nil {
		return err
	}
	n.flight = srv
	if n.flightL, err = net.Listen("tcp", cfg.Listen); err != nil {
		return fmt.Errorf("flight listener: %w", err)
	}
	if cfg.HTTP != "off" {
		if n.httpL, err = net.Listen("tcp", cfg.HTTP); err != nil {
			return fmt.Errorf("http listener: %w", err)
		}
		n.httpL = n.secureHTTPListener(n.httpL)
	}
	// Gossip starts last, once the addresses it announces are served.
	return n.startMembership()
}

// reportStart logs what start-up could not open or account for, beside
// the status page and the metrics (lakestream_table_quarantined,
// lakestream_orphan_table_dirs); each table's own error was logged when it
// was quarantined.
func (n *Node) reportStart() {
	if q := n.store.Quarantined(); len(q) > 0 {
		names := make([]string, len(q))
		for i, t := range q {
			names[i] = t.Table + " (" + string(t.Part) + ")"
		}
		n.cfg.Logger.Error("tables quarantined: reads and writes of them are refused; the node serves the others", "tables", names)
	}
	if o := n.store.Orphans(); len(o) > 0 {
		dirs := make([]string, len(o))
		for i, d := range o {
			dirs[i] = d.Dir
		}
		n.cfg.Logger.Warn("data directories without a catalog entry, kept", "dirs", dirs)
	}
}

// Serve serves until ctx ends, then shuts down: new calls are refused,
// calls in flight get shutdownGrace to finish (writes complete or fail
// cleanly: an unacknowledged write is never half-visible), then storage
// closes. Beside Flight SQL and HTTP it runs the background jobs: expiry
// of stale Flight state, log retention every Config.RetentionCheck and,
// with Config.Tiering TieringBackground, the tiering loop.
func (n *Node) Serve(ctx context.Context) error {
	g := n.flight.GRPCServer(n.grpcOptions()...)
	if n.repl != nil {
		n.repl.serveForwards(n.store, n.flight.ExecBucketStatement) // forward.go
		if err := n.repl.start(context.WithoutCancel(ctx), g, serveScan(n.store)); err != nil {
			return errors.Join(err, n.close())
		}
	}
	bg, stopBG := context.WithCancel(context.Background())
	syncDone := n.followCatalog(bg) // replication.go
	hs := &http.Server{Handler: n.secureHTTP(n.httpHandler()), ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 2)
	go func() { errc <- g.Serve(n.flightL) }()
	if n.httpL != nil {
		go func() {
			if err := hs.Serve(n.httpL); !errors.Is(err, http.ErrServerClosed) {
				errc <- err
			}
		}()
	}
	go n.flight.Expire(bg)
	go n.mon.run(bg)
	go n.store.RunRetention(bg, n.cfg.RetentionCheck)
	go n.store.RunRepair(bg, n.cfg.RetentionCheck)
	lakeDone := make(chan struct{})
	if n.cfg.Tiering == TieringBackground {
		go func() { n.lake.Run(bg); close(lakeDone) }()
	} else {
		close(lakeDone) // TieringManual: rounds run when the caller asks
	}
	n.cfg.Logger.Info("lakestream serving", "flight", n.Addr(), "http", n.HTTPAddr(), "data_dir", n.cfg.DataDir, "tiering", n.cfg.Tiering)
	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	n.cfg.Logger.Info("shutting down")
	if n.repl != nil {
		n.repl.handOff(n.cfg.Cluster.DrainTimeout) // drain.go: leaderships go first
	}
	// Leave first: the others see this node go as left, not failed.
	leaveErr := n.leaveCluster()
	stopBG()
	<-syncDone
	<-lakeDone // a round in progress ends; an uncommitted one is redone at start
	n.flight.Shutdown()
	stopped := make(chan struct{})
	go func() { g.GracefulStop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(shutdownGrace):
		g.Stop()
		<-stopped
	}
	shutCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	hs.Shutdown(shutCtx)
	return errors.Join(err, leaveErr, n.close())
}

const shutdownGrace = 30 * time.Second

// close releases storage in reverse start order.
func (n *Node) close() error {
	var errs []error
	if m := n.members.Swap(nil); m != nil {
		errs = append(errs, m.Close())
	}
	if n.flightL != nil {
		n.flightL.Close()
	}
	if n.httpL != nil {
		n.httpL.Close()
	}
	if n.engine != nil {
		errs = append(errs, n.engine.Close())
	}
	if n.repl != nil {
		n.repl.shutdown() // no role writes to a log once the tables close
	}
	if n.store != nil {
		n.store.SetLake(nil)
		errs = append(errs, n.store.Close())
	}
	if n.repl != nil {
		errs = append(errs, n.repl.release())
	}
	if c, ok := n.ice.(interface{ Close() error }); ok {
		errs = append(errs, c.Close())
	}
	if n.cat != nil {
		errs = append(errs, n.cat.Close())
	}
	errs = append(errs, n.audit.Close())
	return errors.Join(errs...)
}

// Run starts a node and serves until ctx ends.
func Run(ctx context.Context, cfg Config) error {
	n, err := Start(ctx, cfg)
	if err != nil {
		return err
	}
	return n.Serve(ctx)
}
