package node

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"

	"github.com/lakestream/lakestream/cluster"
)

// BenchmarkClusterTLSIngest ingests the same batches, in turns, into the
// leader of a three-node cluster in the clear and into that of one with
// node-to-node mutual TLS (authentication off in both, the client over
// TLS to the second, whose port serves TLS), replicas 3,
// min.insync.replicas 2, and reports each one's rows per second and their
// ratio (docs/benchmarks.md). The six nodes share the machine's cores.
//
//	go test -run '^$' -bench ClusterTLSIngest -benchtime 3x ./node/
func BenchmarkClusterTLSIngest(b *testing.B) {
	const create = "CREATE TABLE t (id BIGINT, v VARCHAR) WITH ('bucket.num' = '1', 'bucket.replicas' = '3', 'min.insync.replicas' = '2')"

	plain := newTestCluster(b, "n1", "n2", "n3")
	plain.exec(create)
	dir := b.TempDir()
	ca := newTestCA(b, "cluster CA")
	caFile := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caFile, ca.PEM, 0o600); err != nil {
		b.Fatal(err)
	}
	secure := &testCluster{t: b, meta: "sqlite://" + filepath.Join(dir, "meta.db"), nodes: map[string]*clusterNode{}}
	secure.tweak = func(id string, cfg *Config) {
		cfg.Cluster.TLSCert, cfg.Cluster.TLSKey = ca.nodeFiles(b, dir, id)
		cfg.Cluster.TLSCA = caFile
	}
	for _, id := range []string{"n1", "n2", "n3"} {
		secure.start(id, b.TempDir())
	}
	secure.waitMembers(3)
	for _, cn := range secure.nodes {
		mustExec(b, tlsClient(b, cn.n.Addr(), ca.PEM, nil), create)
	}
	leaderOf := func(c *testCluster) *Node {
		st, err := c.nodes["n1"].n.repl.store.Bucket(context.Background(), cluster.BucketRef{TableID: 1})
		if err != nil {
			b.Fatal(err)
		}
		l := c.nodes[st.Leader].n
		waitUntil(b, func() bool { return l.repl.Leads(1, 0) })
		return l
	}
	plainCl := client(b, leaderOf(plain).Addr())
	tlsCl := tlsClient(b, leaderOf(secure).Addr(), ca.PEM, nil)

	ingestTurns(b, [2]string{"plaintext-rows/s", "mtls-rows/s"}, "mtls/plaintext", [2]*flightsql.Client{plainCl, tlsCl})
}
