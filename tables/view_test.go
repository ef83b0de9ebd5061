package tables_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lakestream/lakestream/catalog"
	"github.com/lakestream/lakestream/columnarlog"
	"github.com/lakestream/lakestream/internal/scan"
	"github.com/lakestream/lakestream/internal/vfs"
	"github.com/lakestream/lakestream/tables"
)

// fakeLake is a lake layer for one table whose snapshots a test sets.
type fakeLake struct {
	id int64 // the table that has a lake
	// snap returns the lake's current snapshot; calls counts the calls.
	snap  func() tables.LakeSnapshot
	calls atomic.Int64
	// parts records the snapshot each Parts call planned.
	parts []int64
}

func (l *fakeLake) TableCreated(context.Context, *catalog.Table) error { return nil }
func (l *fakeLake) TableAltered(context.Context, *catalog.Table) error { return nil }
func (l *fakeLake) TableDropped(context.Context, *catalog.Table) error { return nil }
func (l *fakeLake) DatabaseDropped(context.Context, string) error      { return nil }

func (l *fakeLake) Table(id int64) tables.TableLake {
	if id != l.id {
		return nil
	}
	return l
}

func (l *fakeLake) Snapshot() tables.LakeSnapshot {
	l.calls.Add(1)
	return l.snap()
}

func (l *fakeLake) Files(_ context.Context, snapshot int64) ([]tables.LakeFile, error) {
	return []tables.LakeFile{{Path: fmt.Sprintf("s%d.parquet", snapshot), Rows: 3}}, nil
}

func (l *fakeLake) Parts(_ context.Context, snapshot int64, _ scan.Request, _ tables.LiveRows) ([]scan.Part, error) {
	l.parts = append(l.parts, snapshot)
	return []scan.Part{emptyPart{}}, nil
}

func (l *fakeLake) ReadFiles(context.Context, int64, []string, []int, tables.LiveRows, func(arrow.RecordBatch) error) error {
	return errors.New("not read in these tests")
}

func (l *fakeLake) ReadLive(context.Context, int, func(arrow.RecordBatch, []int64, []columnarlog.ChangeType) error) (int64, error) {
	return 0, errors.New("no lake rows in these tests")
}

func (l *fakeLake) ReadHistory(context.Context, int, int64, []int, chan<- arrow.RecordBatch) (int64, error) {
	return 0, errors.New("no history in these tests")
}

func (l *fakeLake) HistoryOffsetForTime(context.Context, int, int64) (int64, error) {
	return 0, errors.New("no history in these tests")
}

type emptyPart struct{}

func (emptyPart) Open(context.Context) (scan.RecordStream, error) { return emptyStream{}, nil }

type emptyStream struct{}

func (emptyStream) Next() (arrow.RecordBatch, error) { return nil, io.EOF }
func (emptyStream) Close() error                     { return nil }

// A View holds the lake snapshot and the log above its offsets; "t$lake"
// the lake alone; "t$changelog" the retained log.
func TestCaptureSplitsLakeAndLog(t *testing.T) {
	e := newEnv(t, vfs.NewMem())
	e.mustExec("CREATE TABLE ev (id BIGINT NOT NULL, amount DOUBLE, kind VARCHAR, ts TIMESTAMP) WITH ('bucket.num'='2', 'bucket.key'='id')")
	tbl := e.table("ev")
	e.write(tbl, events(t, e.mem, 0, 40))
	ends := tbl.Log().CommittedEnds()
	lake := &fakeLake{id: tbl.Def().ID, snap: func() tables.LakeSnapshot {
		return tables.LakeSnapshot{ID: 7, Rows: 3, Offsets: []int64{2, 1}}
	}}
	e.store.SetLake(lake)
	ctx := context.Background()

	v, err := tbl.Capture(ctx, tables.LayerTable)
	if err != nil {
		t.Fatal(err)
	}
	want := []tables.Range{{Bucket: 0, From: 2, To: ends[0]}, {Bucket: 1, From: 1, To: ends[1]}}
	if v.Lake.ID != 7 || fmt.Sprint(v.Ranges) != fmt.Sprint(want) || v.Rows() != 3+ends[0]-2+ends[1]-1 {
		t.Fatalf("table view: lake %+v, ranges %v (%d rows); want snapshot 7 and %v", v.Lake, v.Ranges, v.Rows(), want)
	}
	if files, err := v.Files(ctx); err != nil || len(files) != 1 || files[0].Path != "s7.parquet" {
		t.Fatalf("files of the view: %v, %v", files, err)
	}
	if v, err = tbl.Capture(ctx, tables.LayerLake); err != nil || v.Lake.ID != 7 || len(v.Ranges) != 0 {
		t.Fatalf("lake view: %+v, %v", v, err)
	}
	v, err = tbl.Capture(ctx, tables.LayerChangelog)
	want = []tables.Range{{Bucket: 0, From: 0, To: ends[0]}, {Bucket: 1, From: 0, To: ends[1]}}
	if err != nil || v.Lake.ID != 0 || fmt.Sprint(v.Ranges) != fmt.Sprint(want) {
		t.Fatalf("changelog view: %+v, %v; want the whole log %v", v, err, want)
	}
	if got := v.Schema().NumFields(); got != 4+4 {
		t.Fatalf("changelog view has %d columns, want the table's 4 and 4 changelog columns", got)
	}

	// The engine's tables resolve to the same layers, suffixes ignoring case.
	for name, layer := range map[string]tables.Layer{"ev": tables.LayerTable, "EV$LAKE": tables.LayerLake, "ev$Changelog": tables.LayerChangelog} {
		got, l, err := e.store.Resolve(ctx, "", name)
		if err != nil || got != tbl || l != layer {
			t.Errorf("resolve %q: %v, layer %d, %v; want layer %d", name, got, l, err, layer)
		}
	}
	e.mustExec("CREATE TABLE plain (id BIGINT)")
	if _, _, err := e.store.Resolve(ctx, "", "plain$lake"); !errors.Is(err, catalog.ErrTableNotFound) {
		t.Errorf(`"plain$lake" of a table without a lake: %v, want not found`, err)
	}
	if _, err := e.table("plain").Capture(ctx, tables.LayerLake); !errors.Is(err, catalog.ErrTableNotFound) {
		t.Errorf("lake capture of a table without a lake: %v, want not found", err)
	}
}

// A capture whose lake offsets retention has already overtaken (a round
// committed and retention ran between the lake's state and the log's) is
// taken again, for plain scans and engine plans alike: the rows in between
// would otherwise be in neither part.
func TestCaptureAgainWhenRetentionOvertakesTheLake(t *testing.T) {
	var now atomic.Int64
	now.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro())
	e := newEnvWith(t, vfs.NewMem(), columnarlog.Options{Now: func() time.Time { return time.UnixMicro(now.Load()) }, SegmentAge: time.Hour})
	e.mustExec("CREATE TABLE ev (id BIGINT NOT NULL, amount DOUBLE, kind VARCHAR, ts TIMESTAMP) WITH ('log.retention'='2h')")
	tbl := e.table("ev")
	for i := range 10 {
		e.write(tbl, events(t, e.mem, i, 1))
		now.Add((45 * time.Minute).Microseconds())
	}
	current := tables.LakeSnapshot{ID: 2, Rows: 8, Offsets: []int64{8}}
	lake := &fakeLake{id: tbl.Def().ID, snap: func() tables.LakeSnapshot { return current }}
	e.store.SetLake(lake)
	if n, err := e.store.ApplyRetention(); err != nil || n == 0 {
		t.Fatalf("retention deleted %d segments: %v", n, err)
	}
	start := tbl.Log().Bucket(0).Stats().Start
	if start <= 1 || start > 8 {
		t.Fatalf("retention left the log at %d, want it in (1, 8]", start)
	}
	stale := tables.LakeSnapshot{ID: 1, Rows: 1, Offsets: []int64{1}}
	ctx := context.Background()

	lake.calls.Store(0)
	lake.snap = func() tables.LakeSnapshot {
		if lake.calls.Load() == 1 {
			return stale
		}
		return current
	}
	v, err := tbl.Capture(ctx, tables.LayerTable)
	if err != nil || v.Lake.ID != 2 || len(v.Ranges) != 1 || v.Ranges[0].From != 8 || lake.calls.Load() != 2 {
		t.Fatalf("capture: %+v (%d lake reads), %v; want snapshot 2 and the log from 8, on the second read", v, lake.calls.Load(), err)
	}

	lake.calls.Store(0)
	st, err := e.store.Table(ctx, "", "ev")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Plan(ctx, scan.Request{}); err != nil || fmt.Sprint(lake.parts) != "[2]" {
		t.Fatalf("engine plan: lake parts planned for snapshots %v, %v; want [2]", lake.parts, err)
	}

	lake.snap = func() tables.LakeSnapshot { return stale }
	lake.calls.Store(0)
	if _, err := tbl.Capture(ctx, tables.LayerTable); !errors.Is(err, tables.ErrCaptureRace) || lake.calls.Load() != 3 {
		t.Fatalf("always overtaken: %v after %d captures, want ErrCaptureRace after 3", err, lake.calls.Load())
	}
}
