package difftest

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lakestream/lakestream/catalog"
	"github.com/lakestream/lakestream/cluster/meta"
	"github.com/lakestream/lakestream/internal/bucket"
	"github.com/lakestream/lakestream/internal/proc"
	"github.com/lakestream/lakestream/node"
	"github.com/lakestream/lakestream/planner/duck"
	"github.com/lakestream/lakestream/tables"
)

// TestCorpusOnCluster runs the corpus on a cluster of three nodes (in this
// process) over which the data set is spread: every table has
// bucket.replicas 1, so that each bucket lives on one node, and each
// node's query engine reads the buckets it does not hold from the others
// (docs/cluster.md, "Distributed queries"). The queries go round the
// three nodes' engines; the results must equal the reference's, as on one
// node. Rows are written on each bucket's leader (a node does not forward
// writes yet): with a bucket key split by bucket, without one round the
// nodes that lead a bucket.
func TestCorpusOnCluster(t *testing.T) {
	ctx := context.Background()
	start := time.Now()
	cl := startCluster(t, 3)
	ref, err := openRef()
	if err != nil {
		t.Fatal(err)
	}
	defer ref.close()
	f := &fixture{ref: ref, mem: memory.NewCheckedAllocator(memory.NewGoAllocator())}
	if err := cl.exec(ctx, "CREATE DATABASE analytics"); err != nil {
		t.Fatal(err)
	}
	if err := ref.exec("CREATE SCHEMA analytics", `CREATE SCHEMA "default"`); err != nil {
		t.Fatal(err)
	}
	for _, spec := range dataset() {
		if err := cl.load(ctx, spec); err != nil {
			t.Fatalf("load %s: %v", spec.name, err)
		}
		f.store = cl.nodes[0].Tables()
		if err := f.loadReference(ctx, spec); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("cluster started and loaded in %s", time.Since(start).Round(time.Millisecond))
	remote := 0
	for _, spec := range dataset() {
		remote += cl.remoteBuckets(ctx, t, spec)
	}
	if remote == 0 {
		t.Fatal("every node holds every bucket: the cluster reads nothing remotely")
	}
	corpus := loadCorpus(t)
	start = time.Now()
	passed := 0
	for i, n := range cl.nodes {
		eng, err := duck.New(n.Resolver(), duck.Options{})
		if err != nil {
			t.Fatal(err)
		}
		var part []corpusQuery
		for j, q := range corpus {
			if j%len(cl.nodes) == i {
				part = append(part, q)
			}
		}
		f.eng = eng
		passed += runCorpus(ctx, t, f, part, false)
		if err := eng.Close(); err != nil {
			t.Error(err)
		}
	}
	t.Logf("corpus on 3 nodes (%d buckets read remotely from each node, summed): %d of %d queries pass (%s)",
		remote, passed, len(corpus), time.Since(start).Round(time.Millisecond))
}

// testCluster is nodes of one cluster in this process, sharing a SQLite
// metadata store; each has a catalog of its own, in which the same DDL in
// the same order gives the same table ids.
type testCluster struct {
	nodes []*node.Node
	meta  meta.Store
}

func startCluster(t *testing.T, n int) *testCluster {
	dir := t.TempDir()
	metaURI := "sqlite://" + filepath.Join(dir, "meta.db")
	c := &testCluster{}
	seed := ""
	for i := range n {
		gossip, err := proc.FreeLoopbackAddr()
		if err != nil {
			t.Fatal(err)
		}
		cfg := node.Config{DataDir: filepath.Join(dir, fmt.Sprint("n", i+1)), Listen: "127.0.0.1:0", HTTP: "off",
			Tiering: node.TieringManual, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
			Cluster: node.ClusterConfig{NodeID: fmt.Sprint("n", i+1), Gossip: gossip, GossipTiming: "local", Meta: metaURI}}
		if seed != "" {
			cfg.Cluster.Join = []string{seed}
		} else {
			seed = gossip
		}
		ctx, cancel := context.WithCancel(context.Background())
		nd, err := node.Start(ctx, cfg)
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- nd.Serve(ctx) }()
		t.Cleanup(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("node %d: %v", i+1, err)
			}
		})
		c.nodes = append(c.nodes, nd)
	}
	ms, err := meta.OpenSQLite(strings.TrimPrefix(metaURI, "sqlite://"))
	if err != nil {
		t.Fatal(err)
	}
	c.meta = ms
	t.Cleanup(func() { ms.Close() })
	waitFor(t, func() bool {
		for _, nd := range c.nodes {
			if len(nd.Members().Live()) != n {
				return false
			}
		}
		return true
	})
	return c
}

// waitFor polls cond: the cluster's state has no event to wait on.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in a minute")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// exec runs DDL on every node.
func (c *testCluster) exec(ctx context.Context, ddl string) error {
	for _, n := range c.nodes {
		if err := execDDL(ctx, n.Tables(), ddl); err != nil {
			return err
		}
	}
	return nil
}

// load creates spec with bucket.replicas 1 and writes its rows on the
// buckets' leaders, as loadLake does on one node (without the write
// shapes: each write is one plain record).
func (c *testCluster) load(ctx context.Context, spec *tableSpec) error {
	s := *spec
	s.with = strings.TrimPrefix(s.with+", 'bucket.replicas'='1'", ", ")
	rows := s.rows
	if s.addColumnAt > 0 {
		s.cols = s.cols[:len(s.cols)-1]
		rows = nil
		for _, r := range spec.rows[:spec.addColumnAt] {
			rows = append(rows, r[:len(r)-1])
		}
	}
	if err := c.exec(ctx, s.ddl(true)); err != nil {
		return err
	}
	if err := c.writeRows(ctx, spec, rows); err != nil || spec.addColumnAt == 0 {
		return err
	}
	last := spec.cols[len(spec.cols)-1]
	if err := c.exec(ctx, fmt.Sprintf("ALTER TABLE %s ADD COLUMN %s %s", spec.ref(), quoteIdent(last.name), last.typ)); err != nil {
		return err
	}
	return c.writeRows(ctx, spec, spec.rows[spec.addColumnAt:])
}

// leaders waits until every bucket of the table has a leader and returns
// each bucket's leading node (its index in c.nodes).
func (c *testCluster) leaders(ctx context.Context, def *catalog.Table) ([]int, error) {
	for {
		bs, err := c.meta.Buckets(ctx, def.ID)
		if err != nil {
			return nil, err
		}
		out := make([]int, len(bs))
		ok := len(bs) == def.Options.BucketNum
		for i, b := range bs {
			out[i] = -1
			for j := range c.nodes {
				if b.Leader == fmt.Sprint("n", j+1) {
					out[i] = j
				}
			}
			ok = ok && out[i] >= 0
		}
		if ok {
			return out, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(10 * time.Millisecond): // polling the metadata store
		}
	}
}

func (c *testCluster) writeRows(ctx context.Context, spec *tableSpec, rows [][]any) error {
	tbls := make([]*tables.Table, len(c.nodes))
	for i, n := range c.nodes {
		t, err := n.Tables().Get(ctx, spec.db, spec.name)
		if err != nil {
			return err
		}
		tbls[i] = t
	}
	def := tbls[0].Def()
	lead, err := c.leaders(ctx, def)
	if err != nil {
		return err
	}
	var leading []int // nodes that lead a bucket, for writes without a key
	for i := range c.nodes {
		for _, l := range lead {
			if l == i {
				leading = append(leading, i)
				break
			}
		}
	}
	for i, start := 0, 0; start < len(rows); i++ {
		size := max(spec.minChunk, chunkSizes[i%len(chunkSizes)])
		if spec.chunks != nil {
			size = spec.chunks[i]
		}
		end := min(len(rows), start+size)
		rec, err := buildRecord(tbls[0].Schema(), rows[start:end])
		if err != nil {
			return err
		}
		err = c.route(ctx, tbls, def, lead, leading[i%len(leading)], rec)
		rec.Release()
		if err != nil {
			return fmt.Errorf("rows %d..%d: %w", start, end, err)
		}
		start = end
	}
	return nil
}

// route writes rec on the leaders of its rows' buckets: split by the
// bucket key when the table has one, else whole on node other (which the
// node writes to a bucket it leads).
func (c *testCluster) route(ctx context.Context, tbls []*tables.Table, def *catalog.Table, lead []int, other int, rec arrow.RecordBatch) error {
	keys := def.BucketKeyIndexes()
	if len(keys) == 0 || len(lead) == 1 {
		if len(lead) == 1 {
			other = lead[0]
		}
		rec.Retain()
		return conformAndWrite(ctx, tbls[other], []arrow.RecordBatch{rec})
	}
	a, err := bucket.NewAssigner(def.ArrowSchema(), keys, len(lead))
	if err != nil {
		return err
	}
	split, err := bucket.Split(rec, a.Assign(rec, nil), len(lead), memory.DefaultAllocator)
	if err != nil {
		return err
	}
	byNode := make([][]arrow.RecordBatch, len(c.nodes))
	for b, r := range split {
		if r != nil {
			byNode[lead[b]] = append(byNode[lead[b]], r)
		}
	}
	for i, recs := range byNode {
		if len(recs) > 0 {
			if err := conformAndWrite(ctx, tbls[i], recs); err != nil {
				return err
			}
		}
	}
	return nil
}

// remoteBuckets counts, over the nodes, the buckets of spec's table that a
// node reads from another.
func (c *testCluster) remoteBuckets(ctx context.Context, t *testing.T, spec *tableSpec) int {
	n := 0
	for i, nd := range c.nodes {
		tbl, err := nd.Tables().Get(ctx, spec.db, spec.name)
		if err != nil {
			t.Fatal(err)
		}
		bs, err := c.meta.Buckets(ctx, tbl.Def().ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range bs {
			if b.Leader != fmt.Sprint("n", i+1) {
				n++
			}
		}
	}
	return n
}
