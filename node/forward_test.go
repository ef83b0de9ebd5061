package node

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/lakestream/lakestream/cluster"
)

// idemCall is the context of call seq of idempotent writer id.
func idemCall(id int64, seq int) context.Context {
	return metadata.AppendToOutgoingContext(context.Background(),
		"lakestream-writer-id", strconv.FormatInt(id, 10), "lakestream-writer-seq", strconv.Itoa(seq))
}

// update runs a write through cl and returns its row count. A write that
// the cluster refused taking nothing (a leader changing under a loaded
// machine), or any UNAVAILABLE of an idempotent call, is sent again, as
// a client does.
func update(t *testing.T, ctx context.Context, cl *flightsql.Client, sql string) int64 {
	t.Helper()
	_, idem := metadata.FromOutgoingContext(ctx)
	var n int64
	waitUntil(t, func() bool {
		var err error
		n, err = cl.ExecuteUpdate(ctx, sql)
		switch {
		case err == nil:
			return true
		case status.Code(err) == codes.Unavailable && (idem || strings.Contains(err.Error(), "nothing was written")):
			t.Logf("sent again: %v", err)
			return false
		}
		t.Fatalf("%s: %v", sql, err)
		return false
	})
	return n
}

// leaders waits until each of the table's n buckets has a leader, and
// returns them by bucket.
func (c *testCluster) leaders(table int64, n int) []string {
	c.t.Helper()
	out := make([]string, n)
	var any *clusterNode
	for _, cn := range c.nodes {
		any = cn
		break
	}
	waitUntil(c.t, func() bool {
		for b := range out {
			st, err := any.n.repl.store.Bucket(context.Background(), cluster.BucketRef{TableID: table, Bucket: int32(b)})
			if err != nil || st.Leader == "" {
				return false
			}
			out[b] = st.Leader
		}
		return true
	})
	return out
}

// storedIDs is the ids of a log table's rows, read bucket by bucket from
// each bucket's leader (a node serves only the buckets it holds).
func (c *testCluster) storedIDs(t *testing.T, table string, leaders []string) []int64 {
	t.Helper()
	var ids []int64
	for b, id := range leaders {
		for _, r := range queryRows(t, client(t, c.nodes[id].n.Addr()), fmt.Sprintf(`SELECT id FROM "%s$changelog" WHERE _bucket = %d`, table, b)) {
			v, err := strconv.ParseInt(r, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, v)
		}
	}
	slices.Sort(ids)
	return ids
}

// checkOnce fails unless ids are 0 .. n-1, each once.
func checkOnce(t *testing.T, what string, ids []int64, n int64) {
	t.Helper()
	if int64(len(ids)) != n {
		t.Errorf("%s: %d rows stored, want %d", what, len(ids), n)
	}
	for i, v := range ids {
		if v != int64(i) {
			t.Fatalf("%s: row %d has id %d: a row lost or duplicated", what, i, v)
		}
	}
}

func ingestIDs(t *testing.T, ctx context.Context, cl *flightsql.Client, table string, from, n int64) int64 {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for i := range n {
		b.Field(0).(*array.Int64Builder).Append(from + i)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	_, idem := metadata.FromOutgoingContext(ctx)
	var got int64
	waitUntil(t, func() bool { // sent again as update does
		rdr, _ := array.NewRecordReader(schema, []arrow.RecordBatch{rec})
		defer rdr.Release()
		var err error
		got, err = cl.ExecuteIngest(ctx, rdr, &flightsql.ExecuteIngestOpts{Table: table, TableDefinitionOptions: &flightsql.TableDefinitionOptions{
			IfNotExist: flightsql.TableDefinitionOptionsTableNotExistOptionFail, IfExists: flightsql.TableDefinitionOptionsTableExistsOptionAppend}})
		switch {
		case err == nil:
			return true
		case status.Code(err) == codes.Unavailable && (idem || strings.Contains(err.Error(), "nothing was written")):
			t.Logf("sent again: %v", err)
			return false
		}
		t.Fatalf("ingest into %s: %v", table, err)
		return false
	})
	return got
}

// Writes sent to any node of a cluster whose buckets have two replicas
// of three nodes (so no node leads or holds every bucket) are split by
// bucket and stored on each bucket's leader: INSERTs, bulk ingests and
// idempotent calls through every node, with a bucket key and without;
// an idempotent call retried through another node stores nothing more;
// every row is stored once.
func TestClusterForwardsWrites(t *testing.T) {
	c := newTestCluster(t, "n1", "n2", "n3")
	c.exec("CREATE TABLE t (id BIGINT, v VARCHAR) WITH ('bucket.num' = '6', 'bucket.key' = 'id', 'bucket.replicas' = '2')",
		"CREATE TABLE r (id BIGINT) WITH ('bucket.num' = '3', 'bucket.replicas' = '1', 'min.insync.replicas' = '1')")
	lt, lr := c.leaders(1, 6), c.leaders(2, 3)
	t.Logf("leaders of t: %v, of r: %v", lt, lr)
	nodes := []string{"n1", "n2", "n3"}
	var nextT, nextR int64
	for i, id := range nodes {
		cl := client(t, c.nodes[id].n.Addr())
		other := client(t, c.nodes[nodes[(i+1)%3]].n.Addr())
		if n := update(t, context.Background(), cl, fmt.Sprintf("INSERT INTO t SELECT range + %d, 'p' FROM range(60)", nextT)); n != 60 {
			t.Fatalf("INSERT through %s: %d rows", id, n)
		}
		nextT += 60
		if n := ingestIDs(t, context.Background(), cl, "t", nextT, 40); n != 40 {
			t.Fatalf("ingest through %s: %d rows", id, n)
		}
		nextT += 40
		// An idempotent call, and its retry through another node.
		call := fmt.Sprintf("INSERT INTO t SELECT range + %d, 'i' FROM range(30)", nextT)
		for _, via := range []*flightsql.Client{cl, other} {
			if n := update(t, idemCall(int64(100+i), 0), via, call); n != 30 {
				t.Fatalf("idempotent call through %s: %d rows", id, n)
			}
		}
		nextT += 30
		if n := ingestIDs(t, idemCall(int64(100+i), 1), other, "t", nextT, 20); n != 20 {
			t.Fatalf("idempotent ingest: %d rows", n)
		}
		nextT += 20

		// Without a bucket key: a plain write goes to a bucket this node
		// leads, or is forwarded; an idempotent call to one bucket picked
		// from the call, the same on its retry through another node.
		if n := update(t, context.Background(), cl, fmt.Sprintf("INSERT INTO r SELECT range + %d FROM range(10)", nextR)); n != 10 {
			t.Fatalf("INSERT into r through %s: %d rows", id, n)
		}
		nextR += 10
		call = fmt.Sprintf("INSERT INTO r SELECT range + %d FROM range(10)", nextR)
		for seq := range 3 {
			for _, via := range []*flightsql.Client{cl, other} {
				if n := update(t, idemCall(int64(200+i), seq), via, call); n != 10 {
					t.Fatalf("idempotent call to r through %s: %d rows", id, n)
				}
			}
			nextR += 10
			call = fmt.Sprintf("INSERT INTO r SELECT range + %d FROM range(10)", nextR)
		}
	}
	checkOnce(t, "t", c.storedIDs(t, "t", lt), nextT)
	checkOnce(t, "r", c.storedIDs(t, "r", lr), nextR)
}

// A primary-key table whose buckets different nodes lead takes upserts
// through any node, idempotent ones too: a retry through another node
// after the key changed does not apply the call again.
func TestClusterForwardsPKWrites(t *testing.T) {
	c := newTestCluster(t, "n1", "n2", "n3")
	c.exec("CREATE TABLE kv (id BIGINT, v VARCHAR, PRIMARY KEY (id)) WITH ('bucket.num' = '4', 'bucket.replicas' = '2')")
	leaders := c.leaders(1, 4)
	t.Logf("leaders: %v", leaders)
	m := &pkModel{rows: map[int64]string{}}
	nodes := []string{"n1", "n2", "n3"}
	for i, id := range nodes {
		cl := client(t, c.nodes[id].n.Addr())
		mustExec(t, cl, fmt.Sprintf("INSERT INTO kv SELECT range, '%s-' || range FROM range(%d, %d)", id, i*20, i*20+40))
		for k := int64(i * 20); k < int64(i*20+40); k++ {
			m.upsert(k, fmt.Sprintf("%s-%d", id, k))
		}
	}
	call := "INSERT INTO kv VALUES (1, 'idem'), (2, 'idem'), (3, 'idem'), (4, 'idem'), (5, 'idem')"
	n1, n2 := client(t, c.nodes["n1"].n.Addr()), client(t, c.nodes["n2"].n.Addr())
	if n, err := n1.ExecuteUpdate(idemCall(9, 0), call); err != nil || n != 5 {
		t.Fatalf("idempotent call: %d rows, %v", n, err)
	}
	for k := int64(1); k <= 5; k++ {
		m.upsert(k, "idem")
	}
	mustExec(t, n2, "INSERT INTO kv SELECT range, 'after' FROM range(1, 6)")
	for k := int64(1); k <= 5; k++ {
		m.upsert(k, "after")
	}
	if n, err := n2.ExecuteUpdate(idemCall(9, 0), call); err != nil || n != 5 {
		t.Fatalf("retry of the idempotent call through another node: %d rows, %v", n, err)
	}
	c.sameUnionState(t, m)

	// UPDATE and DELETE with any predicate, through any node: each
	// bucket's leader applies them to its rows.
	want := func(pred func(k int64, v string) bool) (n int64) {
		for k, v := range m.rows {
			if pred(k, v) {
				n++
			}
		}
		return n
	}
	dml := []struct {
		via, sql string
		pred     func(k int64, v string) bool
		apply    func(k int64, v string)
	}{
		{"n3", "UPDATE kv SET v = 'u' WHERE id % 5 = 0", func(k int64, _ string) bool { return k%5 == 0 }, func(k int64, _ string) { m.upsert(k, "u") }},
		{"n1", "DELETE FROM kv WHERE id % 7 = 3", func(k int64, _ string) bool { return k%7 == 3 }, func(k int64, _ string) { m.delete(k) }},
		{"n2", "UPDATE kv SET v = v || '!' WHERE v LIKE 'n2-%'", func(_ int64, v string) bool { return strings.HasPrefix(v, "n2-") }, func(k int64, v string) { m.upsert(k, v+"!") }},
	}
	for _, d := range dml {
		expect := want(d.pred)
		n, err := client(t, c.nodes[d.via].n.Addr()).ExecuteUpdate(context.Background(), d.sql)
		if err != nil || n != expect {
			t.Fatalf("%s through %s: %d rows, %v; want %d", d.sql, d.via, n, err, expect)
		}
		for k, v := range m.rows {
			if d.pred(k, v) {
				d.apply(k, v)
			}
		}
	}
	c.sameUnionState(t, m)

	// With bound parameters, refused: the statement is forwarded as text.
	stmt, err := n1.Prepare(context.Background(), "DELETE FROM kv WHERE id = ?")
	if err != nil {
		t.Fatal(err)
	}
	defer stmt.Close(context.Background())
	pb := array.NewRecordBuilder(memory.DefaultAllocator, arrow.NewSchema([]arrow.Field{{Name: "0", Type: arrow.PrimitiveTypes.Int64}}, nil))
	defer pb.Release()
	pb.Field(0).(*array.Int64Builder).Append(1)
	params := pb.NewRecordBatch()
	defer params.Release()
	stmt.SetParameters(params)
	if _, err := stmt.ExecuteUpdate(context.Background()); status.Code(err) != codes.Unimplemented {
		t.Fatalf("DELETE with a bound parameter on a cluster: %v; want UNIMPLEMENTED", err)
	}
	c.sameUnionState(t, m)
}

// sameUnionState waits until the nodes together serve the model's rows,
// and nodes that serve a key agree. (An engine query, not a plain scan,
// whose endpoints are located at each bucket's node: every node reads
// the whole table, docs/cluster.md "Distributed queries".)
func (c *testCluster) sameUnionState(t *testing.T, m *pkModel) {
	t.Helper()
	want := m.want()
	var got []string
	waitUntil(t, func() bool {
		seen := map[string]string{}
		for _, cn := range c.nodes {
			for _, r := range queryRows(t, client(t, cn.n.Addr()), "SELECT id, v FROM kv ORDER BY id") {
				k, v, _ := strings.Cut(r, "|")
				if was, ok := seen[k]; ok && was != v {
					return false // a follower behind
				}
				seen[k] = v
			}
		}
		got = got[:0]
		for k, v := range seen {
			got = append(got, k+"|"+v)
		}
		slices.SortFunc(got, func(a, b string) int {
			x, _ := strconv.Atoi(strings.SplitN(a, "|", 2)[0])
			y, _ := strconv.Atoi(strings.SplitN(b, "|", 2)[0])
			return x - y
		})
		return slices.Equal(got, want)
	})
}

// cutDialer is a node's dialer of other nodes whose links the test cuts:
// a cut link refuses new connections and closes those it made.
type cutDialer struct {
	mu    sync.Mutex
	cut   map[string]bool
	conns map[string][]net.Conn
}

func newCutDialer() *cutDialer {
	return &cutDialer{cut: map[string]bool{}, conns: map[string][]net.Conn{}}
}

func (d *cutDialer) dial(ctx context.Context, addr string) (net.Conn, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cut[addr] {
		return nil, errors.New("link cut by the test")
	}
	conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
	if err == nil {
		d.conns[addr] = append(d.conns[addr], conn)
	}
	return conn, err
}

func (d *cutDialer) set(addr string, cut bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.cut[addr] = cut
	if cut {
		for _, c := range d.conns[addr] {
			c.Close()
		}
		delete(d.conns, addr)
	}
}

// A multi-bucket call is atomic per bucket in a cluster: with the link
// from the node that takes an idempotent call to one bucket's leader cut,
// the call fails UNAVAILABLE saying which buckets stored their part, the
// others' rows are stored and the cut bucket's are not; once the link
// heals, the retry of the same call stores the missing part only, and
// every row is there once.
func TestClusterForwardFailsPerBucket(t *testing.T) {
	dialers := map[string]*cutDialer{}
	c := &testCluster{t: t, meta: "sqlite://" + filepath.Join(t.TempDir(), "meta.db"), nodes: map[string]*clusterNode{},
		tweak: func(id string, cfg *Config) {
			d := newCutDialer()
			dialers[id] = d
			cfg.Cluster.Dial = d.dial
		}}
	for _, id := range []string{"n1", "n2", "n3"} {
		c.start(id, t.TempDir())
	}
	c.waitMembers(3)
	// One replica a bucket: only the forward uses the link that is cut.
	c.exec("CREATE TABLE f (id BIGINT) WITH ('bucket.num' = '6', 'bucket.key' = 'id', 'bucket.replicas' = '1', 'min.insync.replicas' = '1')")
	leaders := c.leaders(1, 6)
	t.Logf("leaders: %v", leaders)
	// The cut leader leads some buckets, not all; the call goes through
	// another node.
	var cut, via string
	for _, x := range []string{"n1", "n2", "n3"} {
		if k := count(leaders, x); k > 0 && k < len(leaders) {
			cut = x
			break
		}
	}
	if cut == "" {
		t.Fatalf("leaders %v: no node leads some buckets but not all", leaders)
	}
	for _, x := range []string{"n1", "n2", "n3"} {
		if x != cut {
			via = x
			break
		}
	}
	const rows = 120
	call := fmt.Sprintf("INSERT INTO f SELECT range FROM range(%d)", rows)
	cl := client(t, c.nodes[via].n.Addr())
	dialers[via].set(c.nodes[cut].n.Addr(), true)
	_, err := cl.ExecuteUpdate(idemCall(5, 0), call)
	if status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), "were stored") {
		t.Fatalf("call with the link to %s cut: %v; want UNAVAILABLE naming the buckets stored", cut, err)
	}
	t.Logf("the client saw: %v", err)
	// What is stored: every bucket's part but the cut leader's.
	ids := c.storedIDs(t, "f", leaders)
	var want int
	for b, l := range leaders {
		n := len(queryRows(t, client(t, c.nodes[l].n.Addr()), fmt.Sprintf(`SELECT id FROM "f$changelog" WHERE _bucket = %d`, b)))
		if l == cut && n != 0 {
			t.Errorf("bucket %d, led by the cut node %s: %d rows stored, want none", b, l, n)
		}
		if l != cut {
			if n == 0 {
				t.Errorf("bucket %d, led by %s: no rows stored", b, l)
			}
			want += n
		}
	}
	if len(ids) != want || len(ids) == 0 || len(ids) == rows {
		t.Fatalf("%d rows stored after the failed call (%d in the reachable buckets)", len(ids), want)
	}
	// The link heals; the retry of the same call completes it, once.
	dialers[via].set(c.nodes[cut].n.Addr(), false)
	waitUntil(t, func() bool {
		n, err := cl.ExecuteUpdate(idemCall(5, 0), call)
		if err != nil && status.Code(err) != codes.Unavailable {
			t.Fatalf("retry: %v", err)
		}
		if err == nil && n != rows {
			t.Fatalf("retry: %d rows acknowledged, want %d", n, rows)
		}
		return err == nil
	})
	if n, err := client(t, c.nodes[cut].n.Addr()).ExecuteUpdate(idemCall(5, 1), fmt.Sprintf("INSERT INTO f SELECT range + %d FROM range(10)", rows)); err != nil || n != 10 {
		t.Fatalf("the writer's next call: %d rows, %v", n, err)
	}
	checkOnce(t, "f", c.storedIDs(t, "f", leaders), rows+10)
}

func count(s []string, v string) int {
	n := 0
	for _, x := range s {
		if x == v {
			n++
		}
	}
	return n
}

// A node forwarding to a leader that stops sends the part again to the
// new leader: the client's call succeeds without a retry of its own, and
// the writer's retry through the new leader stores nothing more.
func TestClusterForwardFollowsLeaderChange(t *testing.T) {
	c := newTestCluster(t, "n1", "n2", "n3")
	// min.insync.replicas 1: the follower alone takes writes once it leads.
	c.exec("CREATE TABLE t (id BIGINT, v VARCHAR) WITH ('bucket.num' = '1', 'bucket.replicas' = '2', 'min.insync.replicas' = '1')")
	b := c.bucket("n1")
	var follower, other string
	for _, id := range []string{"n1", "n2", "n3"} {
		switch {
		case id == b.Leader:
		case slicesContains(b.Replicas, id):
			follower = id
		default:
			other = id
		}
	}
	via := client(t, c.nodes[other].n.Addr())
	call := func(seq int) string {
		return fmt.Sprintf("INSERT INTO t SELECT range + %d, 'w' FROM range(10)", seq*10)
	}
	if n := update(t, idemCall(4, 0), via, call(0)); n != 10 {
		t.Fatalf("first call: %d rows", n)
	}
	// The leader stops (handing its leadership to the follower); the node
	// without a replica still names it for up to a second.
	leader := c.nodes[b.Leader]
	leader.stop()
	if err := <-leader.done; err != nil {
		t.Fatal(err)
	}
	delete(c.nodes, b.Leader)
	if n, err := via.ExecuteUpdate(idemCall(4, 1), call(1)); err != nil || n != 10 {
		t.Fatalf("call through %s after the leader %s stopped: %d rows, %v; want it forwarded to %s", other, b.Leader, n, err, follower)
	}
	if n := update(t, idemCall(4, 1), client(t, c.nodes[follower].n.Addr()), call(1)); n != 10 {
		t.Fatalf("retry on the new leader: %d rows", n)
	}
	checkOnce(t, "t", c.storedIDs(t, "t", []string{follower}), 20)
}
