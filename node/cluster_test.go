package node

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/lakestream/lakestream/internal/proc"
	"github.com/lakestream/lakestream/membership"
)

func TestClusterConfigValidate(t *testing.T) {
	keyFile := filepath.Join(t.TempDir(), "key")
	os.WriteFile(keyFile, []byte("00112233445566778899aabbccddeeff\n"), 0o600)
	badKey := filepath.Join(t.TempDir(), "bad")
	os.WriteFile(badKey, []byte("short"), 0o600)
	for _, tt := range []struct {
		c    ClusterConfig
		want string // "" = valid
	}{
		{ClusterConfig{}, ""},
		{ClusterConfig{NodeID: "a", Gossip: "127.0.0.1:7946"}, ""},
		{ClusterConfig{NodeID: "a", Gossip: "127.0.0.1:7946", GossipKeyFile: keyFile}, ""},
		{ClusterConfig{NodeID: "a"}, "needs --gossip"},
		{ClusterConfig{Join: []string{"x:1"}}, "needs --gossip"},
		{ClusterConfig{Gossip: "127.0.0.1:7946"}, "needs --node-id"},
		{ClusterConfig{NodeID: "a b", Gossip: "127.0.0.1:7946"}, "without spaces"},
		{ClusterConfig{NodeID: "a", Gossip: "127.0.0.1:7946", Advertise: "0.0.0.0:1"}, "wildcard"},
		{ClusterConfig{NodeID: "a", Gossip: "127.0.0.1:7946", GossipTiming: "wan"}, "gossip timing"},
		{ClusterConfig{NodeID: "a", Gossip: "127.0.0.1:7946", GossipKeyFile: badKey}, "16, 24 or 32 bytes"},
		{ClusterConfig{NodeID: "a", Gossip: "127.0.0.1:7946", GossipKeyFile: filepath.Join(t.TempDir(), "none")}, "gossip key"},
		{ClusterConfig{NodeID: "a", Gossip: "127.0.0.1:7946", Meta: "postgres://h/db"}, ""},
		{ClusterConfig{NodeID: "a", Gossip: "127.0.0.1:7946", Meta: "sqlite:///tmp/m.db"}, ""},
		{ClusterConfig{NodeID: "a", Gossip: "127.0.0.1:7946", Meta: "mysql://h/db"}, "want postgres://"},
		{ClusterConfig{Meta: "postgres://h/db"}, "needs --gossip"},
	} {
		c := tt.c
		c.ensureDefaults()
		errs := c.validate("127.0.0.1:31337")
		switch {
		case tt.want == "" && len(errs) > 0:
			t.Errorf("%+v: %v", tt.c, errs)
		case tt.want != "" && (len(errs) == 0 || !strings.Contains(errs[0].Error(), tt.want)):
			t.Errorf("%+v: %v, want an error with %q", tt.c, errs, tt.want)
		}
	}
	// Gossip off loopback needs a key, or --insecure.
	cfg := Config{Listen: "127.0.0.1:0", HTTP: "off", Cluster: ClusterConfig{NodeID: "a", Gossip: "10.1.2.3:7946"}}
	cfg.EnsureDefaults()
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "needs a shared key") {
		t.Errorf("gossip off loopback without a key: %v", err)
	}
	cfg.Security.Insecure = true
	if err := cfg.Validate(); err != nil && strings.Contains(err.Error(), "needs a shared key") {
		t.Errorf("--insecure: %v", err)
	}
	// Without node certificates a cluster node refuses to start with
	// authentication on (clustertls_test.go has the rest); and with a
	// lake of its own.
	cfg = Config{Listen: "127.0.0.1:0", HTTP: "off", Cluster: ClusterConfig{NodeID: "a", Gossip: "127.0.0.1:7946"}}
	cfg.Security.Auth = AuthOn
	cfg.EnsureDefaults()
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "needs node-to-node TLS") {
		t.Errorf("cluster with auth on: %v", err)
	}
	// A lake the nodes share: a PostgreSQL catalog, an s3:// warehouse and
	// shared table definitions; anything between is refused, naming why.
	cfg.Security.Auth, cfg.S3.Region = AuthOff, "us-east-1"
	for _, tt := range []struct {
		catalog, warehouse, meta string
		want                     []string // "" for none
	}{
		{"postgres://h/ice", "s3://lake/wh", "postgres://h/meta", nil},
		{"postgres://h/ice", "file:///srv/wh", "postgres://h/meta", []string{`warehouse "file:///srv/wh" is not shared storage`}},
		{"postgres://h/ice", "s3://lake/wh", "", []string{"the table definitions are this node's own"}},
		{"sqlite:///srv/iceberg.db", "s3://lake/wh", "postgres://h/meta", []string{"is a SQLite file, one node's"}},
		{"https://rest/catalog", "s3://lake/wh", "postgres://h/meta", []string{"is a REST catalog"}},
		{"sqlite:///srv/iceberg.db", "file:///srv/wh", "sqlite:///srv/cluster.db", []string{"SQLite file", "not shared storage", "this node's own", "--catalog postgres://"}},
	} {
		c := cfg
		c.Catalog, c.Warehouse, c.Cluster.Meta = tt.catalog, tt.warehouse, tt.meta
		err := c.Validate()
		if len(tt.want) == 0 {
			if err != nil {
				t.Errorf("shared lake %s %s %s: %v", tt.catalog, tt.warehouse, tt.meta, err)
			}
			continue
		}
		for _, w := range tt.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("lake %s %s %s: %v, want an error with %q", tt.catalog, tt.warehouse, tt.meta, err, w)
			}
		}
	}
	// A wildcard listen address needs --advertise.
	c := ClusterConfig{NodeID: "a", Gossip: "127.0.0.1:7946"}
	c.ensureDefaults()
	if errs := c.validate("0.0.0.0:31337"); len(errs) == 0 {
		t.Error("wildcard listen without --advertise accepted")
	}
}

// Three nodes started with the cluster flags find each other, announce
// their Flight and HTTP addresses, list the cluster in lakestream.nodes,
// and a node that shuts down is seen as left, not failed.
func TestClusterNodesGossip(t *testing.T) {
	type running struct {
		n    *Node
		stop context.CancelFunc
		done chan error
	}
	var nodes []running
	seed := ""
	for i, id := range []string{"n1", "n2", "n3"} {
		cfg := quietConfig(t.TempDir())
		cfg.HTTP = "127.0.0.1:0"
		cfg.Cluster = ClusterConfig{NodeID: id, Gossip: freeLoopbackAddr(t), GossipTiming: "local", Rack: []string{"a", "b", "a"}[i]}
		if seed != "" {
			cfg.Cluster.Join = []string{seed}
		} else {
			seed = cfg.Cluster.Gossip
		}
		n, stop, done := startNodeWith(t, cfg)
		nodes = append(nodes, running{n, stop, done})
		t.Cleanup(stop)
	}
	waitUntil(t, func() bool {
		for _, r := range nodes {
			if len(r.n.Members().Live()) != 3 {
				return false
			}
		}
		return true
	})
	byID := map[string]*Node{"n1": nodes[0].n, "n2": nodes[1].n, "n3": nodes[2].n}
	for _, m := range nodes[0].n.Members().Members() {
		if want := byID[m.ID]; want == nil || m.Flight != want.Addr() || m.HTTP != want.HTTPAddr() {
			t.Errorf("member %+v: want the Flight and HTTP addresses of its node", m)
		}
	}
	rows := queryRows(t, client(t, nodes[1].n.Addr()), "SELECT node_id, state, rack, flight_addr, self FROM lakestream.nodes ORDER BY node_id")
	want := []string{"n1|alive|a|" + nodes[0].n.Addr() + "|false", "n2|alive|b|" + nodes[1].n.Addr() + "|true", "n3|alive|a|" + nodes[2].n.Addr() + "|false"}
	if strings.Join(rows, "\n") != strings.Join(want, "\n") {
		t.Fatalf("lakestream.nodes:\n%s\nwant\n%s", strings.Join(rows, "\n"), strings.Join(want, "\n"))
	}
	// n3 shuts down gracefully: the others see it left.
	nodes[2].stop()
	if err := <-nodes[2].done; err != nil {
		t.Fatalf("n3 serve: %v", err)
	}
	waitUntil(t, func() bool {
		for _, m := range nodes[0].n.Members().Members() {
			if m.ID == "n3" {
				return m.State == membership.Left
			}
		}
		return false
	})
}

// A single node (no cluster flags) starts no gossip, and lakestream.nodes
// lists it alone.
func TestSingleNodeHasNoGossip(t *testing.T) {
	n, stop, _ := startNodeWith(t, quietConfig(t.TempDir()))
	defer stop()
	if n.Members() != nil {
		t.Fatal("a single node started gossip")
	}
	rows := queryRows(t, client(t, n.Addr()), "SELECT node_id, state, flight_addr, self FROM lakestream.nodes")
	if len(rows) != 1 || rows[0] != "|alive|"+n.Addr()+"|true" {
		t.Fatalf("lakestream.nodes on a single node: %q", rows)
	}
	if rows := queryRows(t, client(t, n.Addr()), "SELECT * FROM lakestream.buckets"); len(rows) != 0 {
		t.Fatalf("lakestream.buckets on a single node: %q", rows)
	}
}

// freeLoopbackAddr is a loopback address whose TCP and UDP ports were both
// free a moment ago (gossip binds both).
func freeLoopbackAddr(t testing.TB) string {
	t.Helper()
	addr, err := proc.FreeLoopbackAddr()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

// queryRows runs a query and returns its rows, each its values joined by
// "|" (a null is empty).
func queryRows(t *testing.T, cl *flightsql.Client, sql string) []string {
	t.Helper()
	ctx := context.Background()
	info, err := cl.Execute(ctx, sql)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	var rows []string
	// An endpoint located at another node is read there, as ADBC does.
	at := map[string]*flightsql.Client{}
	defer func() {
		for _, c := range at {
			c.Close()
		}
	}()
	for _, ep := range info.Endpoint {
		from := cl
		if len(ep.Location) > 0 {
			addr := strings.TrimPrefix(strings.TrimPrefix(ep.Location[0].Uri, "grpc+tcp://"), "grpc://")
			if from = at[addr]; from == nil {
				from, err = flightsql.NewClient(addr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
				if err != nil {
					t.Fatal(err)
				}
				at[addr] = from
			}
		}
		rdr, err := from.DoGet(ctx, ep.Ticket)
		if err != nil {
			t.Fatal(err)
		}
		for rdr.Next() {
			rec := rdr.RecordBatch()
			for i := range int(rec.NumRows()) {
				vals := make([]string, rec.NumCols())
				for c := range vals {
					if col := rec.Column(c); col.IsValid(i) {
						vals[c] = col.ValueStr(i)
					}
				}
				rows = append(rows, strings.Join(vals, "|"))
			}
		}
		rdr.Release()
	}
	return rows
}
