package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestConfigPrecedence(t *testing.T) {
	file := filepath.Join(t.TempDir(), "lakestream.yaml")
	if err := os.WriteFile(file, []byte("data-dir: /from/file\nlisten: 127.0.0.1:1\nhttp: 127.0.0.1:2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"LAKESTREAM_LISTEN": "127.0.0.1:3", "LAKESTREAM_SYNC": "never"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	cfg, err := loadConfig([]string{"--config", file, "--http", "127.0.0.1:4"}, lookup)
	if err != nil {
		t.Fatal(err)
	}
	// flag > env > file > default
	if cfg.HTTP != "127.0.0.1:4" || cfg.Listen != "127.0.0.1:3" || cfg.DataDir != "/from/file" || cfg.Sync != "never" || cfg.DefaultBuckets != 1 {
		t.Fatalf("config %+v", cfg)
	}
}

func TestConfigErrors(t *testing.T) {
	none := func(string) (string, bool) { return "", false }
	file := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(file, []byte("colour: blue\n"), 0o644)
	for _, args := range [][]string{{"--config", file}, {"--no-such-flag"}, {"extra"}, {"--default-buckets", "x"}} {
		if _, err := loadConfig(args, none); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
	bad := func(k string) (string, bool) { return "many", k == "LAKESTREAM_DEFAULT_BUCKETS" }
	if _, err := loadConfig(nil, bad); err == nil {
		t.Error("bad environment value accepted")
	}
}

// The limits of queries and result streams are flags like the others.
func TestConfigLimitFlags(t *testing.T) {
	env := map[string]string{"LAKESTREAM_STREAM_MEMORY": "2GiB", "LAKESTREAM_STALL_TIMEOUT": "90s"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	cfg, err := loadConfig([]string{"--engine-memory", "40%", "--query-timeout", "2m", "--stream-window", "1MiB"}, lookup)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.EngineMemory != "40%" || cfg.QueryTimeout != 2*time.Minute || cfg.StreamMemory != "2GiB" ||
		cfg.StreamWindow != "1MiB" || cfg.StallTimeout != 90*time.Second {
		t.Fatalf("config %+v", cfg)
	}
	cfg, err = loadConfig(nil, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	if cfg.EngineMemory != "25%" || cfg.QueryTimeout != 30*time.Minute || cfg.StreamMemory != "20%" ||
		cfg.StreamWindow != "4MiB" || cfg.StallTimeout != 5*time.Minute {
		t.Fatalf("defaults %+v", cfg)
	}
}

// The cluster flags reach node.ClusterConfig, --join split on commas, and
// the environment sets them like any other flag.
func TestConfigClusterFlags(t *testing.T) {
	env := map[string]string{"LAKESTREAM_RACK": "r2"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	cfg, err := loadConfig([]string{"--node-id", "n1", "--gossip", "127.0.0.1:7946", "--join", "127.0.0.1:7947, 127.0.0.1:7948",
		"--advertise", "10.0.0.1:31337", "--gossip-timing", "local", "--follower-reads",
		"--cluster-tls-cert", "n1.pem", "--cluster-tls-key", "n1.key", "--cluster-tls-ca", "ca.pem"}, lookup)
	if err != nil {
		t.Fatal(err)
	}
	c := cfg.Cluster
	if c.NodeID != "n1" || c.Gossip != "127.0.0.1:7946" || len(c.Join) != 2 || c.Join[1] != "127.0.0.1:7948" ||
		c.Advertise != "10.0.0.1:31337" || c.Rack != "r2" || c.GossipTiming != "local" || !c.FollowerReads ||
		c.TLSCert != "n1.pem" || c.TLSKey != "n1.key" || c.TLSCA != "ca.pem" {
		t.Fatalf("cluster config %+v", c)
	}
	if cfg, err = loadConfig(nil, func(string) (string, bool) { return "", false }); err != nil || cfg.Cluster.Gossip != "" {
		t.Fatalf("no cluster flags: %+v, %v", cfg.Cluster, err)
	}
}
