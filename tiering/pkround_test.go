package tiering

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// tierRow is a row of the kv test table: (id, amount, kind).
type tierRow struct {
	amount float64
	kind   string
}

// pkModel is the rows of a primary-key table, by key, as the writes made
// them.
type pkModel map[int64]tierRow

const createTierKV = `CREATE TABLE kv (id BIGINT NOT NULL, amount DOUBLE, kind VARCHAR, PRIMARY KEY (id))
	WITH ('bucket.num'='%d', 'datalake.freshness'='1h'%s)`

// upsert writes whole rows of ids (in one write).
func (e *lakeEnv) upsert(name string, m pkModel, ids []int64, amount float64, kind string) {
	e.t.Helper()
	t := e.table(name)
	b := array.NewRecordBuilder(memory.DefaultAllocator, t.Schema())
	defer b.Release()
	for _, id := range ids {
		b.Field(0).(*array.Int64Builder).Append(id)
		b.Field(1).(*array.Float64Builder).Append(amount)
		b.Field(2).(*array.StringBuilder).Append(kind)
		m[id] = tierRow{amount, kind}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	if _, err := t.Write(context.Background(), rec); err != nil {
		e.t.Fatal(err)
	}
}

// partial sets the amount of ids, leaving kind alone (a partial update;
// a new key gets a null kind, "" in the model).
func (e *lakeEnv) partial(name string, m pkModel, ids []int64, amount float64) {
	e.t.Helper()
	t := e.table(name)
	sch := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "amount", Type: arrow.PrimitiveTypes.Float64}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sch)
	defer b.Release()
	for _, id := range ids {
		b.Field(0).(*array.Int64Builder).Append(id)
		b.Field(1).(*array.Float64Builder).Append(amount)
		r := m[id]
		r.amount = amount
		m[id] = r
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	if _, err := t.Write(context.Background(), rec); err != nil {
		e.t.Fatal(err)
	}
}

// remove deletes ids.
func (e *lakeEnv) remove(name string, m pkModel, ids []int64) {
	e.t.Helper()
	t := e.table(name)
	sch := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sch)
	defer b.Release()
	for _, id := range ids {
		b.Field(0).(*array.Int64Builder).Append(id)
		delete(m, id)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	if _, err := t.Delete(context.Background(), rec); err != nil {
		e.t.Fatal(err)
	}
}

// icebergRows reads the lake table of name through iceberg-go's own
// scanner, which applies position deletes, as another engine would.
func (e *lakeEnv) icebergRows(name string) (pkModel, error) {
	e.t.Helper()
	ctx := context.Background()
	tbl, err := e.ice.LoadTable(ctx, table.Identifier{"default", name})
	if err != nil {
		return nil, err
	}
	out := pkModel{}
	if tbl.CurrentSnapshot() == nil {
		return out, nil
	}
	at, err := tbl.Scan().ToArrowTable(ctx)
	if err != nil {
		return nil, err
	}
	defer at.Release()
	tr := array.NewTableReader(at, 0)
	defer tr.Release()
	for tr.Next() {
		rec := tr.RecordBatch()
		ids := rec.Column(0).(*array.Int64)
		amounts := rec.Column(1).(*array.Float64)
		kinds := rec.Column(2).(*array.String)
		for i := 0; i < int(rec.NumRows()); i++ {
			id := ids.Value(i)
			if _, dup := out[id]; dup {
				return nil, fmt.Errorf("key %d is in the lake twice", id)
			}
			out[id] = tierRow{amounts.Value(i), kinds.Value(i)}
		}
	}
	return out, nil
}

// checkLake asserts the Iceberg table reads exactly m.
func (e *lakeEnv) checkLake(name string, m pkModel, when string) {
	e.t.Helper()
	got, err := e.icebergRows(name)
	if err != nil {
		e.t.Fatalf("%s: %v", when, err)
	}
	if !maps.Equal(got, m) {
		e.t.Fatalf("%s: the Iceberg table reads %s, want %s", when, describe(got), describe(m))
	}
}

func describe(m pkModel) string {
	keys := slices.Sorted(maps.Keys(m))
	var b strings.Builder
	fmt.Fprintf(&b, "%d keys:", len(m))
	for i, k := range keys {
		if i == 20 {
			b.WriteString(" ...")
			break
		}
		fmt.Fprintf(&b, " %d=%v/%q", k, m[k].amount, m[k].kind)
	}
	return b.String()
}

func ids(from, to int64) []int64 {
	var out []int64
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

// A primary-key table tiers: its Iceberg table (format v2, the key as
// identifier field) reads, through iceberg-go's scanner, exactly one row
// per live key as of each round, over inserts, updates, partial updates
// and deletes, in rows of this round and of earlier ones.
func TestPKRoundsTierTheTableState(t *testing.T) {
	e := newLakeEnv(t, Config{})
	e.exec(fmt.Sprintf(createTierKV, 2, ""))
	m := pkModel{}
	e.upsert("kv", m, ids(0, 100), 1, "a")
	res := e.round("kv")
	if res.Rows != 100 {
		t.Fatalf("first round tiered %d rows, want 100", res.Rows)
	}
	e.checkLake("kv", m, "after inserts")
	lt := e.svc.lookup(e.table("kv").Def().ID)
	md := lt.state.Load().tbl.Metadata()
	if md.Version() != 2 {
		t.Fatalf("format version %d, want 2", md.Version())
	}
	if got := md.CurrentSchema().IdentifierFieldIDs; len(got) != 1 || got[0] != 1 {
		t.Fatalf("identifier fields %v, want [1] (id)", got)
	}
	e.upsert("kv", m, ids(50, 150), 2, "b") // updates and inserts
	e.round("kv")
	e.checkLake("kv", m, "after upserts")
	e.partial("kv", m, ids(0, 10), 3)
	e.remove("kv", m, ids(90, 120))
	e.upsert("kv", m, ids(95, 100), 4, "c") // deleted, then back
	e.partial("kv", m, ids(95, 97), 5)
	e.round("kv")
	e.checkLake("kv", m, "after partial updates and deletes")
	// Rows written and superseded within one round.
	e.upsert("kv", m, ids(200, 210), 6, "d")
	e.upsert("kv", m, ids(200, 210), 7, "e")
	e.remove("kv", m, ids(205, 210))
	e.round("kv")
	e.checkLake("kv", m, "after a round that supersedes its own rows")
	// The lake's state is rebuilt from the lake at a restart and goes on.
	e.restart(Config{})
	e.remove("kv", m, ids(0, 5))
	e.upsert("kv", m, ids(140, 145), 8, "f")
	e.round("kv")
	e.checkLake("kv", m, "after a restart")
	// A round with nothing new commits nothing.
	snaps := len(e.svc.lookup(e.table("kv").Def().ID).state.Load().tbl.Metadata().Snapshots())
	e.round("kv")
	if n := len(e.svc.lookup(e.table("kv").Def().ID).state.Load().tbl.Metadata().Snapshots()); n != snaps {
		t.Fatalf("%d snapshots after an empty round, want %d", n, snaps)
	}
}

// A log table's rounds write no delete files.
func TestLogTableRoundsWriteNoDeletes(t *testing.T) {
	e := newLakeEnv(t, Config{})
	e.exec(createBars)
	for i := 0; i < 3; i++ {
		e.ingest("bars", i*100, 100)
		e.round("bars")
	}
	st := e.svc.lookup(e.table("bars").Def().ID).state.Load()
	if st.pk != nil {
		t.Fatal("a log table has a primary-key lake state")
	}
	tasks, err := st.tbl.Scan().PlanFiles(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		if len(task.DeleteFiles)+len(task.EqualityDeleteFiles)+len(task.DeletionVectorFiles) > 0 {
			t.Fatalf("data file %s of a log table has delete files", task.File.FilePath())
		}
	}
	if got := st.tbl.CurrentSnapshot().Summary.Properties["total-delete-files"]; got != "0" {
		t.Fatalf("snapshot summary total-delete-files = %q, want 0", got)
	}
	if got := st.tbl.Metadata().CurrentSchema().IdentifierFieldIDs; len(got) != 0 {
		t.Fatalf("a log table's schema has identifier fields %v", got)
	}
}

// The model test of primary-key tiering: random upserts, partial updates
// and deletes, over many rounds, compactions, restarts and rounds that
// crash before their commit, in the middle of writing, or after their
// commit. After every step the Iceberg table (read through iceberg-go's
// scanner, position deletes applied) is exactly the model as of the last
// committed round: no key lost, none twice, no round applied twice.
func TestPKTieringModel(t *testing.T) {
	for _, tc := range []struct {
		buckets   int
		retention string // 1ms: every committed file may be compacted; 7d: only at passes a month ahead
	}{{1, "1ms"}, {3, "1ms"}, {3, "7d"}} {
		buckets := tc.buckets
		t.Run(fmt.Sprintf("buckets=%d,retention=%s", buckets, tc.retention), func(t *testing.T) {
			var crash atomic.Int32 // 1 before the commit, 2 mid-round, 3 after it
			var ahead atomic.Bool  // the compaction clock is 30 days ahead
			fail := func(kind int32) error {
				if crash.Load() == kind {
					return errCrash
				}
				return nil
			}
			cfg := Config{
				Maintenance: Maintenance{CompactMinFiles: 3, CompactSmallBytes: 1 << 20},
				faults: faults{
					beforeCommit: func() error { return fail(1) },
					midRound:     func(int) error { return fail(2) },
					afterCommit:  func() error { return fail(3) },
					now: func() time.Time {
						if ahead.Load() {
							return time.Now().Add(30 * 24 * time.Hour)
						}
						return time.Now()
					},
				},
			}
			e := newLakeEnv(t, cfg)
			// A short log.retention makes every committed file old enough to
			// compact.
			e.exec(fmt.Sprintf(createTierKV, buckets, ", 'log.retention'='"+tc.retention+"'"))
			ctx := context.Background()
			id := e.table("kv").Def().ID
			rng := rand.New(rand.NewPCG(uint64(buckets), 16))
			m, lake := pkModel{}, pkModel{}
			pick := func(n int) []int64 {
				var out []int64
				seen := map[int64]bool{}
				for range n {
					k := rng.Int64N(300)
					if !seen[k] {
						seen[k] = true
						out = append(out, k)
					}
				}
				return out
			}
			var compacted, merged, crashes int
			for step := 0; step < 80; step++ {
				for range 1 + rng.IntN(4) {
					switch rng.IntN(4) {
					case 0, 1:
						e.upsert("kv", m, pick(1+rng.IntN(40)), float64(step), fmt.Sprint("k", step))
					case 2:
						e.partial("kv", m, pick(1+rng.IntN(20)), float64(1000+step))
					case 3:
						e.remove("kv", m, pick(1+rng.IntN(30)))
					}
				}
				switch r := rng.IntN(10); {
				case r < 3:
					kind := int32(1 + r)
					crash.Store(kind)
					if _, err := e.svc.Round(ctx, id); !errors.Is(err, errCrash) {
						t.Fatalf("step %d: a round with fault %d: %v, want the crash", step, kind, err)
					}
					crash.Store(0)
					crashes++
					e.restart(cfg)
					if kind == 3 {
						lake = maps.Clone(m)
					}
					e.checkLake("kv", lake, fmt.Sprintf("step %d, after a crash (%d) and a restart", step, kind))
					e.round("kv")
					lake = maps.Clone(m)
				case r == 3:
					e.restart(cfg)
					e.round("kv")
					lake = maps.Clone(m)
				default:
					e.round("kv")
					lake = maps.Clone(m)
				}
				e.checkLake("kv", lake, fmt.Sprintf("step %d, after its round", step))
				e.checkPKLake("kv", fmt.Sprintf("step %d, after its round", step))
				e.checkLiveRows("kv", lake, fmt.Sprintf("step %d, after its round", step))
				if rng.IntN(3) == 0 {
					// With a 7d retention, now and then a pass as if a month
					// had gone by: the files are old enough to compact.
					allOld := rng.IntN(4) == 0
					ahead.Store(allOld)
					res, err := e.svc.Maintain(ctx, id, false)
					ahead.Store(false)
					if err != nil {
						t.Fatalf("step %d: maintenance: %v", step, err)
					}
					if allOld || tc.retention == "1ms" {
						e.checkNoDeletes("kv", fmt.Sprintf("step %d, after maintenance of old files", step))
					}
					compacted += res.FilesCompacted
					merged += res.DeleteFilesMerged
					e.checkLake("kv", lake, fmt.Sprintf("step %d, after maintenance", step))
					e.checkPKLake("kv", fmt.Sprintf("step %d, after maintenance", step))
					e.checkLiveRows("kv", lake, fmt.Sprintf("step %d, after maintenance", step))
				}
			}
			if compacted == 0 || crashes == 0 {
				t.Fatalf("%d files compacted, %d crashes: the test did not test compaction and crashes", compacted, crashes)
			}
			st := e.svc.lookup(id).state.Load()
			t.Logf("%d files compacted, %d delete files merged, %d crashes; in the end %d data files, %d delete files", compacted, merged, crashes, len(st.pk.files), len(st.pk.deletes))
		})
	}
}

// checkNoDeletes asserts that no position delete file of the lake names a
// data file of its snapshot: maintenance applied every delete of files
// older than log.retention (all of them here).
func (e *lakeEnv) checkNoDeletes(name, when string) {
	e.t.Helper()
	pk := e.svc.lookup(e.table(name).Def().ID).state.Load().pk
	for p, d := range pk.deletes {
		for _, target := range d.targets {
			if pk.files[target] != nil {
				e.t.Fatalf("%s: delete file %s still deletes rows of %s", when, p, target)
			}
		}
	}
}

// checkPKLake asserts that the lake state a service keeps in memory
// (updated by rounds and compactions) is the one rebuilt from the lake: the
// same live offsets, each at the same file and row.
func (e *lakeEnv) checkPKLake(name, when string) {
	e.t.Helper()
	st := e.svc.lookup(e.table(name).Def().ID).state.Load()
	got := st.pk
	want, err := e.svc.loadPKLake(context.Background(), st.tbl, name, st.offsets)
	if err != nil {
		e.t.Fatalf("%s: rebuild the lake state: %v", when, err)
	}
	if len(got.files) != len(want.files) || len(got.deletes) != len(want.deletes) {
		e.t.Fatalf("%s: the lake state has %d data and %d delete files, the lake %d and %d", when, len(got.files), len(got.deletes), len(want.files), len(want.deletes))
	}
	for b, end := range st.offsets {
		for off := int64(0); off < end; off++ {
			if g, w := got.state.Live(b, off), want.state.Live(b, off); g != w {
				e.t.Fatalf("%s: bucket %d offset %d: live %v in memory, %v in the lake", when, b, off, g, w)
			}
			gp, gr, gok := got.locate(b, off)
			wp, wr, wok := want.locate(b, off)
			if gp != wp || gr != wr || gok != wok {
				e.t.Fatalf("%s: bucket %d offset %d: at %s row %d (%v) in memory, %s row %d (%v) in the lake", when, b, off, gp, gr, gok, wp, wr, wok)
			}
		}
	}
}

// checkLiveRows asserts that LiveRows, over every bucket, reads exactly m,
// each row with an offset live in the lake's state.
func (e *lakeEnv) checkLiveRows(name string, m pkModel, when string) {
	e.t.Helper()
	tbl := e.table(name)
	h := lakeReader{s: e.svc, lt: e.svc.lookup(tbl.Def().ID)}
	st := h.lt.state.Load()
	got := pkModel{}
	for b := range st.offsets {
		tiered, err := h.LiveRows(context.Background(), b, func(rec arrow.RecordBatch, offsets []int64) error {
			if int64(len(offsets)) != rec.NumRows() {
				return fmt.Errorf("%d rows with %d offsets", rec.NumRows(), len(offsets))
			}
			idc, amounts, kinds := rec.Column(0).(*array.Int64), rec.Column(1).(*array.Float64), rec.Column(2).(*array.String)
			for i, off := range offsets {
				if !st.pk.state.Live(b, off) {
					return fmt.Errorf("bucket %d offset %d is not live", b, off)
				}
				id := idc.Value(i)
				if _, dup := got[id]; dup {
					return fmt.Errorf("key %d twice", id)
				}
				got[id] = tierRow{amounts.Value(i), kinds.Value(i)}
			}
			return nil
		})
		if err != nil {
			e.t.Fatalf("%s: live rows of bucket %d: %v", when, b, err)
		}
		if tiered != st.offsets[b] {
			e.t.Fatalf("%s: live rows of bucket %d up to %d, tiered to %d", when, b, tiered, st.offsets[b])
		}
	}
	if !maps.Equal(got, m) {
		e.t.Fatalf("%s: the lake's live rows are %s, want %s", when, describe(got), describe(m))
	}
}

// A primary-key table partitioned by more than its bucket (here the key
// itself, identity(id), with bucket(2, id)): each round's position deletes
// are one file per partition of the rows they delete, each carrying its
// partition, and the table reads as its state.
func TestPKRoundsPartitioned(t *testing.T) {
	e := newLakeEnv(t, Config{})
	e.exec(`CREATE TABLE kv (id BIGINT NOT NULL, amount DOUBLE, kind VARCHAR, PRIMARY KEY (id)) PARTITIONED BY (id)
		WITH ('bucket.num'='2', 'datalake.freshness'='1h')`)
	m := pkModel{}
	e.upsert("kv", m, ids(0, 30), 1, "a")
	e.round("kv")
	e.upsert("kv", m, ids(10, 40), 2, "b")
	e.remove("kv", m, ids(0, 5))
	e.partial("kv", m, ids(20, 25), 3)
	e.round("kv")
	e.checkLake("kv", m, "partitioned")
	st := e.svc.lookup(e.table("kv").Def().ID).state.Load()
	if spec := st.tbl.Spec(); spec.NumFields() != 2 {
		t.Fatalf("partition spec %v, want identity(id) and bucket(2, id)", spec)
	}
	perPartition := map[string]int{}
	for _, d := range st.pk.deletes {
		for _, target := range d.targets {
			if partitionKeyOf(st.pk.files[target].df) != partitionKeyOf(d.df) {
				t.Fatalf("delete file %s targets %s of another partition", d.df.FilePath(), target)
			}
		}
		perPartition[partitionKeyOf(d.df)]++
		lo, hi := d.df.LowerBoundValues()[2147483546], d.df.UpperBoundValues()[2147483546]
		if string(lo) != slices.Min(d.targets) || string(hi) != slices.Max(d.targets) {
			t.Fatalf("delete file %s: file_path bounds [%q, %q], targets %v", d.df.FilePath(), lo, hi, d.targets)
		}
		if d.df.ContentType() != iceberg.EntryContentPosDeletes || d.df.Count() == 0 {
			t.Fatalf("delete file %s: content %v, %d rows", d.df.FilePath(), d.df.ContentType(), d.df.Count())
		}
	}
	// Keys 0..4 deleted and 10..29 updated in the second round: each of
	// their partitions got one delete file of that round.
	if len(perPartition) != 25 {
		t.Fatalf("delete files in %d partitions, want 25", len(perPartition))
	}
	for k, n := range perPartition {
		if n != 1 {
			t.Fatalf("partition %s has %d delete files, want 1", k, n)
		}
	}
	e.restart(Config{})
	e.checkPKLake("kv", "partitioned, after a restart")
	e.checkLiveRows("kv", m, "partitioned, after a restart")
}

// A round after another writer's commit (here a property set through
// another handle of the catalog; iceberg-go replays the round's commit on
// the new metadata, or the round reloads and redoes it) keeps the other
// writer's change and loses or doubles nothing.
func TestPKRoundAfterAnotherWriter(t *testing.T) {
	e := newLakeEnv(t, Config{})
	e.exec(fmt.Sprintf(createTierKV, 2, ""))
	m := pkModel{}
	e.upsert("kv", m, ids(0, 50), 1, "a")
	e.round("kv")
	e.upsert("kv", m, ids(25, 75), 2, "b")
	e.remove("kv", m, ids(0, 10))
	ctx := context.Background()
	other, err := e.ice.LoadTable(ctx, table.Identifier{"default", "kv"})
	if err != nil {
		t.Fatal(err)
	}
	tx := other.NewTransaction()
	if err := tx.SetProperties(iceberg.Properties{"owner": "someone else"}); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	lt := e.svc.lookup(e.table("kv").Def().ID)
	e.round("kv")
	e.checkLake("kv", m, "after a conflict")
	e.checkPKLake("kv", "after a conflict")
	if got := lt.state.Load().tbl.Properties()["owner"]; got != "someone else" {
		t.Fatalf("the other writer's property is %q", got)
	}
}

// The key stays the identifier fields across ADD COLUMN, and a lake table
// without them (a primary-key table's lake created by an earlier version)
// gets them when it is loaded.
func TestPKIdentifierFields(t *testing.T) {
	e := newLakeEnv(t, Config{})
	e.exec(fmt.Sprintf(createTierKV, 2, ""))
	ctx := context.Background()
	ident := table.Identifier{"default", "kv"}
	identifiers := func() []int {
		tbl, err := e.ice.LoadTable(ctx, ident)
		if err != nil {
			t.Fatal(err)
		}
		return tbl.Schema().IdentifierFieldIDs
	}
	e.exec("ALTER TABLE kv ADD COLUMN note VARCHAR")
	if got := identifiers(); !slices.Equal(got, []int{1}) {
		t.Fatalf("identifier fields after ADD COLUMN: %v, want [1]", got)
	}
	tbl, err := e.ice.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	tx := tbl.NewTransaction()
	if err := tx.UpdateSchema(false, false).SetIdentifierField(nil).Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if got := identifiers(); len(got) != 0 {
		t.Fatalf("identifier fields not cleared: %v", got)
	}
	e.restart(Config{})
	if got := identifiers(); !slices.Equal(got, []int{1}) {
		t.Fatalf("identifier fields after a load: %v, want [1]", got)
	}
}

// A primary-key table an earlier version tiered as plain rows (every
// change record, no deletes) is healed by its first round: the rows that
// are not the state — superseded ones, before images, deletes — get
// position deletes.
func TestPKLegacyLakeIsHealed(t *testing.T) {
	e := newLakeEnv(t, Config{})
	e.exec(fmt.Sprintf(createTierKV, 2, ""))
	m := pkModel{}
	e.upsert("kv", m, ids(0, 50), 1, "a")
	e.upsert("kv", m, ids(25, 75), 2, "b")
	e.remove("kv", m, ids(0, 10))
	// Tier as a log table's round would (the earlier version's way).
	lt := e.svc.lookup(e.table("kv").Def().ID)
	st := lt.state.Load()
	lt.state.Store(&lakeState{tbl: st.tbl, offsets: st.offsets})
	e.round("kv")
	if _, err := e.icebergRows("kv"); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Fatalf("the legacy lake reads %v, want keys twice", err)
	}
	e.restart(Config{})
	if !e.svc.lookup(e.table("kv").Def().ID).state.Load().pk.legacy {
		t.Fatal("the legacy lake is not known as one")
	}
	e.round("kv") // nothing new in the log: deletes only
	e.checkLake("kv", m, "after the healing round")
	e.restart(Config{})
	if e.svc.lookup(e.table("kv").Def().ID).state.Load().pk.legacy {
		t.Fatal("the healed lake is still legacy")
	}
	e.upsert("kv", m, ids(70, 80), 3, "c")
	e.round("kv")
	e.checkLake("kv", m, "after a round on the healed lake")
	e.checkPKLake("kv", "healed")
}

// Maintenance merges a partition's delete files into one once it has
// CompactMinFiles of them, the rows and the lake's state unchanged.
func TestPKDeleteFilesMerged(t *testing.T) {
	// No file is small: maintenance merges delete files only.
	e := newLakeEnv(t, Config{Maintenance: Maintenance{CompactMinFiles: 2, CompactSmallBytes: 1}})
	e.exec(fmt.Sprintf(createTierKV, 3, ""))
	m := pkModel{}
	for r := 0; r < 4; r++ {
		e.upsert("kv", m, ids(int64(10*r), int64(10*r+60)), float64(r), "a")
		e.remove("kv", m, ids(int64(10*r), int64(10*r+3)))
		e.round("kv")
	}
	lt := e.svc.lookup(e.table("kv").Def().ID)
	before := len(lt.state.Load().pk.deletes)
	res, err := e.svc.Maintain(context.Background(), e.table("kv").Def().ID, false)
	if err != nil || res.DeleteFilesMerged == 0 || res.FilesCompacted != 0 {
		t.Fatalf("maintenance merged %d delete files, %d data files: %v", res.DeleteFilesMerged, res.FilesCompacted, err)
	}
	if after := len(lt.state.Load().pk.deletes); after != 3 || before <= after {
		t.Fatalf("%d delete files before merging, %d after, want one per bucket", before, after)
	}
	e.checkLake("kv", m, "after merging delete files")
	e.checkPKLake("kv", "after merging delete files")
	e.upsert("kv", m, ids(0, 20), 9, "b")
	e.round("kv")
	e.checkLake("kv", m, "after a round on merged delete files")
	e.restart(Config{})
	e.checkPKLake("kv", "after a restart")
}
