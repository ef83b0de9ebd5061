// Package node wires one Lakestream process: it opens the table catalog
// and the tables, the lake (the Iceberg catalog and the tiering service,
// which tiers tables in the background unless Config.Tiering leaves the
// rounds to the caller), the query engine and the Flight SQL service, and
// the HTTP status and metrics endpoint, and shuts them down in the reverse
// order. Tables, Lake, LakeCatalog and Resolver expose its parts to a
// caller in the same process (the benchmarks, package bench), so that
// node is the only place that wires them.
package node

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"time"

	"github.com/lakestream/lakestream/catalog"
	"github.com/lakestream/lakestream/columnarlog"
	"github.com/lakestream/lakestream/internal/vfs"
	"github.com/lakestream/lakestream/tiering"
)

// Config is a node's configuration. Each field documents its default.
type Config struct {
	// DataDir holds the catalog, the logs and the local warehouse.
	// Default "./lakestream-data".
	DataDir string
	// Listen is the Flight SQL address. Default "127.0.0.1:31337".
	Listen string
	// HTTP is the metrics and status page address. Default
	// "127.0.0.1:31380"; "off" disables it.
	HTTP string
	// Catalog is the Iceberg catalog URI: sqlite://<file>, postgres://…
	// or http(s):// for a REST catalog (tiering.StorageConfig). Default:
	// a SQLite file in DataDir ("sqlite://<data-dir>/iceberg.db"), which
	// pyiceberg's SqlCatalog reads as it is. Table definitions live in
	// <data-dir>/catalog.db.
	Catalog string
	// Warehouse is the Iceberg warehouse: file:///dir or s3://bucket/prefix.
	// Default "file://<data-dir>/warehouse".
	Warehouse string
	// S3 configures an s3:// warehouse; empty fields fall back to the AWS_*
	// environment variables.
	S3 tiering.S3Config
	// Sync is the log durability policy: "always" (fsync before
	// acknowledging, shared by concurrent writers) or "never". Default "always".
	Sync string
	// DefaultBuckets is bucket.num for tables that do not set it. Default 1.
	DefaultBuckets int
	// Cache is the size of the decoded-column cache of the log's fresh
	// batches ("1GiB"); "off" or "0" disables it. Default "1GiB".
	Cache string
	// RetentionCheck is how often log retention runs: segments below the
	// tiered offset and older than their table's log.retention are deleted
	// then. A table log that refuses writes after a failed write (a full
	// disk) tries to repair itself as often. Default 1m.
	RetentionCheck time.Duration
	// Tiering says who runs the tiering rounds and the lake maintenance of
	// the tables that tier (datalake.enabled): TieringBackground (Serve
	// runs a round of each such table every datalake.freshness, and
	// maintenance every LakeMaintenance.EveryRounds rounds, docs/lake.md)
	// or TieringManual (Serve runs neither: a round or a maintenance pass
	// runs only when the caller calls Lake().Round or Lake().Maintain, for
	// benchmarks that choose when rounds run and read their results).
	// Default TieringBackground.
	Tiering string
	// EngineMemory is the query engine's memory limit (DuckDB's
	// memory_limit): a size ("4GiB") or a percentage of the memory
	// available to the process ("25%": of the physical memory, or of the
	// cgroup's limit when that is lower). A query that needs more fails
	// with ResourceExhausted; nothing spills to disk (planner/duck says
	// why). Default "25%": DuckDB's own default, 80%, leaves too little for
	// the log, its cache and the result streams of the same process.
	EngineMemory string
	// QueryTimeout bounds each statement the engine runs (a query, or the
	// source of an INSERT), from its start until its last row is produced,
	// including the time its client takes to read a result larger than the
	// stream window. At the deadline DuckDB is interrupted and the call
	// fails with DeadlineExceeded. Default 30m.
	QueryTimeout time.Duration
	// StreamMemory is the memory budget of all result streams (scans,
	// queries and subscriptions) together: their readers' read-ahead and
	// the results produced and not yet written to the connection. A
	// stream waits for room. A size or a percentage, as EngineMemory.
	// Default "20%".
	StreamMemory string
	// StreamWindow is how much of its results one stream may have produced
	// and not yet written to its client's connection before it waits for
	// the client. Default "4MiB".
	StreamWindow string
	// StallTimeout cuts off, with ResourceExhausted, a stream whose client
	// has read nothing for this long while results wait, and a stream that
	// has waited this long for room in StreamMemory. Default 5m.
	StallTimeout time.Duration
	// TicketTTL is how long the tickets of a FlightInfo may be used
	// (docs/flight.md, "Tickets"). Default 1h.
	TicketTTL time.Duration
	// WriterExpiry is how long a table keeps the state of an idempotent
	// writer after its last call (docs/flight.md, "Idempotent writes").
	// Default 7 days.
	WriterExpiry time.Duration
	// LakeMaintenance is the lake maintenance policy
	// (tiering.Maintenance); each zero field takes its default there.
	// EveryRounds and OrphanEveryRounds schedule the background loop's
	// passes, so with TieringManual they must be zero: the caller
	// schedules its Lake().Maintain calls itself.
	LakeMaintenance tiering.Maintenance
	// LogFS is the filesystem the table logs are kept in, under
	// DataDir/tables. Default: the operating system's. Tests pass a
	// vfs.MemFS to inject I/O errors.
	LogFS vfs.FS
	// SlowQuery logs, at Warn, every Flight call that takes at least this
	// long (a query's DoGet until its last row; subscriptions excepted),
	// with its SQL; negative logs none. Default 1s.
	SlowQuery time.Duration
	// Cluster makes the node a member of a cluster (cluster.go). Default:
	// a single node.
	Cluster ClusterConfig
	// Security is authentication and TLS (security.go); its fields
	// document their defaults.
	Security SecurityConfig
	// Limits caps what one client holds at once (limits.go); Audit is the
	// audit log (audit.go). Their fields document their defaults.
	Limits LimitsConfig
	Audit  AuditConfig
	// Version is reported by the server.
	Version string
	Logger  *slog.Logger

	// relocateBeforeSwitch, for tests, stops the start-up relocation of a
	// lake table between writing its files and switching its catalog row
	// (tiering.RelocateConfig.BeforeSwitch).
	relocateBeforeSwitch func(table string) error
}

// The values of Config.Tiering.
const (
	TieringBackground = "background"
	TieringManual     = "manual"
)

// EnsureDefaults fills unset fields.
func (c *Config) EnsureDefaults() {
	if c.DataDir == "" {
		c.DataDir = "./lakestream-data"
	}
	if c.Listen == "" {
		c.Listen = "127.0.0.1:31337"
	}
	if c.HTTP == "" {
		c.HTTP = "127.0.0.1:31380"
	}
	if c.Catalog == "" {
		abs, err := filepath.Abs(filepath.Join(c.DataDir, "iceberg.db"))
		if err != nil {
			abs = filepath.Join(c.DataDir, "iceberg.db")
		}
		c.Catalog = "sqlite://" + abs
	}
	if c.Warehouse == "" {
		abs, err := filepath.Abs(filepath.Join(c.DataDir, "warehouse"))
		if err != nil {
			abs = filepath.Join(c.DataDir, "warehouse")
		}
		c.Warehouse = "file://" + abs
	}
	if c.Sync == "" {
		c.Sync = "always"
	}
	if c.DefaultBuckets == 0 {
		c.DefaultBuckets = 1
	}
	if c.Cache == "" {
		c.Cache = "1GiB"
	}
	if c.RetentionCheck == 0 {
		c.RetentionCheck = time.Minute
	}
	if c.Tiering == "" {
		c.Tiering = TieringBackground
	}
	if c.EngineMemory == "" {
		c.EngineMemory = "25%"
	}
	if c.QueryTimeout == 0 {
		c.QueryTimeout = 30 * time.Minute
	}
	if c.StreamMemory == "" {
		c.StreamMemory = "20%"
	}
	if c.StreamWindow == "" {
		c.StreamWindow = "4MiB"
	}
	if c.StallTimeout == 0 {
		c.StallTimeout = 5 * time.Minute
	}
	if c.TicketTTL == 0 {
		c.TicketTTL = time.Hour
	}
	if c.WriterExpiry == 0 {
		c.WriterExpiry = 7 * 24 * time.Hour
	}
	if c.SlowQuery == 0 {
		c.SlowQuery = time.Second
	}
	if c.Version == "" {
		c.Version = "dev"
	}
	c.Cluster.ensureDefaults()
	c.Security.ensureDefaults()
	c.Limits.ensureDefaults()
	c.Audit.ensureDefaults(c.DataDir)
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Validate reports every problem at once.
func (c *Config) Validate() error {
	var errs []error
	for name, addr := range map[string]string{"listen": c.Listen, "http": c.HTTP} {
		if name == "http" && addr == "off" {
			continue
		}
		if _, _, err := net.SplitHostPort(addr); err != nil {
			errs = append(errs, fmt.Errorf("%s address %q: %v", name, addr, err))
		}
	}
	if _, err := columnarlog.ParseSyncPolicy(c.Sync); err != nil {
		errs = append(errs, err)
	}
	if err := c.storage().Validate(); err != nil {
		errs = append(errs, err)
	}
	if p, ok := strings.CutPrefix(c.Catalog, "sqlite://"); ok && sameFile(p, c.metaPath()) {
		errs = append(errs, fmt.Errorf("catalog %q: that file holds the table definitions; the Iceberg catalog needs a file of its own", c.Catalog))
	}
	if _, err := c.cacheBytes(); err != nil {
		errs = append(errs, err)
	}
	if c.RetentionCheck < 0 {
		errs = append(errs, fmt.Errorf("retention check %s: want a positive interval", c.RetentionCheck))
	}
	if c.DefaultBuckets < 1 || c.DefaultBuckets > 1024 {
		errs = append(errs, fmt.Errorf("default buckets %d: want 1 to 1024", c.DefaultBuckets))
	}
	if err := c.validateTiering(); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, c.validateLimits()...)
	errs = append(errs, c.Audit.validate()...)
	errs = append(errs, c.Cluster.validate(c.Listen)...)
	errs = append(errs, c.Security.validate(c.Listen, c.HTTP)...)
	if g := c.Cluster.Gossip; g != "" && c.Cluster.GossipKeyFile == "" && exposedAddr(g, "off") != "" && !c.Security.Insecure {
		errs = append(errs, fmt.Errorf("gossip on %s, which is not a loopback address, needs a shared key: give --gossip-key-file, or --insecure to gossip in the clear knowingly", g))
	}
	if c.Cluster.enabled() {
		// docs/cluster.md, "What is not there yet".
		if c.Security.required(c.Listen, c.HTTP) && !c.Cluster.tls() {
			errs = append(errs, errors.New("a cluster node with authentication on needs node-to-node TLS, by which nodes know each other: give --cluster-tls-cert, --cluster-tls-key and --cluster-tls-ca (docs/security.md), or run the cluster with --auth off (and --insecure off loopback) on a trusted network"))
		}
		if err := c.validateClusterLake(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// validateClusterLake checks the lake of a cluster node: either the
// embedded lake of its own data directory (the defaults), or a lake the
// nodes share — a PostgreSQL Iceberg catalog and an s3:// warehouse, with
// the table definitions shared in a PostgreSQL metadata store
// (docs/cluster.md#tiering-in-a-cluster). Anything between cannot work: a
// SQLite catalog or a file:// warehouse is one machine's, and a REST
// catalog is not supported for a cluster yet.
func (c *Config) validateClusterLake() error {
	if _, _, ok := c.embeddedLake(); ok {
		return nil
	}
	const want = "a cluster's shared lake needs --catalog postgres://… and --warehouse s3://… on every node (or leave both at their defaults: each node then tiers into a lake of its own)"
	var problems []string
	switch {
	case catalog.IsPostgresURL(c.Catalog):
	case strings.HasPrefix(c.Catalog, "sqlite://"):
		problems = append(problems, fmt.Sprintf("catalog %q is a SQLite file, one node's", c.Catalog))
	case strings.HasPrefix(c.Catalog, "http://"), strings.HasPrefix(c.Catalog, "https://"):
		problems = append(problems, fmt.Sprintf("catalog %q is a REST catalog, which a cluster's committers are not built for yet", c.Catalog))
	default:
		problems = append(problems, fmt.Sprintf("catalog %q is not a shared catalog", c.Catalog))
	}
	if !strings.HasPrefix(c.Warehouse, "s3://") {
		problems = append(problems, fmt.Sprintf("warehouse %q is not shared storage: the other nodes cannot read its files", c.Warehouse))
	}
	if !catalog.IsPostgresURL(c.Cluster.Meta) {
		problems = append(problems, "the table definitions are this node's own (--meta is not postgres://…): the nodes must share them to share a lake")
	}
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("a cluster node's lake: %s: %s", strings.Join(problems, "; "), want)
}

// sharedLake says whether the node is a cluster node whose lake the
// nodes share (validateClusterLake): each table then has one committer,
// the holder of its lease (tierlease.go).
func (c *Config) sharedLake() bool {
	_, _, embedded := c.embeddedLake()
	return c.Cluster.enabled() && !embedded
}

// minEngineMemory is the smallest engine memory limit accepted: DuckDB
// needs some to run anything.
const minEngineMemory = 64 << 20

// validateLimits checks the memory limits and timeouts of queries and
// result streams.
func (c *Config) validateLimits() []error {
	var errs []error
	if n, err := c.engineMemory(); err != nil {
		errs = append(errs, fmt.Errorf("engine memory %w", err))
	} else if n < minEngineMemory {
		errs = append(errs, fmt.Errorf("engine memory %q: %d bytes, want at least 64MiB", c.EngineMemory, n))
	} else {
		errs = append(errs, c.Limits.validate(n)...) // limits.go
	}
	budget, err := c.streamMemory()
	if err != nil {
		errs = append(errs, fmt.Errorf("stream memory %w", err))
	}
	if w, err := c.streamWindow(); err != nil {
		errs = append(errs, fmt.Errorf("stream window %w", err))
	} else if w < 64<<10 || (budget > 0 && w > budget) {
		errs = append(errs, fmt.Errorf("stream window %q: want at least 64KiB (gRPC's own window) and at most the stream memory", c.StreamWindow))
	}
	for name, d := range map[string]time.Duration{"query timeout": c.QueryTimeout, "stall timeout": c.StallTimeout, "ticket TTL": c.TicketTTL, "writer expiry": c.WriterExpiry} {
		if d < 0 {
			errs = append(errs, fmt.Errorf("%s %s: want a positive duration", name, d))
		}
	}
	return errs
}

// engineMemory is EngineMemory in bytes.
func (c *Config) engineMemory() (int64, error) { return parseMemory(c.EngineMemory, availableMemory()) }

// streamMemory is StreamMemory in bytes.
func (c *Config) streamMemory() (int64, error) { return parseMemory(c.StreamMemory, availableMemory()) }

// streamWindow is StreamWindow in bytes.
func (c *Config) streamWindow() (int64, error) {
	n, err := catalog.ParseSize(c.StreamWindow)
	if err != nil {
		return 0, fmt.Errorf("%q: want a size such as 4MiB", c.StreamWindow)
	}
	return n, nil
}

// validateTiering checks Tiering, and that LakeMaintenance schedules no
// pass that no loop would run.
func (c *Config) validateTiering() error {
	switch c.Tiering {
	case TieringBackground:
		return nil
	case TieringManual:
		if m := c.LakeMaintenance; m.EveryRounds != 0 || m.OrphanEveryRounds != 0 {
			return fmt.Errorf("lake maintenance every %d rounds, orphans every %d rounds: with tiering %q no loop runs passes; leave both 0 and call Lake().Maintain",
				m.EveryRounds, m.OrphanEveryRounds, TieringManual)
		}
		return nil
	default:
		return fmt.Errorf("tiering %q: want %s or %s", c.Tiering, TieringBackground, TieringManual)
	}
}

// cacheBytes is the cache size in bytes; negative disables it.
func (c *Config) cacheBytes() (int64, error) {
	if v := strings.ToLower(strings.TrimSpace(c.Cache)); v == "off" || v == "0" {
		return -1, nil
	}
	n, err := catalog.ParseSize(c.Cache)
	if err != nil {
		return 0, fmt.Errorf("cache %q: want a size such as 256MiB, or off", c.Cache)
	}
	return n, nil
}

// metaPath is the SQLite file of the table definitions.
func (c *Config) metaPath() string { return filepath.Join(c.DataDir, "catalog.db") }

// tieringConfig configures the tiering service; reloc is the start-up
// relocation of an embedded lake, or nil.
func (c *Config) tieringConfig(reloc *tiering.Relocation) tiering.Config {
	return tiering.Config{Maintenance: c.LakeMaintenance, Relocation: reloc, Logger: c.Logger,
		NodeLake: c.Cluster.enabled() && catalog.IsPostgresURL(c.Cluster.Meta) && !c.sharedLake()}
}

// embeddedLake says whether the lake is the embedded one that moves with
// the data directory — a SQLite Iceberg catalog and a file:// warehouse,
// both inside DataDir — and returns the catalog file and the warehouse.
// Only that lake is relocated after a move (tiering.Relocate); an external
// catalog, an s3:// warehouse or a REST catalog never is.
func (c *Config) embeddedLake() (catalogFile, warehouse string, ok bool) {
	p, isSQLite := strings.CutPrefix(c.Catalog, "sqlite://")
	wh, isFile := strings.CutPrefix(c.Warehouse, "file://")
	if !isSQLite || !isFile {
		return "", "", false
	}
	dir, err1 := filepath.Abs(c.DataDir)
	p, err2 := filepath.Abs(p)
	if err1 != nil || err2 != nil || !within(p, dir) || !within(filepath.FromSlash(wh), dir) {
		return "", "", false
	}
	return p, c.Warehouse, true
}

// within says whether the absolute path p is inside dir.
func within(p, dir string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != "." && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// storage is where the lake is.
func (c *Config) storage() tiering.StorageConfig {
	return tiering.StorageConfig{Catalog: c.Catalog, Warehouse: c.Warehouse, S3: c.S3}
}

func sameFile(a, b string) bool {
	a, errA := filepath.Abs(a)
	b, errB := filepath.Abs(b)
	return errA == nil && errB == nil && a == b
}
