package node

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/metadata"

	"github.com/lakestream/lakestream/cluster/meta"
)

// pkModel is the state of a last_row table (id, v) that the acknowledged
// writes make, and the number of change records they wrote.
type pkModel struct {
	rows    map[int64]string
	changes int64
}

func (m *pkModel) upsert(id int64, v string) {
	old, ok := m.rows[id]
	switch {
	case !ok:
		m.changes++ // +I
	case old != v:
		m.changes += 2 // -U, +U
	default:
		return
	}
	m.rows[id] = v
}

func (m *pkModel) delete(id int64) {
	if _, ok := m.rows[id]; ok {
		m.changes++ // -D
		delete(m.rows, id)
	}
}

func (m *pkModel) want() []string {
	var out []string
	for id, v := range m.rows {
		out = append(out, fmt.Sprintf("%d|%s", id, v))
	}
	slices.SortFunc(out, func(a, b string) int {
		x, _ := strconv.ParseInt(strings.Split(a, "|")[0], 10, 64)
		y, _ := strconv.ParseInt(strings.Split(b, "|")[0], 10, 64)
		return int(x - y)
	})
	return out
}

// A primary-key table on a cluster: upserts, UPDATEs and DELETEs on the
// bucket's leader are replicated, every node serves the table's state,
// lookups and changelog up to its high watermark, the leader leaves and
// the new leader goes on from the same state, and an idempotent writer's
// call is stored once across the change (docs/cluster.md, "Primary-key
// tables").
func TestClusterReplicatesPKTable(t *testing.T) {
	c := newTestCluster(t, "n1", "n2", "n3")
	c.exec("CREATE TABLE kv (id BIGINT, v VARCHAR, PRIMARY KEY (id)) WITH ('bucket.num' = '1')")
	b := c.bucket("n1")
	leader := c.nodes[b.Leader]
	m := &pkModel{rows: map[int64]string{}}
	lcl := client(t, leader.n.Addr())
	for i := range 5 {
		mustExec(t, lcl, fmt.Sprintf("INSERT INTO kv SELECT range, 'w%d-' || range FROM range(%d, %d)", i, i*10, i*10+30))
		for id := int64(i * 10); id < int64(i*10+30); id++ {
			m.upsert(id, fmt.Sprintf("w%d-%d", i, id))
		}
	}
	mustExec(t, lcl, "UPDATE kv SET v = 'u' WHERE id % 5 = 0", "DELETE FROM kv WHERE id % 7 = 3")
	for id := range m.rows {
		if id%5 == 0 {
			m.upsert(id, "u")
		}
	}
	for id := range int64(100) {
		if id%7 == 3 {
			m.delete(id)
		}
	}
	idem := func(seq int) context.Context {
		return metadata.AppendToOutgoingContext(context.Background(), "lakestream-writer-id", "91", "lakestream-writer-seq", strconv.Itoa(seq))
	}
	if _, err := lcl.ExecuteUpdate(idem(0), "INSERT INTO kv VALUES (1, 'idem0'), (200, 'idem0')"); err != nil {
		t.Fatal(err)
	}
	m.upsert(1, "idem0")
	m.upsert(200, "idem0")
	// Key 1 changes after the call: a retry of the call applied again
	// would show.
	mustExec(t, lcl, "UPDATE kv SET v = 'after-idem0' WHERE id = 1")
	m.upsert(1, "after-idem0")
	c.samePKState(b.Replicas, m)

	// The leader leaves; the new leader takes writes from the state the
	// acknowledged writes made.
	leader.stop()
	if err := <-leader.done; err != nil {
		t.Fatal(err)
	}
	delete(c.nodes, b.Leader)
	var next meta.Bucket
	waitUntil(t, func() bool {
		for id := range c.nodes {
			next = c.bucket(id)
			break
		}
		return next.Leader != "" && next.Leader != b.Leader
	})
	ncl := client(t, c.nodes[next.Leader].n.Addr())
	// The writer's retry of its acknowledged call, sent until the new
	// leader takes writes, stores nothing; its next call stores its rows.
	waitUntil(t, func() bool {
		_, err := ncl.ExecuteUpdate(idem(0), "INSERT INTO kv VALUES (1, 'idem0'), (200, 'idem0')")
		return err == nil
	})
	if _, err := ncl.ExecuteUpdate(idem(1), "INSERT INTO kv VALUES (2, 'idem1'), (201, 'idem1')"); err != nil {
		t.Fatal(err)
	}
	m.upsert(2, "idem1")
	m.upsert(201, "idem1")
	if _, err := ncl.ExecuteUpdate(idem(0), "INSERT INTO kv VALUES (1, 'idem0'), (200, 'idem0')"); err == nil {
		t.Fatal("a call older than the writer's last was accepted")
	}
	mustExec(t, ncl, "INSERT INTO kv SELECT range, 'after' FROM range(20, 60)", "DELETE FROM kv WHERE id < 10", "UPDATE kv SET v = 'u2' WHERE id = 200")
	for id := int64(20); id < 60; id++ {
		m.upsert(id, "after")
	}
	for id := range int64(10) {
		m.delete(id)
	}
	m.upsert(200, "u2")
	var left []string
	for id := range c.nodes {
		left = append(left, id)
	}
	c.samePKState(left, m)
}

// samePKState waits until every node of ids serves the model's state, by
// scan and by lookup, and a changelog of as many records.
func (c *testCluster) samePKState(ids []string, m *pkModel) {
	c.t.Helper()
	t := c.t.(*testing.T)
	want := m.want()
	for _, id := range ids {
		cl := client(t, c.nodes[id].n.Addr())
		var got []string
		waitUntil(t, func() bool {
			got = queryRows(t, cl, "SELECT id, v FROM kv ORDER BY id")
			return slices.Equal(got, want)
		})
		if n := queryInt64(t, cl, `SELECT count(*) FROM "kv$changelog"`); n != m.changes {
			t.Errorf("%s: %d change records, want %d", id, n, m.changes)
		}
		for _, key := range []int64{1, 5, 200} {
			v, ok := m.rows[key]
			rows := queryRows(t, cl, fmt.Sprintf("SELECT v FROM kv WHERE id = %d", key))
			if ok && (len(rows) != 1 || rows[0] != v) || !ok && len(rows) != 0 {
				t.Errorf("%s: lookup of %d: %q, want %q (present %v)", id, key, rows, v, ok)
			}
		}
	}
}

// BenchmarkReplicatedPKIngest is BenchmarkReplicatedIngest for a
// primary-key table: each call upserts 10,000 rows over a key space of
// 20,000 that moves by 5,000 a call, so about half of a call's rows
// update a key (docs/benchmarks.md).
func BenchmarkReplicatedPKIngest(b *testing.B) {
	const rows, calls = 10_000, 20
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "v", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	recs := make([]arrow.RecordBatch, 4)
	for k := range recs {
		bld := array.NewRecordBuilder(memory.DefaultAllocator, schema)
		for i := range rows {
			bld.Field(0).(*array.Int64Builder).Append(int64(k*rows/2 + i))
			bld.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("value %d/%d", k, i))
		}
		recs[k] = bld.NewRecordBatch()
		bld.Release()
		defer recs[k].Release()
	}
	const create = "CREATE TABLE t (id BIGINT, v VARCHAR, PRIMARY KEY (id)) WITH ('bucket.num' = '1', 'bucket.replicas' = '3', 'min.insync.replicas' = '2')"
	single, leader, _ := singleAndCluster(b, create)
	ingest := func(cl *flightsql.Client) time.Duration {
		began := time.Now()
		for i := range calls {
			rdr, _ := array.NewRecordReader(schema, []arrow.RecordBatch{recs[i%len(recs)]})
			_, err := cl.ExecuteIngest(context.Background(), rdr, &flightsql.ExecuteIngestOpts{Table: "t", TableDefinitionOptions: &flightsql.TableDefinitionOptions{
				IfNotExist: flightsql.TableDefinitionOptionsTableNotExistOptionFail, IfExists: flightsql.TableDefinitionOptionsTableExistsOptionAppend}})
			rdr.Release()
			if err != nil {
				b.Fatal(err)
			}
		}
		return time.Since(began)
	}
	singleCl, leaderCl := client(b, single.Addr()), client(b, leader.Addr())
	var one, three time.Duration
	b.ResetTimer()
	for range b.N {
		one += ingest(singleCl)
		three += ingest(leaderCl)
	}
	b.StopTimer()
	total := float64(b.N * calls * rows)
	b.ReportMetric(total/one.Seconds(), "single-rows/s")
	b.ReportMetric(total/three.Seconds(), "replicated-rows/s")
	b.ReportMetric(one.Seconds()/three.Seconds(), "replicated/single")
}
