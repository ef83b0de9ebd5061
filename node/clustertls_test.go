package node

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/lakestream/lakestream/auth"
	"github.com/lakestream/lakestream/cluster"
	"github.com/lakestream/lakestream/internal/pgtest"
	"github.com/lakestream/lakestream/internal/testca"
)

// issueNode returns the certificate (PEM) of node id, signed by the CA,
// good for both ends of a node-to-node connection and, by its addresses,
// for clients of the Flight port.
func (ca *testCA) issueNode(t testing.TB, id string) (certPEM, keyPEM []byte) {
	t.Helper()
	return ca.Issue(t, id, testca.Node, "127.0.0.1", "localhost")
}

// nodeFiles writes node id's certificate and key into dir and returns
// their paths.
func (ca *testCA) nodeFiles(t testing.TB, dir, id string) (cert, key string) {
	t.Helper()
	c, k := ca.issueNode(t, id)
	cert, key = filepath.Join(dir, id+".pem"), filepath.Join(dir, id+".key")
	for path, data := range map[string][]byte{cert: c, key: k} {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return cert, key
}

// secureCluster is a test cluster with authentication on and mutual TLS
// between its nodes, all of whose certificates the CA issued.
type secureCluster struct {
	*testCluster
	ca     *testCA
	caFile string
	dir    string
}

const clusterAdminPassword = "cluster-admin-password"

func newSecureCluster(t *testing.T, ids ...string) *secureCluster {
	return newSecureClusterOn(t, "", ids...)
}

// newSecureClusterOn starts the nodes on the metadata store metaURI ("":
// a SQLite file of the test's).
func newSecureClusterOn(t *testing.T, metaURI string, ids ...string) *secureCluster {
	dir := t.TempDir()
	sc := &secureCluster{ca: newTestCA(t, "cluster CA"), caFile: filepath.Join(dir, "ca.pem"), dir: dir}
	if err := os.WriteFile(sc.caFile, sc.ca.PEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if metaURI == "" {
		metaURI = "sqlite://" + filepath.Join(dir, "meta.db")
	}
	c := &testCluster{t: t, meta: metaURI, nodes: map[string]*clusterNode{}}
	c.tweak = func(id string, cfg *Config) {
		cfg.Security = SecurityConfig{Auth: AuthOn, AdminPassword: clusterAdminPassword, hash: cheapHash}
		cfg.Cluster.TLSCert, cfg.Cluster.TLSKey = sc.ca.nodeFiles(t, dir, id)
		cfg.Cluster.TLSCA = sc.caFile
	}
	sc.testCluster = c
	for _, id := range ids {
		c.start(id, t.TempDir())
	}
	c.waitMembers(len(ids))
	return sc
}

// admin is a client of node id logged in as admin, over TLS (the node
// serves its node certificate to clients: no --tls-cert).
func (sc *secureCluster) admin(id string) (*flightsql.Client, context.Context) {
	cl := tlsClient(sc.t, sc.nodes[id].n.Addr(), sc.ca.PEM, nil)
	return cl, login(sc.t.(*testing.T), cl, "admin", clusterAdminPassword)
}

// A cluster with authentication on replicates, and forwards writes, over
// mutual TLS; a peer
// without a certificate of the cluster CA, and a client with a
// superuser's bearer token, are refused on the node-to-node service; a
// node fetches only as itself.
func TestClusterMutualTLS(t *testing.T) {
	sc := newSecureCluster(t, "n1", "n2", "n3")
	for _, id := range []string{"n1", "n2", "n3"} {
		cl, ctx := sc.admin(id)
		if _, err := cl.ExecuteUpdate(ctx, "CREATE TABLE t (id BIGINT, v VARCHAR) WITH ('bucket.num' = '1')"); err != nil {
			t.Fatalf("%s: %v", id, err)
		}
	}
	b := sc.bucket("n1")
	if len(b.Replicas) != 3 || b.Leader == "" {
		t.Fatalf("bucket placed as %+v", b)
	}
	leader, lctx := sc.admin(b.Leader)
	for i := range 5 {
		if _, err := leader.ExecuteUpdate(lctx, fmt.Sprintf("INSERT INTO t SELECT range + %d, 'v' FROM range(10)", i*10)); err != nil {
			t.Fatal(err)
		}
	}
	follower := b.Replicas[0]
	if follower == b.Leader {
		follower = b.Replicas[1]
	}
	// A write sent to a follower is forwarded to the leader, over the
	// same mutual TLS, as the follower node.
	fcl, fctx := sc.admin(follower)
	waitUntil(t, func() bool {
		_, err := fcl.ExecuteUpdate(fctx, "INSERT INTO t SELECT range + 1000, 'f' FROM range(10)")
		return err == nil
	})
	for _, id := range b.Replicas {
		cl, ctx := sc.admin(id)
		waitUntil(t, func() bool { n, err := query(ctx, cl, "SELECT count(*) FROM t"); return err == nil && n == 60 })
	}
	sc.sameBytes(b.Replicas)

	// A table of one replica a bucket: each node reads the buckets it
	// does not hold from the nodes that do (remote scans), over the same
	// mutual TLS.
	for _, id := range []string{"n1", "n2", "n3"} {
		cl, ctx := sc.admin(id)
		if _, err := cl.ExecuteUpdate(ctx, "CREATE TABLE spread (id BIGINT) WITH ('bucket.num' = '3', 'bucket.replicas' = '1', 'bucket.key' = 'id')"); err != nil {
			t.Fatalf("%s: %v", id, err)
		}
	}
	waitUntil(t, func() bool {
		_, err := fcl.ExecuteUpdate(fctx, "INSERT INTO spread SELECT range FROM range(30)")
		return err == nil
	})
	for _, id := range []string{"n1", "n2", "n3"} {
		cl, ctx := sc.admin(id)
		waitUntil(t, func() bool { n, err := query(ctx, cl, "SELECT count(*) FROM spread"); return err == nil && n == 30 })
	}

	addr := sc.nodes[b.Leader].n.Addr()
	fetch := cluster.FetchRequest{BucketRef: cluster.BucketRef{TableID: 1}, Epoch: b.Epoch, Offset: 0, MaxBytes: 1 << 20, Follower: follower}
	transport := func(cert, key, ca string) *cluster.GRPCTransport {
		t.Helper()
		ct, err := auth.NewClusterTLS(cert, key, ca, nil)
		if err != nil {
			t.Fatal(err)
		}
		tr := cluster.NewGRPCTransport(grpc.WithTransportCredentials(credentials.NewTLS(ct.ClientConfig())))
		t.Cleanup(func() { tr.Close() })
		return tr
	}
	ctx := context.Background()

	// The follower's own certificate fetches as the follower.
	cert, key := sc.ca.nodeFiles(t, t.TempDir(), follower)
	if resp, err := transport(cert, key, sc.caFile).Fetch(ctx, addr, fetch); err != nil || resp.Code != cluster.CodeOK {
		t.Fatalf("fetch with %s's certificate: %+v, %v", follower, resp, err)
	}
	// Another node's certificate cannot fetch as the follower.
	other := "n1"
	for _, id := range []string{"n1", "n2", "n3"} {
		if id != follower && id != b.Leader {
			other = id
		}
	}
	cert, key = sc.ca.nodeFiles(t, t.TempDir(), other)
	_, err := transport(cert, key, sc.caFile).Fetch(ctx, addr, fetch)
	wantCode(t, "a fetch as another node", err, codes.PermissionDenied)

	// A certificate of another CA, even naming a member, is refused at
	// the handshake.
	rogue := newTestCA(t, "rogue CA")
	cert, key = rogue.nodeFiles(t, t.TempDir(), follower)
	_, err = transport(cert, key, sc.caFile).Fetch(ctx, addr, fetch)
	wantCode(t, "a fetch with a certificate of another CA", err, codes.Unavailable)

	// A client of the Flight port (TLS without a node certificate) with
	// the admin's bearer token is no node.
	_, actx := sc.admin(b.Leader)
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{RootCAs: certPool(sc.ca.PEM), ServerName: "localhost"})))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	md, _ := metadata.FromOutgoingContext(actx)
	if len(md.Get("authorization")) == 0 {
		t.Fatal("the login gave no bearer token")
	}
	err = conn.Invoke(actx, "/lakestream.replication.v1.Replication/Fetch", wrapperspb.Bytes(nil), new(wrapperspb.BytesValue))
	wantCode(t, "Fetch with the admin's bearer token", err, codes.Unauthenticated)
	if !strings.Contains(err.Error(), "only another node of the cluster") {
		t.Errorf("Fetch with a bearer token: %v", err)
	}
	// Basic credentials of a superuser neither.
	basic := metadata.AppendToOutgoingContext(ctx, "authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte("admin:"+clusterAdminPassword)))
	err = conn.Invoke(basic, "/lakestream.replication.v1.Replication/EndForEpoch", wrapperspb.Bytes(nil), new(wrapperspb.BytesValue))
	wantCode(t, "EndForEpoch with the admin's password", err, codes.Unauthenticated)
}

func certPool(pemBytes []byte) *x509.CertPool {
	p := x509.NewCertPool()
	p.AppendCertsFromPEM(pemBytes)
	return p
}

// A cluster node with authentication on needs node-to-node TLS, all three
// files of it, and a certificate naming itself.
func TestClusterTLSConfig(t *testing.T) {
	base := func() Config {
		cfg := quietConfig(t.TempDir())
		cfg.Cluster = ClusterConfig{NodeID: "n1", Gossip: "127.0.0.1:7946"}
		cfg.Security = SecurityConfig{Auth: AuthOn}
		return cfg
	}
	cfg := base()
	cfg.EnsureDefaults()
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "needs node-to-node TLS") || !strings.Contains(err.Error(), "--cluster-tls-cert") {
		t.Errorf("auth on without cluster TLS: %v", err)
	}
	cfg = base()
	cfg.Cluster.TLSCert = "n1.pem"
	cfg.EnsureDefaults()
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "give all of --cluster-tls-cert, --cluster-tls-key and --cluster-tls-ca") {
		t.Errorf("only a cluster certificate: %v", err)
	}
	cfg = base()
	cfg.Cluster.TLSCert, cfg.Cluster.TLSKey, cfg.Cluster.TLSCA = "n1.pem", "n1.key", "ca.pem"
	cfg.EnsureDefaults()
	if err := cfg.Validate(); err != nil {
		t.Errorf("auth on with cluster TLS: %v", err)
	}

	// A certificate of another node id is refused at start.
	dir := t.TempDir()
	ca := newTestCA(t, "cluster CA")
	caFile := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caFile, ca.PEM, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg = quietConfig(t.TempDir())
	cfg.Cluster = ClusterConfig{NodeID: "n1", Gossip: freeLoopbackAddr(t), GossipTiming: "local", TLSCA: caFile}
	cfg.Cluster.TLSCert, cfg.Cluster.TLSKey = ca.nodeFiles(t, dir, "n2")
	if _, err := Start(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), `names node "n2"`) {
		t.Errorf("start with n2's certificate as n1: %v", err)
	}
}

// With the catalog shared in PostgreSQL, an API key created on one node
// authenticates on every node, and once dropped on one node it is refused
// by the others at their next poll of the catalog.
func TestClusterAPIKeyRevokedEverywhere(t *testing.T) {
	pg := pgtest.ForTest(t, pgtest.Options{})
	uri, err := pg.CreateDatabase(context.Background(), "keys")
	if err != nil {
		t.Fatal(err)
	}
	sc := newSecureClusterOn(t, uri, "n1", "n2")
	cl, ctx := sc.admin("n1")
	info, err := cl.Execute(ctx, "CREATE API KEY svc")
	if err != nil {
		t.Fatal(err)
	}
	rdr, err := cl.DoGet(ctx, info.Endpoint[0].Ticket)
	if err != nil {
		t.Fatal(err)
	}
	if !rdr.Next() {
		t.Fatal("CREATE API KEY returned no row")
	}
	key := rdr.RecordBatch().Column(2).(*array.String).Value(0)
	rdr.Release()

	other := tlsClient(t, sc.nodes["n2"].n.Addr(), sc.ca.PEM, nil)
	withKey := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+key)
	waitUntil(t, func() bool { _, err := query(withKey, other, "SELECT 1"); return err == nil })
	if _, err := cl.Execute(ctx, "DROP API KEY svc"); err != nil {
		t.Fatal(err)
	}
	dropped := time.Now()
	waitUntil(t, func() bool {
		_, err := query(withKey, other, "SELECT 1")
		return status.Code(err) == codes.Unauthenticated
	})
	t.Logf("the key dropped on n1 was refused by n2 %s later", time.Since(dropped).Round(time.Millisecond))
}

// Nodes that share their catalog share the key that signs bearer tokens: a
// token one node issued is good on another, as a client reading an
// endpoint at its location sends it there.
func TestClusterTokenGoodOnEveryNode(t *testing.T) {
	pg := pgtest.ForTest(t, pgtest.Options{})
	uri, err := pg.CreateDatabase(context.Background(), "tokens")
	if err != nil {
		t.Fatal(err)
	}
	sc := newSecureClusterOn(t, uri, "n1", "n2")
	_, ctx := sc.admin("n1") // logged in on n1
	other := tlsClient(t, sc.nodes["n2"].n.Addr(), sc.ca.PEM, nil)
	if _, err := query(ctx, other, "SELECT 1"); err != nil {
		t.Fatalf("n1's token on n2: %v", err)
	}
}
