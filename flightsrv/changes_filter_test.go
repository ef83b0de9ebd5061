package flightsrv_test

import (
	"context"
	"math"
	"slices"
	"sort"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"
)

// TestChangesWhere: a filter on columns that are not selected keeps
// exactly the matching rows, with the offsets the unfiltered stream gives
// them, so a filtered consumer resumes like any other.
func TestChangesWhere(t *testing.T) {
	ts := startServer(t, serverConfig{})
	ts.mustExec("CREATE TABLE ev " + eventsCols + " WITH ('bucket.num'='3', 'bucket.key'='id')")
	ts.mustIngest("ev", "append", events(t, 0, 200))
	all := subscribe(t, ts, "SELECT id, _bucket, _offset FROM changes('ev', 'earliest')")
	buys := subscribe(t, ts, "SELECT id, _bucket, _offset FROM changes('ev', 'earliest') WHERE kind = 'buy' AND amount > 10")
	flipped := subscribe(t, ts, "SELECT id, _bucket, _offset FROM changes('ev', 'earliest') WHERE 'buy' = KIND AND 10 < amount;")
	defer unsubscribe(all, buys, flipped)
	var want []int64
	for id := int64(0); id < 200; id++ {
		if id%4 == 2 && id%11 != 5 && float64(id)/8 > 10 {
			want = append(want, id)
		}
	}
	where := map[int64][3]int64{}
	for _, r := range all.take(t, 200) {
		where[r[0]] = r
	}
	for _, s := range []*subscriber{buys, flipped} {
		got := s.take(t, len(want))
		if !slices.Equal(ids(got), want) {
			t.Fatalf("ids %v, want %v", ids(got), want)
		}
		for _, r := range got {
			if r != where[r[0]] {
				t.Fatalf("row %v, the unfiltered stream has %v", r, where[r[0]])
			}
		}
	}
	// Nothing else came: the next row is the next match, 202.
	ts.mustIngest("ev", "append", events(t, 200, 4))
	for _, s := range []*subscriber{buys, flipped} {
		if r := s.take(t, 1)[0]; r[0] != 202 {
			t.Fatalf("next row %v, want id 202", r)
		}
	}
}

func TestChangesWhereBucketOffset(t *testing.T) {
	ts := startServer(t, serverConfig{})
	ts.mustExec("CREATE TABLE ev " + eventsCols + " WITH ('bucket.num'='3', 'bucket.key'='id')")
	ts.mustIngest("ev", "append", events(t, 0, 300))
	all := subscribe(t, ts, "SELECT id, _bucket, _offset FROM changes('ev', 'earliest')")
	some := subscribe(t, ts, "SELECT id, _bucket, _offset FROM changes('ev', 'earliest') WHERE _bucket = 1 AND _offset >= 10 AND _OFFSET < 20.5")
	defer unsubscribe(all, some)
	var want [][3]int64
	for _, r := range all.take(t, 300) {
		if r[1] == 1 && r[2] >= 10 && r[2] <= 20 {
			want = append(want, r)
		}
	}
	got := some.take(t, len(want))
	less := func(a, b [3]int64) int { return int(a[2] - b[2]) }
	slices.SortFunc(got, less)
	slices.SortFunc(want, less)
	if len(want) != 11 || !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

// unsubscribe ends every subscription at once, so that each one's
// cleanup does not wait for the allocator while the others still stream.
func unsubscribe(subs ...*subscriber) {
	for _, s := range subs {
		s.cancel()
	}
}

// firstRecord runs sql and returns the ids of the first non-empty record
// of its stream, checking that the stream has only the selected columns.
func firstRecord(t *testing.T, ts *testServer, sql string, cols int) []int64 {
	t.Helper()
	info := ts.mustExec(sql)
	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()
	rdr, err := ts.cl.DoGet(ctx, info.Endpoint[0].Ticket)
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Release()
	for rdr.Next() {
		rec := rdr.RecordBatch()
		if rec.NumCols() != int64(cols) {
			t.Fatalf("%s: %d columns, want %d", sql, rec.NumCols(), cols)
		}
		if rec.NumRows() == 0 {
			continue
		}
		if err := array.ValidateRecordFull(rec); err != nil {
			t.Fatalf("%s: invalid record: %v", sql, err)
		}
		out := slices.Clone(rec.Column(0).(*array.Int64).Int64Values())
		sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
		return out
	}
	t.Fatalf("%s: stream ended: %v", sql, rdr.Err())
	return nil
}

// TestChangesWhereNullAndNaN: NULL never compares, NaN is above every
// number and equal to itself, strings compare bytewise, an integer column
// compares numerically with a fraction. A record with no matching row is
// not sent: the first record each query sees is the second ingest's.
func TestChangesWhereNullAndNaN(t *testing.T) {
	ts := startServer(t, serverConfig{})
	ts.mustExec("CREATE TABLE n (id BIGINT NOT NULL, x DOUBLE, s VARCHAR)")
	nan := math.NaN()
	ts.mustIngest("n", "append", record(t, memory.DefaultAllocator,
		i64("id", false, 100), f64("x", -1.0), str("s", "zz")))
	ts.mustIngest("n", "append", record(t, memory.DefaultAllocator,
		i64("id", false, 0, 1, 2, 3, 4, 5),
		f64("x", 1.0, nan, nil, 3.0, math.Inf(-1), 0.0),
		str("s", "a", nil, "B", "b", "", "é")))
	for _, tc := range []struct {
		where string
		want  []int64
	}{
		{"x > 0", []int64{0, 1, 3}},
		{"x > 2 AND id < 50", []int64{1, 3}},
		{"x = 'NaN' AND id < 50", []int64{1}},
		{"x IS NULL", []int64{2}},
		{"x <> 1 AND x >= -0.5", []int64{1, 3, 5}},
		{"s < 'a'", []int64{2, 4}},
		{"s > 'b' AND s <> 'zz'", []int64{5}},
		{"s IS NULL", []int64{1}},
		{"s IS NOT NULL AND id > 1.5 AND id < 50", []int64{2, 3, 4, 5}},
		{"id <= 2.9", []int64{0, 1, 2}},
	} {
		got := firstRecord(t, ts, "SELECT id, _offset FROM changes('n', 'earliest') WHERE "+tc.where, 2)
		if !slices.Equal(got, tc.want) {
			t.Errorf("WHERE %s: ids %v, want %v", tc.where, got, tc.want)
		}
	}
	// SELECT * with a filter sends every column once.
	if got := firstRecord(t, ts, "SELECT * FROM changes('n', 'earliest') WHERE s = 'é'", 7); !slices.Equal(got, []int64{5}) {
		t.Errorf("SELECT *: ids %v", got)
	}
}

func TestChangesWhereRefusals(t *testing.T) {
	ts := startServer(t, serverConfig{})
	ts.mustExec("CREATE TABLE ev " + eventsCols)
	for sql, words := range map[string][]string{
		"WHERE id = 'abc'":            {"id = 'abc'", `cannot convert string literal "abc"`},
		"WHERE kind = 5":              {"kind = 5", "compare it with a 'string'"},
		"WHERE ts > TIMESTAMP 'soon'": {"ts > TIMESTAMP 'soon'", "timestamp"},
		"WHERE nope = 1":              {`column "nope" not found`},
		"WHERE id = 1 OR id = 2":      {"OR is not supported", "supports WHERE conditions"},
		"WHERE id % 2 = 0":            {"expected a comparison after id"},
		"WHERE id IN (1, 2)":          {"supports WHERE conditions"},
		"WHERE lower(kind) = 'x'":     {"functions"},
		"WHERE id = 1 ORDER BY id":    {"expected AND"},
	} {
		_, err := ts.exec("SELECT id, _offset FROM changes('ev', 'latest') " + sql)
		expectCode(t, err, codes.InvalidArgument, words...)
	}
	// Prepared statements describe the same plan and are refused alike.
	_, err := ts.cl.Prepare(testCtx(t), "SELECT id FROM changes('ev', 'latest') WHERE id = 'abc'")
	expectCode(t, err, codes.InvalidArgument, "id = 'abc'")
}
