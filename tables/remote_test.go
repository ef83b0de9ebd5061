package tables_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lakestream/lakestream/columnarlog"
	"github.com/lakestream/lakestream/tables"
)

// pairRemote is the tables.Remote of a node that holds none of a table's
// buckets and reads them all from one other store, calling its
// ServeRemote directly; it counts the calls and the frames by kind.
type pairRemote struct {
	src     func() *tables.Store
	buckets int

	mu     sync.Mutex
	calls  int
	frames map[byte]int
}

func (r *pairRemote) RemoteBuckets(context.Context, int64) ([]tables.RemoteBucket, error) {
	var out []tables.RemoteBucket
	for b := range r.buckets {
		out = append(out, tables.RemoteBucket{Bucket: b, Nodes: []string{"src"}})
	}
	return out, nil
}

func (r *pairRemote) ServesAll(int64, int) bool { return false }

func (r *pairRemote) ReadRemote(ctx context.Context, rb tables.RemoteBucket, req []byte, frame func([]byte) error) error {
	r.mu.Lock()
	r.calls++
	r.mu.Unlock()
	return r.src().ServeRemote(ctx, req, func(f []byte) error {
		r.mu.Lock()
		r.frames[f[0]]++
		r.mu.Unlock()
		return frame(append([]byte(nil), f...)) // a frame is the receiver's once sent
	})
}

func (r *pairRemote) counts() (int, map[byte]int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[byte]int{}
	for k, v := range r.frames {
		out[k] = v
	}
	calls := r.calls
	r.calls, r.frames = 0, map[byte]int{}
	return calls, out
}

// A node that holds none of a table's buckets reads them from another's
// store: every row once, projected; stored batches the first time, then,
// for the batches it holds decoded, only their headers; and a batch its
// cache did not keep is read again whole.
func TestRemoteReads(t *testing.T) {
	const create = "CREATE TABLE ev (id BIGINT NOT NULL, amount DOUBLE, kind VARCHAR, ts TIMESTAMP) WITH ('bucket.num' = '2')"
	src := newEnv(t, nil)
	src.mustExec(create)
	tbl := src.table("ev")
	var want []string
	for i := range 6 {
		rec := events(t, src.mem, i*300, 300)
		want = append(want, rowStrings(rec)...)
		src.write(tbl, rec)
	}
	for _, tt := range []struct {
		name       string
		cacheBytes int64
		again      bool // whether the projected read reads batches again
	}{
		{"cache", 0, false},
		{"cache that keeps nothing", 1024, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rem := &pairRemote{src: func() *tables.Store { return src.store }, buckets: 2, frames: map[byte]int{}}
			dst := newEnvOpts(t, nil, columnarlog.Options{}, func(e *env) { e.remote, e.cacheBytes = rem, tt.cacheBytes })
			dst.mustExec(create)
			st, err := dst.store.Table(context.Background(), "", "ev")
			if err != nil {
				t.Fatal(err)
			}
			_, got := scanPlan(t, st, nil)
			sameRows(t, "all columns", sorted(got), sorted(want))
			calls, frames := rem.counts()
			if calls != 2 || frames['B'] == 0 || frames['C'] != 0 {
				t.Errorf("first read: %d calls, frames %v; want 2 calls of stored batches", calls, frames)
			}
			// The first read decoded every column of every batch: a
			// projected read asks for the headers only.
			_, got = scanPlan(t, st, []int{2, 0})
			sameRows(t, "projected", sorted(got), sorted(projectRows(want, 2, 0)))
			calls, frames = rem.counts()
			if frames['C'] == 0 {
				t.Errorf("projected read: frames %v, want the cached batches' headers", frames)
			}
			if again := calls > 2; again != tt.again {
				t.Errorf("projected read: %d calls (frames %v), want batches read again: %v", calls, frames, tt.again)
			}
		})
	}
}

// The serving node refuses, as ErrBadRemoteQuery, a query it cannot
// answer: garbage, a bucket or column the table does not have.
func TestServeRemoteRefusesBadQueries(t *testing.T) {
	src := newEnv(t, nil)
	src.mustExec("CREATE TABLE ev (id BIGINT NOT NULL, amount DOUBLE, kind VARCHAR, ts TIMESTAMP) WITH ('bucket.num' = '2')")
	var got []byte
	dst := newEnvOpts(t, nil, columnarlog.Options{}, func(e *env) { e.remote = &reqRecorder{&got} })
	dst.mustExec("CREATE TABLE ev (id BIGINT NOT NULL, amount DOUBLE, kind VARCHAR, ts TIMESTAMP) WITH ('bucket.num' = '2')")
	st, err := dst.store.Table(context.Background(), "", "ev")
	if err != nil {
		t.Fatal(err)
	}
	scanPlan(t, st, []int{3})
	if len(got) == 0 {
		t.Fatal("no request recorded")
	}
	send := func([]byte) error { return nil }
	if err := src.store.ServeRemote(context.Background(), got, send); err != nil {
		t.Fatalf("the recorded request: %v", err)
	}
	for i := range got {
		if err := src.store.ServeRemote(context.Background(), got[:i], send); !errors.Is(err, tables.ErrBadRemoteQuery) {
			t.Fatalf("the request cut to %d bytes: %v, want ErrBadRemoteQuery", i, err)
		}
	}
}

// reqRecorder is a Remote of one remote bucket that keeps the last
// request sent and answers it with nothing.
type reqRecorder struct{ req *[]byte }

func (r *reqRecorder) RemoteBuckets(context.Context, int64) ([]tables.RemoteBucket, error) {
	return []tables.RemoteBucket{{Bucket: 1, Nodes: []string{"src"}}}, nil
}
func (r *reqRecorder) ServesAll(int64, int) bool { return false }
func (r *reqRecorder) ReadRemote(_ context.Context, _ tables.RemoteBucket, req []byte, _ func([]byte) error) error {
	*r.req = req
	return nil
}

// ReadRemoteBucket reads one bucket's offsets from the node that holds
// it, for code other than the engine; a store outside a cluster refuses.
func TestReadRemoteBucket(t *testing.T) {
	const create = "CREATE TABLE ev (id BIGINT NOT NULL, amount DOUBLE, kind VARCHAR, ts TIMESTAMP) WITH ('bucket.num' = '2')"
	src := newEnv(t, nil)
	src.mustExec(create)
	for i := range 4 {
		src.write(src.table("ev"), events(t, src.mem, i*100, 100))
	}
	var want []string
	for _, rows := range readBuckets(t, src.table("ev"), []int{0}) {
		want = append(want, rows...)
	}
	rem := &pairRemote{src: func() *tables.Store { return src.store }, buckets: 2, frames: map[byte]int{}}
	dst := newEnvOpts(t, nil, columnarlog.Options{}, func(e *env) { e.remote = rem })
	dst.mustExec(create)
	var got []string
	for b := range 2 {
		err := dst.table("ev").ReadRemoteBucket(context.Background(), tables.LayerChangelog, b, 0, 0, []int{0}, func(rec arrow.RecordBatch) error {
			got = append(got, rowStrings(rec)...)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	sameRows(t, "both buckets", sorted(got), sorted(want))
	err := src.table("ev").ReadRemoteBucket(context.Background(), tables.LayerTable, 0, 0, 0, nil, func(arrow.RecordBatch) error { return nil })
	if !errors.Is(err, tables.ErrReplicaUnavailable) {
		t.Fatalf("outside a cluster: %v, want ErrReplicaUnavailable", err)
	}
}
