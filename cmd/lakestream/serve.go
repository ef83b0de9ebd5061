package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/lakestream/lakestream/node"
)

// serve binds flags, then the YAML config file, then LAKESTREAM_<FLAG>
// environment variables to a node.Config. A flag given on the command line
// wins over the environment, which wins over the config file.
func serve(ctx context.Context, args []string) error {
	cfg, err := loadConfig(args, os.LookupEnv)
	if err != nil {
		return err
	}
	cfg.Version = version
	if cfg.Logger, err = newLogger(os.Stderr, cfg.LogFormat, cfg.LogLevel); err != nil {
		return err
	}
	return node.Run(ctx, cfg.Config)
}

// serveConfig is a node's configuration and the server log's.
type serveConfig struct {
	node.Config
	LogFormat, LogLevel string
}

// newLogger is the server log: text (slog's key=value lines) or JSON (one
// object a line), at level and above.
func newLogger(w io.Writer, format, level string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("log level %q: want debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("log format %q: want text or json", format)
}

func loadConfig(args []string, env func(string) (string, bool)) (serveConfig, error) {
	var cfg serveConfig
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	configFile := fs.String("config", "", "YAML config file; its keys are the flag names")
	fs.StringVar(&cfg.DataDir, "data-dir", "./lakestream-data", "data directory")
	fs.StringVar(&cfg.Listen, "listen", "127.0.0.1:31337", "Flight SQL address")
	fs.StringVar(&cfg.HTTP, "http", "127.0.0.1:31380", `metrics and status page address ("off" to disable)`)
	fs.StringVar(&cfg.Catalog, "catalog", "", "Iceberg catalog URI: sqlite://<file>, postgres://... or http(s):// for REST (default: sqlite://<data-dir>/iceberg.db)")
	fs.StringVar(&cfg.Warehouse, "warehouse", "", "Iceberg warehouse: file:///dir or s3://bucket/prefix (default: file://<data-dir>/warehouse)")
	fs.StringVar(&cfg.S3.Endpoint, "s3-endpoint", "", "S3-compatible endpoint URL (default: $AWS_ENDPOINT_URL_S3, $AWS_ENDPOINT_URL, else AWS)")
	fs.StringVar(&cfg.S3.Region, "s3-region", "", "S3 region (default: $AWS_REGION, $AWS_DEFAULT_REGION; us-east-1 with an endpoint)")
	fs.StringVar(&cfg.S3.AccessKeyID, "s3-access-key-id", "", "S3 access key id (default: $AWS_ACCESS_KEY_ID)")
	fs.StringVar(&cfg.S3.SecretAccessKey, "s3-secret-access-key", "", "S3 secret access key (default: $AWS_SECRET_ACCESS_KEY)")
	fs.BoolVar(&cfg.S3.PathStyle, "s3-path-style", false, "address S3 objects as endpoint/bucket/key (MinIO, moto)")
	fs.StringVar(&cfg.Sync, "sync", "always", "log durability: always (fsync before acknowledging) or never")
	fs.IntVar(&cfg.DefaultBuckets, "default-buckets", 1, "bucket.num of tables that do not set it")
	fs.StringVar(&cfg.Cache, "cache", "1GiB", `memory for decoded columns of the log's recently read batches ("off" disables)`)
	fs.DurationVar(&cfg.RetentionCheck, "retention-check", time.Minute, "how often log retention deletes tiered segments older than their table's log.retention, and a log refusing writes after a failed write tries to repair itself")
	fs.StringVar(&cfg.EngineMemory, "engine-memory", "25%", "query engine (DuckDB) memory limit: a size, or a percentage of the machine's (or cgroup's) memory; nothing spills to disk")
	fs.DurationVar(&cfg.QueryTimeout, "query-timeout", 30*time.Minute, "deadline of each query, from its start until its last row is produced")
	fs.StringVar(&cfg.StreamMemory, "stream-memory", "20%", "memory budget of all result streams (scans, queries, subscriptions): a size or a percentage of memory")
	fs.StringVar(&cfg.StreamWindow, "stream-window", "4MiB", "results one stream may produce ahead of its client before it waits")
	fs.DurationVar(&cfg.StallTimeout, "stall-timeout", 5*time.Minute, "cut off a stream whose client reads nothing for this long, or that waits this long for stream memory")
	fs.DurationVar(&cfg.TicketTTL, "ticket-ttl", time.Hour, "how long the endpoints (tickets) a query plan returns may be read")
	fs.DurationVar(&cfg.WriterExpiry, "writer-expiry", 7*24*time.Hour, "forget an idempotent writer (lakestream-writer-id) idle for this long")
	fs.StringVar(&cfg.LogFormat, "log-format", "text", "server log format: text (key=value) or json (one object a line)")
	fs.StringVar(&cfg.LogLevel, "log-level", "info", "server log level: debug (every request), info, warn (failed and slow requests) or error")
	fs.DurationVar(&cfg.SlowQuery, "slow-query", time.Second, "log every request that takes at least this long, with its SQL (0 disables)")
	bindClusterFlags(fs, &cfg.Cluster)
	bindSecurityFlags(fs, &cfg.Security)
	bindLimitFlags(fs, &cfg.Limits, &cfg.Audit) // limits.go
	bindFaultFlags(fs, &cfg.Config)             // faults.go, in test binaries only
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("serve: unexpected argument %q", fs.Arg(0))
	}

	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if *configFile != "" {
		if err := applyFile(fs, *configFile, set); err != nil {
			return cfg, err
		}
	}
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if set[f.Name] || f.Name == "config" || err != nil {
			return
		}
		key := "LAKESTREAM_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		if v, ok := env(key); ok {
			if e := f.Value.Set(v); e != nil {
				err = fmt.Errorf("%s=%q: %v", key, v, e)
			}
		}
	})
	if cfg.SlowQuery == 0 {
		cfg.SlowQuery = -1 // node.Config's "none"; its 0 is the default
	}
	if v, ok := env("LAKESTREAM_ADMIN_PASSWORD"); ok {
		cfg.Security.AdminPassword = v // never a flag: a command line is visible to every user of the machine
	}
	if err == nil {
		_, err = newLogger(io.Discard, cfg.LogFormat, cfg.LogLevel)
	}
	return cfg, err
}

// bindClusterFlags binds the flags that make the node a cluster member
// (docs/cluster.md); with none of them the node runs alone.
func bindClusterFlags(fs *flag.FlagSet, c *node.ClusterConfig) {
	fs.StringVar(&c.NodeID, "node-id", "", "this node's id in the cluster: unique, stable across restarts (required with --gossip)")
	fs.StringVar(&c.Gossip, "gossip", "", "gossip address host:port (UDP and TCP); set to run as a cluster member")
	fs.StringVar(&c.GossipAdvertise, "gossip-advertise", "", "gossip address the other nodes reach this one at (default: --gossip)")
	fs.Func("join", "gossip addresses of running members, comma-separated (none for the first node)", func(v string) error {
		c.Join = nil
		for _, a := range strings.Split(v, ",") {
			if a = strings.TrimSpace(a); a != "" {
				c.Join = append(c.Join, a)
			}
		}
		return nil
	})
	fs.StringVar(&c.Advertise, "advertise", "", "Flight SQL address clients and other nodes reach this node at (default: --listen)")
	fs.StringVar(&c.Rack, "rack", "", "rack or zone label: replicas of a bucket are spread over racks")
	fs.StringVar(&c.GossipKeyFile, "gossip-key-file", "", "file with the shared gossip key (16, 24 or 32 bytes in hex or base64) that encrypts gossip")
	fs.StringVar(&c.GossipTiming, "gossip-timing", "lan", "failure detection profile: lan (dead within 4-24 s) or local (one host: 0.6-3.6 s)")
	fs.DurationVar(&c.DrainTimeout, "drain-timeout", 10*time.Second, "at a graceful stop (SIGTERM), how long to wait for the leadership of the buckets this node leads to move to other nodes")
	fs.BoolVar(&c.FollowerReads, "follower-reads", false, "plan reads (scan and changes() endpoints) of the buckets this node holds in sync here, not on their leaders")
	fs.StringVar(&c.TLSCert, "cluster-tls-cert", "", "PEM certificate of this node, issued by the cluster CA with the node id as its subject common name: node-to-node calls run over mutual TLS (needed with --auth on)")
	fs.StringVar(&c.TLSKey, "cluster-tls-key", "", "PEM private key of --cluster-tls-cert")
	fs.StringVar(&c.TLSCA, "cluster-tls-ca", "", "PEM file of the cluster CA, which issues node certificates only")
	fs.StringVar(&c.Meta, "meta", "", "the cluster's metadata store (bucket leaders, epochs, in-sync replicas): postgres://… shared by every node, or sqlite://FILE (default: cluster.db in the data dir, for a cluster of one)")
}

// applyFile sets the flags not given on the command line from a YAML file.
func applyFile(fs *flag.FlagSet, path string, set map[string]bool) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	var m map[string]any
	if err := yaml.Unmarshal(raw, &m); err != nil {
		return fmt.Errorf("config %s: %w", path, err)
	}
	for k, v := range m {
		f := fs.Lookup(k)
		if f == nil || k == "config" {
			return fmt.Errorf("config %s: unknown key %q", path, k)
		}
		if set[k] {
			continue
		}
		if err := f.Value.Set(fmt.Sprint(v)); err != nil {
			return fmt.Errorf("config %s: %s: %v", path, k, err)
		}
	}
	return nil
}

// bindSecurityFlags binds the flags of authentication and TLS
// (docs/security.md).
func bindSecurityFlags(fs *flag.FlagSet, s *node.SecurityConfig) {
	fs.StringVar(&s.Auth, "auth", node.AuthAuto, "authentication: on, off, or auto (on when --listen or --http is not a loopback address)")
	fs.StringVar(&s.TLSCert, "tls-cert", "", "PEM certificate (with its chain) for Flight SQL (grpc+tls://) and HTTPS; read again when the file changes")
	fs.StringVar(&s.TLSKey, "tls-key", "", "PEM private key of --tls-cert")
	fs.StringVar(&s.TLSClientCA, "tls-client-ca", "", "PEM CAs whose client certificates are accepted: makes TLS mutual")
	fs.BoolVar(&s.Insecure, "insecure", false, "allow a non-loopback address without TLS, or with --auth off")
	fs.StringVar(&s.AdminPasswordFile, "admin-password-file", "", "file holding the admin user's password (or set $LAKESTREAM_ADMIN_PASSWORD): creates the admin at the first start, resets its password when it differs")
	fs.DurationVar(&s.TokenTTL, "token-ttl", 8*time.Hour, "lifetime of the bearer tokens a login returns")
}
