package tables_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	pebblevfs "github.com/cockroachdb/pebble/v2/vfs"

	"github.com/lakestream/lakestream/catalog"
	"github.com/lakestream/lakestream/columnarlog"
	"github.com/lakestream/lakestream/internal/vfs"
	"github.com/lakestream/lakestream/tables"
)

// The model of a primary-key table m (id BIGINT key, a VARCHAR, n BIGINT,
// v BIGINT): each key's row, nil pointers for NULLs.
type mRow struct{ a, n, v *int64 } // a holds the number its string is

type pkModel struct {
	engine string
	rows   map[int64]mRow
	log    map[int64][]string // each key's change records, in order
}

// mWrite is one input row: present says which of a, n, v it carries.
type mWrite struct {
	id      int64
	row     mRow
	present [3]bool
}

func (m *pkModel) upsert(old *mRow, w mWrite) (mRow, bool) {
	pick := func(i int, o, n *int64) *int64 {
		if w.present[i] {
			return n
		}
		return o
	}
	if old == nil {
		r := mRow{}
		if w.present[0] {
			r.a = w.row.a
		}
		if w.present[1] {
			r.n = w.row.n
		}
		if w.present[2] {
			r.v = w.row.v
		}
		return r, true
	}
	switch m.engine {
	case "first_row":
		return *old, false
	case "versioned":
		in, cur := w.row.v, old.v
		if !(in == nil && cur == nil || in != nil && (cur == nil || *in >= *cur)) {
			return *old, false
		}
	case "aggregation":
		r := *old
		if w.present[0] && w.row.a != nil { // last_non_null_value
			r.a = w.row.a
		}
		if w.present[1] && w.row.n != nil { // sum
			if r.n == nil {
				r.n = w.row.n
			} else {
				s := *r.n + *w.row.n
				r.n = &s
			}
		}
		if w.present[2] && w.row.v != nil && (r.v == nil || *w.row.v > *r.v) { // max
			r.v = w.row.v
		}
		return r, true
	}
	return mRow{pick(0, old.a, w.row.a), pick(1, old.n, w.row.n), pick(2, old.v, w.row.v)}, true
}

// apply folds one write's rows of each key, in order, into one change.
func (m *pkModel) apply(op string, ws []mWrite) (existed int64) {
	var order []int64
	byKey := map[int64][]mWrite{}
	for _, w := range ws {
		if _, ok := byKey[w.id]; !ok {
			order = append(order, w.id)
		}
		byKey[w.id] = append(byKey[w.id], w)
	}
	for _, id := range order {
		orig, had := m.rows[id]
		cur, has, changed := orig, had, false
		for _, w := range byKey[id] {
			switch op {
			case "delete":
				if has {
					existed++
					has, changed = false, true
				}
			case "overwrite":
				cur, has, changed = w.row, true, true
			default:
				var prev *mRow
				if has {
					prev = &cur
				}
				if next, ch := m.upsert(prev, w); ch {
					cur, has, changed = next, true, true
				}
			}
		}
		switch {
		case !changed || !had && !has:
		case !had:
			m.log[id] = append(m.log[id], "+I "+mRender(id, cur))
		case !has:
			m.log[id] = append(m.log[id], "-D "+mRender(id, orig))
		default:
			m.log[id] = append(m.log[id], "-U "+mRender(id, orig), "+U "+mRender(id, cur))
		}
		if has {
			m.rows[id] = cur
		} else {
			delete(m.rows, id)
		}
	}
	return existed
}

func mRender(id int64, r mRow) string {
	s := func(p *int64, str bool) string {
		switch {
		case p == nil:
			return "(null)"
		case str:
			return "s" + strconv.FormatInt(*p, 10)
		}
		return strconv.FormatInt(*p, 10)
	}
	return fmt.Sprintf("%d|%s|%s|%s", id, s(r.a, true), s(r.n, false), s(r.v, false))
}

func (m *pkModel) state() []string {
	var out []string
	for id, r := range m.rows {
		out = append(out, mRender(id, r))
	}
	return sorted(out)
}

// pkHarness runs a store over in-memory filesystems that it can crash.
type pkHarness struct {
	t     *testing.T
	dir   string
	cat   string
	logFS *vfs.MemFS
	kvFS  *pebblevfs.MemFS
	mem   *memory.CheckedAllocator
	store *tables.Store
	c     *catalog.Catalog
	// cache is the column cache's size; -1: none. With one, repeated
	// state reads take the live rows of unchanged batches from it.
	cache int64
}

func (h *pkHarness) open() {
	h.t.Helper()
	ctx := context.Background()
	c, err := catalog.Open(ctx, h.cat, catalog.Config{})
	if err != nil {
		h.t.Fatal(err)
	}
	st, err := tables.Open(ctx, c, tables.Config{
		Dir: h.dir, Log: columnarlog.Options{FS: h.logFS}, Mem: h.mem, CacheBytes: h.cache,
		KeyIndex: tables.KeyIndexConfig{FS: h.kvFS, CacheBytes: 1 << 20},
	})
	if err != nil {
		c.Close()
		h.t.Fatalf("open store: %v", err)
	}
	h.store, h.c = st, c
}

func (h *pkHarness) close() {
	h.t.Helper()
	if h.store != nil {
		if err := h.store.Close(); err != nil {
			h.t.Errorf("close store: %v", err)
		}
		if err := h.c.Close(); err != nil {
			h.t.Errorf("close catalog: %v", err)
		}
		h.store = nil
	}
}

// crash replaces the filesystems by what a crash now could leave (with
// r, torn unsynced tails too) and opens the store on them.
func (h *pkHarness) crash(r *rand.Rand) {
	logOpts := vfs.CrashOptions{}
	kvCfg := pebblevfs.CrashCloneCfg{}
	if r.IntN(2) == 0 {
		logOpts = vfs.CrashOptions{KeepUnsynced: true, Rand: rand.New(rand.NewPCG(r.Uint64(), 1)), TornGarbage: r.IntN(2) == 0}
		kvCfg = pebblevfs.CrashCloneCfg{UnsyncedDataPercent: r.IntN(100), RNG: rand.New(rand.NewPCG(r.Uint64(), 2))}
	}
	logFS, kvFS := h.logFS.CrashClone(logOpts), h.kvFS.CrashClone(kvCfg)
	h.close()
	h.logFS, h.kvFS = logFS, kvFS
	h.open()
}

func TestPrimaryKeyModel(t *testing.T) {
	engines := map[string]string{
		"last_row":    ``,
		"first_row":   `, 'merge-engine' = 'first_row'`,
		"versioned":   `, 'merge-engine' = 'versioned', 'merge-engine.versioned.ver-column' = 'v'`,
		"aggregation": `, 'merge-engine' = 'aggregation', 'fields.n.agg' = 'sum', 'fields.v.agg' = 'max'`,
	}
	steps := 60
	if testing.Short() {
		steps = 25
	}
	for _, engine := range []string{"last_row", "first_row", "versioned", "aggregation"} {
		for seed := uint64(1); seed <= 3; seed++ {
			t.Run(fmt.Sprintf("%s/seed=%d", engine, seed), func(t *testing.T) {
				runPKModel(t, engine, engines[engine], seed, steps, -1)
			})
		}
	}
}

// TestPrimaryKeyModelCached is the model test with the column cache: each
// check reads the state twice (the second from the cache of live rows),
// and every write between checks changes the live bits of some batches,
// whose cached live rows must not be served again.
func TestPrimaryKeyModelCached(t *testing.T) {
	for _, engine := range []string{"last_row", "aggregation"} {
		opts := ``
		if engine == "aggregation" {
			opts = `, 'merge-engine' = 'aggregation', 'fields.n.agg' = 'sum', 'fields.v.agg' = 'max'`
		}
		for seed := uint64(1); seed <= 2; seed++ {
			t.Run(fmt.Sprintf("%s/seed=%d", engine, seed), func(t *testing.T) {
				runPKModel(t, engine, opts, seed, 40, 64<<20)
			})
		}
	}
}

func runPKModel(t *testing.T, engine, opts string, seed uint64, steps int, cache int64) {
	r := rand.New(rand.NewPCG(seed, 99))
	h := &pkHarness{t: t, dir: "/data/tables", cat: t.TempDir() + "/catalog.db", logFS: vfs.NewMem(), kvFS: pebblevfs.NewCrashableMem(),
		mem: memory.NewCheckedAllocator(memory.NewGoAllocator()), cache: cache}
	h.open()
	t.Cleanup(func() {
		h.close()
		h.mem.AssertSize(t, 0)
	})
	ctx := context.Background()
	stmt, err := catalog.Parse(`CREATE TABLE m (id BIGINT, a VARCHAR, n BIGINT, v BIGINT, PRIMARY KEY (id)) WITH ('bucket.num' = '3'` + opts + `)`)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.store.Exec(ctx, stmt); err != nil {
		t.Fatal(err)
	}
	m := &pkModel{engine: engine, rows: map[int64]mRow{}, log: map[int64][]string{}}
	const keys = 24
	for step := 0; step < steps; step++ {
		tbl, err := h.store.Get(ctx, "", "m")
		if err != nil {
			t.Fatal(err)
		}
		var what string
		switch p := r.IntN(20); {
		case p < 10:
			ws := randomWrites(r, engine, keys, 1+r.IntN(12), false)
			what = "upsert"
			rec := writesRecord(h.mem, ws)
			_, err := tbl.Write(ctx, rec)
			rec.Release()
			if err != nil {
				t.Fatalf("step %d upsert: %v", step, err)
			}
			m.apply("upsert", ws)
		case p < 13:
			ws := randomWrites(r, engine, keys, 1+r.IntN(6), true)
			what = "delete"
			rec := keysRecord(h.mem, ws)
			n, err := tbl.Delete(ctx, rec)
			rec.Release()
			if err != nil {
				t.Fatalf("step %d delete: %v", step, err)
			}
			if want := m.apply("delete", ws); n != want {
				t.Fatalf("step %d: delete says %d existed, model %d", step, n, want)
			}
		case p < 16:
			ws := randomWrites(r, "first_row", keys, 1+r.IntN(6), false) // whole rows
			what = "overwrite"
			rec := writesRecord(h.mem, ws)
			_, err := tbl.Overwrite(ctx, rec)
			rec.Release()
			if err != nil {
				t.Fatalf("step %d overwrite: %v", step, err)
			}
			m.apply("overwrite", ws)
		case p < 18:
			what = "restart"
			h.close()
			h.open()
		default:
			what = "crash"
			h.crash(r)
		}
		checkPKModel(t, h, m, keys, fmt.Sprintf("step %d (%s)", step, what))
	}
}

func randomWrites(r *rand.Rand, engine string, keys, n int, keysOnly bool) []mWrite {
	val := func(p int) *int64 {
		if r.IntN(6) == 0 {
			return nil
		}
		x := int64(r.IntN(p))
		return &x
	}
	ws := make([]mWrite, n)
	present := [3]bool{true, true, true}
	if engine != "first_row" && !keysOnly && r.IntN(2) == 0 {
		present = [3]bool{r.IntN(2) == 0, r.IntN(2) == 0, r.IntN(2) == 0}
		if engine == "versioned" {
			present[2] = true
		}
	}
	for i := range ws {
		ws[i] = mWrite{id: int64(r.IntN(keys)), row: mRow{val(5), val(100), val(8)}, present: present}
	}
	return ws
}

// writesRecord is the record of ws with the columns they carry.
func writesRecord(mem memory.Allocator, ws []mWrite) arrow.RecordBatch {
	fields := []arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}
	names := []string{"a", "n", "v"}
	for i, p := range ws[0].present {
		if p {
			typ := arrow.DataType(arrow.PrimitiveTypes.Int64)
			if i == 0 {
				typ = arrow.BinaryTypes.String
			}
			fields = append(fields, arrow.Field{Name: names[i], Type: typ, Nullable: true})
		}
	}
	b := array.NewRecordBuilder(mem, arrow.NewSchema(fields, nil))
	defer b.Release()
	for _, w := range ws {
		b.Field(0).(*array.Int64Builder).Append(w.id)
		j := 1
		for i, v := range []*int64{w.row.a, w.row.n, w.row.v} {
			if !w.present[i] {
				continue
			}
			switch fb := b.Field(j).(type) {
			case *array.StringBuilder:
				if v == nil {
					fb.AppendNull()
				} else {
					fb.Append("s" + strconv.FormatInt(*v, 10))
				}
			case *array.Int64Builder:
				if v == nil {
					fb.AppendNull()
				} else {
					fb.Append(*v)
				}
			}
			j++
		}
	}
	return b.NewRecordBatch()
}

func keysRecord(mem memory.Allocator, ws []mWrite) arrow.RecordBatch {
	b := array.NewInt64Builder(mem)
	defer b.Release()
	for _, w := range ws {
		b.Append(w.id)
	}
	a := b.NewArray()
	defer a.Release()
	return array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil), []arrow.Array{a}, int64(len(ws)))
}

// checkPKModel compares the table with the model: its state through the
// engine's scan and through ReadRange, each key's changelog, and lookups
// of every key.
func checkPKModel(t *testing.T, h *pkHarness, m *pkModel, keys int, when string) {
	t.Helper()
	ctx := context.Background()
	want := m.state()
	st, err := h.store.Table(ctx, "", "m")
	if err != nil {
		t.Fatal(err)
	}
	_, rows := scanPlan(t, st, nil)
	sameRows(t, when+": state (engine scan)", sorted(rows), want)

	tbl, err := h.store.Get(ctx, "", "m")
	if err != nil {
		t.Fatal(err)
	}
	v, err := tbl.Capture(ctx, tables.LayerTable)
	if err != nil {
		t.Fatal(err)
	}
	if v.Rows() != int64(len(want)) {
		t.Errorf("%s: view rows %d, want %d live keys", when, v.Rows(), len(want))
	}
	var ranged []string
	for _, rg := range v.Ranges {
		err := tbl.ReadRange(ctx, rg, nil, func(rec arrow.RecordBatch) error {
			ranged = append(ranged, rowStrings(rec)...)
			return nil
		}, func(columnarlog.Batch) error {
			return fmt.Errorf("ReadRange of a primary-key table sent a stored batch")
		})
		if err != nil {
			t.Fatalf("%s: ReadRange: %v", when, err)
		}
	}
	sameRows(t, when+": state (ReadRange)", sorted(ranged), want)

	cl, err := h.store.Table(ctx, "", "m$changelog")
	if err != nil {
		t.Fatal(err)
	}
	_, clRows := scanPlan(t, cl, []int{0, 1, 2, 3, 4, 5, 6}) // id a n v _change_type _bucket _offset
	type rec struct {
		bucket, off int64
		s           string
	}
	byKey := map[int64][]rec{}
	for _, row := range clRows {
		f := strings.Split(row, "|")
		id, _ := strconv.ParseInt(f[0], 10, 64)
		b, _ := strconv.ParseInt(f[5], 10, 64)
		off, _ := strconv.ParseInt(f[6], 10, 64)
		byKey[id] = append(byKey[id], rec{b, off, f[4] + " " + strings.Join(f[:4], "|")})
	}
	for id := int64(0); id < int64(keys); id++ {
		rs := byKey[id]
		slices.SortFunc(rs, func(x, y rec) int { return int(x.off - y.off) })
		var got []string
		for _, r := range rs {
			got = append(got, r.s)
		}
		if !slices.Equal(got, m.log[id]) {
			t.Fatalf("%s: changelog of key %d:\n got %q\nwant %q", when, id, got, m.log[id])
		}
	}

	all := make([]mWrite, keys)
	for i := range all {
		all[i].id = int64(keys - 1 - i)
	}
	kr := keysRecord(h.mem, all)
	defer kr.Release()
	got, err := tbl.Lookup(ctx, kr, nil)
	if err != nil {
		t.Fatalf("%s: lookup: %v", when, err)
	}
	defer got.Release()
	var wantLookup []string
	for _, w := range all {
		if r, ok := m.rows[w.id]; ok {
			wantLookup = append(wantLookup, mRender(w.id, r))
		}
	}
	if g := rowStrings(got); !slices.Equal(g, wantLookup) {
		t.Fatalf("%s: lookup of every key:\n got %q\nwant %q", when, g, wantLookup)
	}
	// One key per call (a point read, not an iterator), and with the
	// keys as INTEGER (cast through conformPK): the same rows.
	for _, w := range all[:3] {
		one := keysRecord(h.mem, []mWrite{w})
		g, err := tbl.Lookup(ctx, one, nil)
		one.Release()
		if err != nil {
			t.Fatalf("%s: lookup of key %d: %v", when, w.id, err)
		}
		var want []string
		if r, ok := m.rows[w.id]; ok {
			want = []string{mRender(w.id, r)}
		}
		if rs := rowStrings(g); !slices.Equal(rs, want) {
			t.Fatalf("%s: lookup of key %d: %q, want %q", when, w.id, rs, want)
		}
		g.Release()
	}
	ib := array.NewInt32Builder(h.mem)
	for _, w := range all {
		ib.Append(int32(w.id))
	}
	ia := ib.NewArray()
	ib.Release()
	ir := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int32}}, nil), []arrow.Array{ia}, int64(len(all)))
	ia.Release()
	g32, err := tbl.Lookup(ctx, ir, nil)
	ir.Release()
	if err != nil {
		t.Fatalf("%s: lookup of INTEGER keys: %v", when, err)
	}
	if g := rowStrings(g32); !slices.Equal(g, wantLookup) {
		t.Fatalf("%s: lookup of every key as INTEGER:\n got %q\nwant %q", when, g, wantLookup)
	}
	g32.Release()
}
