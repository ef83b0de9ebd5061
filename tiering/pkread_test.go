package tiering

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lakestream/lakestream/internal/scan"
	"github.com/lakestream/lakestream/tables"
)

// pkRow is a row of the model: amount and kind, each maybe null.
type pkRow struct {
	amount  float64
	hasAmt  bool
	kind    string
	hasKind bool
}

func (r pkRow) String() string {
	a, k := "null", "null"
	if r.hasAmt {
		a = fmt.Sprint(r.amount)
	}
	if r.hasKind {
		k = r.kind
	}
	return a + "/" + k
}

const createKV = `CREATE TABLE kv (id BIGINT NOT NULL, amount DOUBLE, kind VARCHAR, PRIMARY KEY (id))
	WITH ('bucket.num'='2', 'merge-engine'='aggregation', 'log.segment.bytes'='1MiB',
	'log.retention'='1ms', 'log.compression'='none', 'datalake.freshness'='1h')`

// upsertKV writes rows (nil amount or kind: null, which the aggregation
// engine's last_non_null_value reads as "keep the value": a partial
// update) and applies them to model.
func upsertKV(t testing.TB, tbl *tables.Table, model map[int64]pkRow, ids []int64, amt func(int64) *float64, kind func(int64) *string) {
	t.Helper()
	b := array.NewRecordBuilder(memory.DefaultAllocator, tbl.Schema())
	defer b.Release()
	for _, id := range ids {
		b.Field(0).(*array.Int64Builder).Append(id)
		m := model[id]
		if a := amt(id); a != nil {
			b.Field(1).(*array.Float64Builder).Append(*a)
			m.amount, m.hasAmt = *a, true
		} else {
			b.Field(1).AppendNull()
		}
		if k := kind(id); k != nil {
			b.Field(2).(*array.StringBuilder).Append(*k)
			m.kind, m.hasKind = *k, true
		} else {
			b.Field(2).AppendNull()
		}
		model[id] = m
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	if _, err := tbl.Write(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
}

func deleteKV(t testing.TB, tbl *tables.Table, model map[int64]pkRow, ids []int64) {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for _, id := range ids {
		b.Field(0).(*array.Int64Builder).Append(id)
		delete(model, id)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	if _, err := tbl.Delete(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
}

// readKV reads every row of plan p (id, amount, kind), failing on a key
// read twice.
func readKV(ctx context.Context, p scan.Plan) (map[int64]pkRow, error) {
	got := map[int64]pkRow{}
	for _, part := range p.Parts() {
		rs, err := part.Open(ctx)
		if err != nil {
			return nil, err
		}
		for {
			rec, err := rs.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				rs.Close()
				return nil, err
			}
			ids := rec.Column(0).(*array.Int64)
			amts := rec.Column(1).(*array.Float64)
			kinds := rec.Column(2).(*array.String)
			for i := 0; i < ids.Len(); i++ {
				id := ids.Value(i)
				if _, dup := got[id]; dup {
					rec.Release()
					rs.Close()
					return nil, fmt.Errorf("key %d read twice", id)
				}
				r := pkRow{hasAmt: amts.IsValid(i), hasKind: kinds.IsValid(i)}
				if r.hasAmt {
					r.amount = amts.Value(i)
				}
				if r.hasKind {
					r.kind = kinds.Value(i)
				}
				got[id] = r
			}
			rec.Release()
		}
		rs.Close()
	}
	return got, nil
}

func diffKV(got, want map[int64]pkRow) error {
	var bad []string
	for id, w := range want {
		if g, ok := got[id]; !ok {
			bad = append(bad, fmt.Sprintf("key %d missing (want %v)", id, w))
		} else if g != w {
			bad = append(bad, fmt.Sprintf("key %d: %v, want %v", id, g, w))
		}
	}
	for id, g := range got {
		if _, ok := want[id]; !ok {
			bad = append(bad, fmt.Sprintf("key %d read (%v), not in the model", id, g))
		}
	}
	if len(bad) == 0 {
		return nil
	}
	sort.Strings(bad)
	if len(bad) > 5 {
		bad = append(bad[:5], fmt.Sprintf("... %d differences", len(bad)))
	}
	return fmt.Errorf("%d rows read, model %d: %v", len(got), len(want), bad)
}

// checkKV compares the union read (all columns, and count(*)), a plain
// scan (View.Read) and lookups of every model key and some absent ones
// with the model.
func checkKV(t testing.TB, e *lakeEnv, model map[int64]pkRow, step string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tbl := e.table("kv")
	st, err := e.store.Table(ctx, "", "kv")
	if err != nil {
		t.Fatal(err)
	}
	p, err := st.Plan(ctx, scan.Request{})
	if err != nil {
		t.Fatalf("%s: plan: %v", step, err)
	}
	got, err := readKV(ctx, p)
	if err == nil {
		err = diffKV(got, model)
	}
	if err != nil {
		t.Fatalf("%s: union read: %v", step, err)
	}
	if n := countPlan(t, ctx, st); n != int64(len(model)) {
		t.Fatalf("%s: count(*) %d, want %d", step, n, len(model))
	}
	v, err := tbl.Capture(ctx, tables.LayerTable)
	if err != nil {
		t.Fatal(err)
	}
	plain := map[int64]pkRow{}
	var rerr error
	err = v.Read(ctx, nil, func(rec arrow.RecordBatch) error {
		rec.Retain()
		one, err := readKV(ctx, scan.NewPlan(rec.Schema(), []scan.Part{recPart{rec}}))
		for id, r := range one {
			if _, dup := plain[id]; dup {
				rerr = fmt.Errorf("key %d read twice", id)
			}
			plain[id] = r
		}
		return err
	})
	if err == nil {
		err = rerr
	}
	if err == nil {
		err = diffKV(plain, model)
	}
	if err != nil {
		t.Fatalf("%s: plain scan: %v", step, err)
	}
	lookupKV(t, tbl, model, step)
}

func countPlan(t testing.TB, ctx context.Context, st scan.Table) int64 {
	t.Helper()
	p, err := st.Plan(ctx, scan.Request{Columns: []int{}})
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, part := range p.Parts() {
		rs, err := part.Open(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for {
			rec, err := rs.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			n += rec.NumRows()
			rec.Release()
		}
		rs.Close()
	}
	return n
}

func lookupKV(t testing.TB, tbl *tables.Table, model map[int64]pkRow, step string) {
	t.Helper()
	ids := make([]int64, 0, len(model)+10)
	for id := range model {
		ids = append(ids, id)
	}
	for i := int64(0); i < 10; i++ {
		ids = append(ids, -1-i) // never written
	}
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).AppendValues(ids, nil)
	keys := b.NewRecordBatch()
	defer keys.Release()
	rec, err := tbl.Lookup(context.Background(), keys, nil)
	if err != nil {
		t.Fatalf("%s: lookup: %v", step, err)
	}
	got, err := readKV(context.Background(), scan.NewPlan(rec.Schema(), []scan.Part{recPart{rec}}))
	if err == nil {
		err = diffKV(got, model)
	}
	if err != nil {
		t.Fatalf("%s: lookups: %v", step, err)
	}
}

// recPart is a part of one record (which it hands over).
type recPart struct{ rec arrow.RecordBatch }

func (p recPart) Open(context.Context) (scan.RecordStream, error) {
	return &recStream{rec: p.rec}, nil
}

type recStream struct{ rec arrow.RecordBatch }

func (s *recStream) Next() (arrow.RecordBatch, error) {
	if s.rec == nil {
		return nil, io.EOF
	}
	rec := s.rec
	s.rec = nil
	return rec, nil
}
func (s *recStream) Close() error { return nil }

func ptr[T any](v T) *T { return &v }

// Random upserts, partial updates and deletes of a primary-key table,
// with tiering rounds and log retention at random points: after every step
// the union read, count(*), a plain scan and lookups equal the model. At
// the end the key index is deleted (kv/) with the log head gone, and the
// table reopened: the index is rebuilt from the lake and the log above it.
func TestPKUnionReadModel(t *testing.T) {
	e := newLakeEnv(t, Config{})
	e.exec(createKV)
	tbl := e.table("kv")
	rng := rand.New(rand.NewPCG(16, 1))
	model := map[int64]pkRow{}
	const keys = 20_000
	all := make([]int64, keys)
	for i := range all {
		all[i] = int64(i)
	}
	// Enough rows to roll segments, so that retention deletes some.
	upsertKV(t, tbl, model, all, func(id int64) *float64 { return ptr(float64(id)) }, func(int64) *string { return ptr("a") })
	checkKV(t, e, model, "seeded")
	randKeys := func(n int) []int64 {
		seen := map[int64]bool{}
		var out []int64
		for len(out) < n {
			id := rng.Int64N(keys + 2000)
			if !seen[id] {
				seen[id] = true
				out = append(out, id)
			}
		}
		return out
	}
	rounds, retained := 0, 0
	for step := 0; step < 40; step++ {
		var what string
		switch op := rng.IntN(10); {
		case op < 4:
			v := float64(step * 1000)
			upsertKV(t, tbl, model, randKeys(1+rng.IntN(8000)), func(id int64) *float64 { return ptr(v + float64(id)) }, func(int64) *string { return ptr(fmt.Sprint("s", step)) })
			what = "upsert"
		case op < 5:
			// Partial updates: one column, the other kept.
			upsertKV(t, tbl, model, randKeys(1+rng.IntN(2000)), func(int64) *float64 { return nil }, func(int64) *string { return ptr(fmt.Sprint("p", step)) })
			what = "partial update"
		case op < 7:
			deleteKV(t, tbl, model, randKeys(1+rng.IntN(3000)))
			what = "delete"
		case op < 9:
			e.round("kv")
			rounds++
			what = "round"
		default:
			n, err := e.store.ApplyRetention()
			if err != nil {
				t.Fatal(err)
			}
			retained += n
			what = "retention"
		}
		checkKV(t, e, model, fmt.Sprintf("step %d (%s)", step, what))
	}
	// Tier everything, delete the log head and the key index, reopen.
	upsertKV(t, tbl, model, randKeys(5000), func(id int64) *float64 { return ptr(float64(-id)) }, func(int64) *string { return nil })
	e.round("kv")
	for b := 0; b < tbl.Log().Buckets(); b++ {
		if start := tbl.Log().Bucket(b).Stats().Start; start == 0 {
			if _, err := e.store.ApplyRetention(); err != nil {
				t.Fatal(err)
			}
		}
	}
	deleted := 0
	for b := 0; b < tbl.Log().Buckets(); b++ {
		if tbl.Log().Bucket(b).Stats().Start > 0 {
			deleted++
		}
	}
	if deleted == 0 {
		t.Fatalf("retention deleted no log head (after %d rounds, %d segments deleted)", rounds, retained)
	}
	checkKV(t, e, model, "tiered, log head deleted")
	e.reopenStore(tables.Config{}, func(dir string) {
		if err := os.RemoveAll(filepath.Join(dir, tables.KeyIndexDir)); err != nil {
			t.Fatal(err)
		}
	})
	checkKV(t, e, model, "reopened without its key index")
	upsertKV(t, e.table("kv"), model, randKeys(100), func(id int64) *float64 { return ptr(1.0) }, func(int64) *string { return ptr("z") })
	deleteKV(t, e.table("kv"), model, randKeys(100))
	checkKV(t, e, model, "written after the rebuild")
	if err := diffKV(followKV(t, e.table("kv")), model); err != nil {
		t.Fatalf("the changelog from offset 0 (lake history, then log) folded: %v", err)
	}
}

// followKV folds each bucket's changelog from offset 0 (the lake's
// history, then the log: changes()) up to its end into the rows it leaves.
func followKV(t *testing.T, tbl *tables.Table) map[int64]pkRow {
	t.Helper()
	out := map[int64]pkRow{}
	ends := tbl.Log().CommittedEnds()
	n := len(tbl.Def().Columns)
	cols := []int{0, 1, 2, n, n + 2} // id, amount, kind, _change_type, _offset
	for b, end := range ends {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		ch := make(chan arrow.RecordBatch, 4)
		done := make(chan error, 1)
		go func() { done <- tbl.Follow(ctx, b, 0, cols, ch) }()
		next := int64(0)
		for next < end {
			var rec arrow.RecordBatch
			select {
			case rec = <-ch:
			case err := <-done:
				cancel()
				t.Fatalf("follow bucket %d stopped at %d of %d: %v", b, next, end, err)
			}
			ids, amts, kinds := rec.Column(0).(*array.Int64), rec.Column(1).(*array.Float64), rec.Column(2).(*array.String)
			cts, offs := rec.Column(3).(*array.String), rec.Column(4).(*array.Int64)
			for i := 0; i < ids.Len(); i++ {
				if offs.Value(i) != next {
					cancel()
					t.Fatalf("bucket %d: offset %d after %d", b, offs.Value(i), next-1)
				}
				next++
				switch cts.Value(i) {
				case "+I", "+U":
					r := pkRow{hasAmt: amts.IsValid(i), hasKind: kinds.IsValid(i)}
					if r.hasAmt {
						r.amount = amts.Value(i)
					}
					if r.hasKind {
						r.kind = kinds.Value(i)
					}
					out[ids.Value(i)] = r
				case "-D":
					delete(out, ids.Value(i))
				}
			}
			rec.Release()
		}
		cancel()
		<-done
	}
	return out
}

// reopenStore closes the store and opens it again (with cfg, in the
// env's directory) with a new service, as a restart does; edit changes
// each table's directory in between.
func (e *lakeEnv) reopenStore(cfg tables.Config, edit func(tableDir string)) {
	e.t.Helper()
	ctx := context.Background()
	dirs := map[string]bool{}
	for _, t := range e.store.Tables() {
		dirs[filepath.Join(e.dir, "tables", strconv.FormatInt(t.Def().ID, 10))] = true
	}
	e.store.SetLake(nil)
	if err := e.store.Close(); err != nil {
		e.t.Fatal(err)
	}
	for d := range dirs {
		edit(d)
	}
	var err error
	cfg.Dir = filepath.Join(e.dir, "tables")
	if e.store, err = tables.Open(ctx, e.cat, cfg); err != nil {
		e.t.Fatal(err)
	}
	e.startService()
}

// Reads during rounds and retention see one state: every write sets every
// key to one version (or deletes the upper half), so each read must see
// one version, on every key or on the lower half.
func TestPKUnionReadDuringRounds(t *testing.T) {
	e := newLakeEnv(t, Config{})
	e.exec(createKV)
	tbl := e.table("kv")
	const keys = 4000
	all := make([]int64, keys)
	for i := range all {
		all[i] = int64(i)
	}
	model := map[int64]pkRow{}
	upsertKV(t, tbl, model, all, func(int64) *float64 { return ptr(0.0) }, func(int64) *string { return ptr("v") })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	stop := make(chan struct{})
	wg.Add(1)
	go func() { // rounds and retention
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := e.svc.Round(ctx, tbl.Def().ID); err != nil {
				errs <- err
				return
			}
			if _, err := e.store.ApplyRetention(); err != nil {
				errs <- err
				return
			}
		}
	}()
	for r := 0; r < 2; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				st, err := e.store.Table(ctx, "", "kv")
				if err != nil {
					errs <- err
					return
				}
				p, err := st.Plan(ctx, scan.Request{})
				if errors.Is(err, tables.ErrCaptureRace) {
					continue
				}
				if err != nil {
					errs <- err
					return
				}
				got, err := readKV(ctx, p)
				if err == nil {
					err = oneVersion(got, keys)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	upper := all[keys/2:]
	for v := 1; v <= 30; v++ {
		if v%5 == 0 {
			deleteKV(t, tbl, model, upper)
			continue
		}
		upsertKV(t, tbl, model, all, func(int64) *float64 { return ptr(float64(v)) }, func(int64) *string { return nil })
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	e.round("kv")
	checkKV(t, e, model, "after the rounds")
}

// oneVersion checks that a read of the table TestPKUnionReadDuringRounds
// writes sees one write: every key, or the lower half, with one amount.
func oneVersion(got map[int64]pkRow, keys int) error {
	if len(got) != keys && len(got) != keys/2 {
		return fmt.Errorf("read %d keys, want %d or %d", len(got), keys, keys/2)
	}
	amount := got[0].amount
	for id, r := range got {
		if id >= int64(len(got)) {
			return fmt.Errorf("key %d read with %d keys", id, len(got))
		}
		if r.amount != amount {
			return fmt.Errorf("key %d has amount %v, key 0 %v: two writes in one read", id, r.amount, amount)
		}
	}
	return nil
}

// A lake file too large for the read cache is streamed row group by row
// group, and those with no live row are not read: a primary-key table
// whose first keys were all updated after the round reads right with the
// cache off.
func TestPKUnionReadSkipsDeadRowGroups(t *testing.T) {
	e := newLakeEnv(t, Config{})
	e.exec(`CREATE TABLE kv (id BIGINT NOT NULL, amount DOUBLE, kind VARCHAR, PRIMARY KEY (id)) WITH ('datalake.freshness'='1h')`)
	model := map[int64]pkRow{}
	ids := make([]int64, 3*lakeRowGroupRows)
	for i := range ids {
		ids[i] = int64(i)
	}
	upsertKV(t, e.table("kv"), model, ids, func(id int64) *float64 { return ptr(float64(id)) }, func(int64) *string { return nil })
	e.round("kv")
	upsertKV(t, e.table("kv"), model, ids[:lakeRowGroupRows+10], func(id int64) *float64 { return ptr(-1.0) }, func(int64) *string { return ptr("new") })
	e.reopenStore(tables.Config{CacheBytes: -1}, func(string) {})
	checkKV(t, e, model, "cache off")
	e.round("kv")
	checkKV(t, e, model, "cache off, after a second round")
}
