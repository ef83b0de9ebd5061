package tables

import (
	"context"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lakestream/lakestream/catalog"
	"github.com/lakestream/lakestream/internal/scan"
)

// Layer is the part of a table a read covers.
type Layer int

const (
	// LayerTable is the table ("t"): its lake snapshot and the log above
	// the snapshot's tiered offsets; the log alone for a table without a
	// lake.
	LayerTable Layer = iota
	// LayerLake is the lake snapshot alone ("t$lake").
	LayerLake
	// LayerChangelog is the retained log with the changelog columns
	// ("t$changelog").
	LayerChangelog
)

func (l Layer) suffix() string {
	switch l {
	case LayerLake:
		return LakeSuffix
	case LayerChangelog:
		return ChangelogSuffix
	}
	return ""
}

// View is what one read of a table covers, captured by Capture: the lake
// snapshot with each bucket's tiered offset O[b], then the log ranges
// [O[b], H[b]) up to each bucket's committed end H[b]. Captured in that
// order they hold every acknowledged row exactly once: the tierer tiers
// only committed rows (H >= O), and retention deletes only log below O.
// Rows committed after the capture are not part of it. Plain scans, the
// query engine, "t$lake", "t$changelog" and subscriptions all read through
// a View; docs/architecture.md has the consistency argument.
type View struct {
	Table *Table
	Layer Layer
	// Lake is the lake snapshot read; ID 0 when no lake rows are.
	Lake LakeSnapshot
	// Ranges are the non-empty log ranges read (none for LayerLake).
	Ranges []Range

	lake TableLake // the lake Lake came from
	// files, when set, are the only data files of Lake read (a Pin's)
	files []string
	def   *catalog.Table
	// pk is the state of a primary-key table a LayerTable read sees: its
	// Ranges hold the changelog, of which the read returns the live
	// records (one per live key). nil for log tables and other layers.
	pk *pkState
	// remote are the buckets read from other nodes (withRemote); Ranges
	// hold none of them.
	remote []RemoteBucket
}

// captureAttempts bounds the captures of one read: a capture is taken again
// when log retention deleted rows above the captured lake's offsets (a
// round committed and retention ran in between), which a second capture
// sees in the newer lake snapshot.
const captureAttempts = 3

// ErrCaptureRace is returned when every capture of a read was overtaken by
// log retention. It is transient: the read may be tried again.
var ErrCaptureRace = errors.New("the log moved past the lake's offsets while the read was planned")

// Capture captures what a read of layer covers now.
func (t *Table) Capture(ctx context.Context, layer Layer) (*View, error) {
	lake := t.Lake()
	if layer == LayerLake && lake == nil {
		return nil, notTiered(t.Name())
	}
	if layer == LayerTable && t.pk != nil && t.pkView() == nil {
		return nil, t.pk.pendingErr()
	}
	for attempt := 1; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if v, whole := t.captureOnce(layer, lake); whole {
			return v, nil
		}
		if attempt == captureAttempts {
			return nil, fmt.Errorf("read %s: %w %d times: try again", t.Name(), ErrCaptureRace, attempt)
		}
	}
}

func notTiered(name string) error {
	return fmt.Errorf("%w: table %s is not tiered into the lake (datalake.enabled is false)", catalog.ErrTableNotFound, name)
}

// captureOnce captures the lake state (none for LayerChangelog), then,
// for a primary-key table, its published state, then the log ranges above
// the lake's offsets, and reports whether they are whole: false when some
// bucket's retained log starts above its lake offset, so that the rows in
// between would be in neither part.
//
// A primary-key table's ranges end at the state's ends E, which are at or
// above the lake's offsets O: a round tiers one published state, and the
// lake is captured first. Lake rows and log records are then filtered by
// that one state (View.Plan), so each live key is read once, as of E,
// before, during and after a round.
func (t *Table) captureOnce(layer Layer, lake TableLake) (*View, bool) {
	v := &View{Table: t, Layer: layer, lake: lake, def: t.Def()}
	if lake != nil && layer != LayerChangelog {
		v.Lake = lake.Snapshot()
	}
	if layer == LayerLake {
		return v, true
	}
	if layer == LayerTable {
		v.pk = t.pkView()
	}
	whole := true
	offs := v.Lake.Offsets
	for _, r := range t.LogRanges() {
		if v.pk != nil {
			r.To = v.pk.ends[r.Bucket]
		}
		if r.Bucket < len(offs) {
			whole = whole && r.From <= offs[r.Bucket]
			r.From = max(r.From, offs[r.Bucket])
		}
		if r.To > r.From {
			v.Ranges = append(v.Ranges, r)
		}
	}
	return v, whole
}

// live is what the view keeps of its lake rows: for a primary-key table,
// the rows live in its state; nil (the snapshot's position deletes applied)
// otherwise.
func (v *View) live() LiveRows {
	if v.pk == nil {
		return nil
	}
	return PKState{v.pk}
}

// Rows is the number of rows the view covers, before any pruning: for a
// primary-key table, its live keys.
func (v *View) Rows() int64 {
	if v.pk != nil {
		return v.pk.Live()
	}
	n := v.Lake.Rows
	for _, r := range v.Ranges {
		n += r.To - r.From
	}
	return n
}

// Schema is the schema of the view's rows: the table's columns, followed
// by the changelog columns for LayerChangelog.
func (v *View) Schema() *arrow.Schema { return layerSchema(v.def, v.Layer) }

func layerSchema(def *catalog.Table, layer Layer) *arrow.Schema {
	if layer == LayerChangelog {
		return changelogSchema(def.ArrowSchema())
	}
	return def.ArrowSchema()
}

// Files returns the data files of the view's lake snapshot, none when it
// reads no lake rows.
func (v *View) Files(ctx context.Context) ([]LakeFile, error) {
	if v.Lake.ID == 0 {
		return nil, nil
	}
	return v.lake.Files(ctx, v.Lake.ID)
}

// Plan plans a decoded read of the view for the query engine: the lake
// snapshot's files that req's filters do not rule out, then the log ranges.
func (v *View) Plan(ctx context.Context, req scan.Request) (scan.Plan, error) {
	name := v.Table.Name() + v.Layer.suffix()
	out, err := scan.ProjectSchema(v.Schema(), scan.Columns(req.Columns, v.Schema().NumFields()))
	if err != nil {
		return nil, fmt.Errorf("scan %s: %w", name, err)
	}
	var parts []scan.Part
	switch {
	case v.Lake.ID != 0 && v.files != nil:
		// Read whole, unpruned: the engine applies the filters again.
		parts = []scan.Part{filesPart{lake: v.lake, snapshot: v.Lake.ID, paths: v.files, cols: scan.Columns(req.Columns, v.Schema().NumFields())}}
	case v.Lake.ID != 0:
		if parts, err = v.lake.Parts(ctx, v.Lake.ID, req, v.live()); err != nil {
			return nil, err
		}
	}
	if len(v.Ranges) > 0 || len(v.remote) > 0 {
		lp, err := v.Table.plan(v.def, req, v.Layer == LayerChangelog, v.Ranges)
		if err != nil {
			return nil, err
		}
		lp.pk = v.pk
		if err := v.planRemote(lp, req); err != nil { // remote.go
			return nil, err
		}
		// The remote parts go first: the engine opens parts in order, a
		// few at a time, and theirs wait on other nodes, whose work then
		// overlaps the reading of the local parts.
		parts = append(lp.remoteFirst(), parts...)
	}
	return scan.NewPlan(out, parts), nil
}

// ReadLakeFiles sends the records of data files of a lake snapshot, as
// TableLake.ReadFiles does (all their rows but those the snapshot's
// position deletes delete); a table without a lake has none. A
// primary-key table with a lake is scanned through a View instead
// (View.Read), whose lake rows and log records one state filters.
func (t *Table) ReadLakeFiles(ctx context.Context, snapshot int64, paths []string, cols []int, send func(arrow.RecordBatch) error) error {
	lake := t.Lake()
	if lake == nil {
		return notTiered(t.Name())
	}
	return lake.ReadFiles(ctx, snapshot, paths, cols, nil, send)
}

// Read sends every row of the view, decoded as the table's columns cols
// (nil: all), to send (which must not keep them): the plain scan of a
// primary-key table with a lake, whose lake rows and log records must be
// filtered by one state.
func (v *View) Read(ctx context.Context, cols []int, send func(arrow.RecordBatch) error) error {
	p, err := v.Plan(ctx, scan.Request{Columns: cols})
	if err != nil {
		return err
	}
	for _, part := range p.Parts() {
		if err := scan.Send(ctx, part, send); err != nil {
			return err
		}
	}
	return nil
}

// layerTable is a layer of a table as the query engine sees it: each Plan
// captures a View, or reads the one pinned for it (WithPins).
type layerTable struct {
	t     *Table
	layer Layer
}

func (l layerTable) Name() string          { return l.t.Name() + l.layer.suffix() }
func (l layerTable) Schema() *arrow.Schema { return layerSchema(l.t.Def(), l.layer) }

func (l layerTable) Plan(ctx context.Context, req scan.Request) (scan.Plan, error) {
	if p, ok := pinOf(ctx, l.t.Def().ID, l.layer); ok {
		v, err := l.t.Pinned(p)
		if err != nil {
			return nil, err
		}
		return v.Plan(ctx, req)
	}
	v, err := l.t.Capture(ctx, l.layer)
	if err != nil {
		return nil, err
	}
	if err := v.withRemote(ctx); err != nil { // remote.go
		return nil, err
	}
	return v.Plan(ctx, req)
}

// EstimatedRows is the rows a read started now would cover, for the
// engine's planning: one capture, not taken again when retention overtook it.
func (l layerTable) EstimatedRows() int64 {
	lake := l.t.Lake()
	if l.layer == LayerLake && lake == nil {
		return 0
	}
	v, _ := l.t.captureOnce(l.layer, lake)
	return v.Rows()
}

// Resolve finds the table a name refers to and the layer it reads: "t",
// "t$lake" or "t$changelog" (suffixes compared ignoring case; a table
// whose own name ends so wins). db "" is the default database.
func (s *Store) Resolve(ctx context.Context, db, name string) (*Table, Layer, error) {
	t, err := s.Get(ctx, db, name)
	if !errors.Is(err, catalog.ErrTableNotFound) {
		return t, LayerTable, err
	}
	for _, layer := range []Layer{LayerLake, LayerChangelog} {
		base, ok := catalog.CutSuffixFold(name, layer.suffix())
		if !ok {
			continue
		}
		bt, berr := s.Get(ctx, db, base)
		if berr != nil {
			return nil, 0, berr
		}
		if layer == LayerLake && bt.Lake() == nil {
			return nil, 0, notTiered(bt.Name())
		}
		return bt, layer, nil
	}
	return nil, 0, err
}

// Table resolves a name for the query engine (scan.Resolver): a layer of
// a table of the store.
func (s *Store) Table(ctx context.Context, db, name string) (scan.Table, error) {
	t, layer, err := s.Resolve(ctx, db, name)
	if errors.Is(err, catalog.ErrTableNotFound) {
		return nil, scanNotFound{err}
	}
	if err != nil {
		return nil, err
	}
	recordResolved(ctx, t, layer)
	return layerTable{t, layer}, nil
}

// scanNotFound is the catalog's "table does not exist" as the engine's
// scan.ErrTableNotFound, reading as the catalog's one sentence.
type scanNotFound struct{ err error }

func (e scanNotFound) Error() string        { return e.err.Error() }
func (e scanNotFound) Unwrap() error        { return e.err }
func (e scanNotFound) Is(target error) bool { return target == scan.ErrTableNotFound }
