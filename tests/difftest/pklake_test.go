package difftest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/lakestream/lakestream/tables"
	"github.com/lakestream/lakestream/tiering"
)

// The corpus over primary-key tables whose state is split between the lake
// and the log tail (docs/lake.md, "Reads"): a union read of a primary-key
// table keeps a lake row iff its (bucket, offset) is live in the captured
// state, and adds the live rows of the log tail.
//
// The tables of pkdata_test.go are loaded by their workloads: the first
// phase's writes, a round, the second phase's (an ADD COLUMN among them), a
// round, and the third phase's, which stay in the log tail: they change
// keys whose current row is in the lake (whole rows, partial updates,
// overwrites), delete lake keys, and insert keys anew. The reference holds
// the model's final state in native tables. Then:
//
//	split      the corpus over that state: every table partly in the lake,
//	           partly in the tail;
//	lake       every table tiered whole; the corpus, then the queries that
//	           scan and filter with "t$lake" names (as stage c of
//	           TestCorpusWhileTiering), which apply the Iceberg position
//	           deletes instead of the state;
//	compacted  a maintenance pass of every table (compaction applies the
//	           deletes, merges small files and delete files, expires
//	           snapshots, deletes orphans); the same queries again.
//
// Most of the time goes to the split stage: a query reads the log tail's
// change records and filters them by the state each time, where the lake's
// files are decoded once (the read cache) and masked.
//
// Every query must equal the reference exactly.
func TestCorpusPrimaryKeysLakeAndLog(t *testing.T) {
	ctx := context.Background()
	start := time.Now()
	f, lake := openTieredFixtureOf(ctx, t, map[string]bool{}, tiering.Config{Maintenance: lakeMaintenance})
	corpus := loadCorpus(t)
	pks := loadPKTables(ctx, t, f, lake.svc)
	checkSplit(t, pks)
	t.Logf("loaded in %s", time.Since(start).Round(time.Millisecond))

	var split, whole, compacted stageStats
	t.Run("split", func(t *testing.T) {
		split.passed = runCorpusTiering(ctx, t, f, corpus, nil, 0, 0, &split)
		runStateQueries(ctx, t, f, pks)
	})

	for _, p := range pks {
		tierAll(ctx, t, lake.svc, p.tbl)
	}
	t.Run("lake", func(t *testing.T) {
		whole.passed = runCorpusTiering(ctx, t, f, corpus, nil, 0, 0, &whole)
		runStateQueries(ctx, t, f, pks)
		runLakeNames(ctx, t, f, corpus, lakeNamesPrefixes)
	})

	var res tiering.MaintenanceResult
	for _, p := range pks {
		m, err := lake.svc.Maintain(ctx, p.tbl.Def().ID, true)
		if err != nil {
			t.Errorf("maintain %s: %v", p.spec.ref(), err)
		}
		res.FilesCompacted += m.FilesCompacted
		res.DeleteFilesMerged += m.DeleteFilesMerged
		res.SnapshotsExpired += m.SnapshotsExpired
	}
	if res.FilesCompacted == 0 {
		t.Error("maintenance compacted no file: stage compacted shows nothing")
	}
	t.Run("compacted", func(t *testing.T) {
		compacted.passed = runCorpusTiering(ctx, t, f, corpus, nil, 0, 0, &compacted)
		runStateQueries(ctx, t, f, pks)
		runLakeNames(ctx, t, f, corpus, lakeNamesPrefixes)
	})
	t.Logf("split: %d of %d queries pass; lake: %d of %d; compacted (%d files compacted, %d delete files merged, %d snapshots expired): %d of %d; %s in all",
		split.passed, split.queries, whole.passed, whole.queries,
		res.FilesCompacted, res.DeleteFilesMerged, res.SnapshotsExpired, compacted.passed, compacted.queries,
		time.Since(start).Round(time.Millisecond))
}

// loadedPK is a table of the primary-key data set, loaded.
type loadedPK struct {
	*pkTable
	tbl   *tables.Table
	model *pkModel
}

// loadPKTables creates the primary-key data set's tables and the log
// tables with them, runs the workloads with a round of every table after
// each phase but the last, and loads the reference with the model's final
// state.
func loadPKTables(ctx context.Context, t *testing.T, f *fixture, svc *tiering.Service) []*loadedPK {
	t.Helper()
	pkTables, logs := pkDataset()
	for _, spec := range logs {
		if err := loadLake(ctx, f.store, spec); err != nil {
			t.Fatal(err)
		}
		tierAll(ctx, t, svc, getTable(ctx, t, f, spec))
		if err := f.loadReference(ctx, spec); err != nil {
			t.Fatal(err)
		}
		f.specs = append(f.specs, spec)
	}
	var pks []*loadedPK
	for _, p := range pkTables {
		create := p.spec
		if p.spec.addColumnAt > 0 {
			c := *p.spec
			c.cols = c.cols[:len(c.cols)-1]
			create = &c
		}
		if err := execDDL(ctx, f.store, create.ddl(true)); err != nil {
			t.Fatal(err)
		}
		pks = append(pks, &loadedPK{pkTable: p, tbl: getTable(ctx, t, f, p.spec), model: newPKModel(p)})
	}
	for ph := range pkPhases {
		for _, p := range pks {
			for _, op := range p.ops[ph] {
				if err := writePK(ctx, f.store, p.tbl, p.model, op); err != nil {
					t.Fatalf("phase %d: %v", ph+1, err)
				}
			}
			if ph < pkPhases-1 {
				if res := round(ctx, t, svc, p.tbl); res.Rows == 0 {
					t.Fatalf("phase %d: the round of %s tiered nothing", ph+1, p.spec.ref())
				}
			}
		}
	}
	for _, p := range pks {
		p.spec.rows = p.model.state()
		if err := f.loadReference(ctx, p.spec); err != nil {
			t.Fatal(err)
		}
		f.specs = append(f.specs, p.spec)
	}
	return pks
}

func getTable(ctx context.Context, t *testing.T, f *fixture, spec *tableSpec) *tables.Table {
	t.Helper()
	tbl, err := f.store.Get(ctx, spec.db, spec.name)
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

func round(ctx context.Context, t *testing.T, svc *tiering.Service, tbl *tables.Table) tiering.RoundResult {
	t.Helper()
	res, err := svc.Round(ctx, tbl.Def().ID)
	if err != nil {
		t.Fatalf("round of %s: %v", tbl.Name(), err)
	}
	return res
}

// tierAll runs rounds of tbl until one tiers nothing.
func tierAll(ctx context.Context, t *testing.T, svc *tiering.Service, tbl *tables.Table) {
	t.Helper()
	for round(ctx, t, svc, tbl).Rows > 0 {
	}
}

// checkSplit checks that every table's change records are partly in the
// lake and partly in the log tail.
func checkSplit(t *testing.T, pks []*loadedPK) {
	t.Helper()
	for _, p := range pks {
		tiered := p.tbl.Tiered()
		var lake, tail int64
		for b, end := range p.tbl.Log().CommittedEnds() {
			var o int64
			if tiered != nil {
				o = tiered[b]
			}
			lake, tail = lake+o, tail+end-o
		}
		if lake == 0 || tail == 0 {
			t.Errorf("%s: %d change records in the lake, %d in the log tail: want some in both", p.spec.ref(), lake, tail)
		}
	}
}

// runStateQueries compares each primary-key table whole, and its count,
// with the reference: tables few corpus queries read whole.
func runStateQueries(ctx context.Context, t *testing.T, f *fixture, pks []*loadedPK) {
	for _, p := range pks {
		for i, sql := range []string{"SELECT * FROM " + p.spec.ref(), "SELECT count(*) AS n FROM " + p.spec.ref()} {
			q := corpusQuery{name: fmt.Sprintf("state_%s%s_%d", p.spec.db, p.spec.name, i), sql: sql, empty: len(p.spec.rows) == 0}
			t.Run(q.name, func(t *testing.T) { report(t, q, runCorpusQuery(ctx, f, q)) })
		}
	}
}
