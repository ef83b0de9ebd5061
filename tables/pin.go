package tables

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lakestream/lakestream/internal/scan"
)

// A Pin is a View in a form that can travel — in a Flight ticket, to
// another connection or node — and be read later: the lake snapshot, the
// data files of it read, and the log ranges. A query engine read whose
// context carries pins (WithPins) reads each pinned table as its pin says
// instead of capturing it anew, so that a plan made once is read the same
// by every endpoint, whenever its DoGet comes, and endpoints that each pin
// a part of one capture (some buckets, some lake files) read disjoint
// parts of one consistent snapshot.
//
// A pin holds no primary-key state: the live keys of a captured state
// cannot be found again later, so the table layer of a primary-key table
// is not pinnable (View.Pin) and is captured when it is read.
type Pin struct {
	Table int64 `json:"table"`
	Layer Layer `json:"layer,omitempty"`
	// SchemaID is the table's schema version when pinned: a pin of a
	// table altered since is refused (ErrPinStale), so that every
	// endpoint of a plan returns the schema it announced.
	SchemaID int32 `json:"schema,omitempty"`
	// Snapshot is the lake snapshot read, 0 for no lake rows. With Files
	// set only those data files of it are read, else all of them.
	Snapshot int64    `json:"snapshot,omitempty"`
	Files    []string `json:"files,omitempty"`
	// Ranges are the log ranges read.
	Ranges []Range `json:"ranges,omitempty"`
}

// ErrPinStale is the error of a pin whose table changed since it was
// pinned (dropped, or altered): plan the read again.
var ErrPinStale = errors.New("the table changed since the read was planned")

// Pin returns the view as a pin, reading all of it; ok is false for the
// table layer of a primary-key table (see Pin).
func (v *View) Pin() (p Pin, ok bool) {
	if v.pk != nil || len(v.remote) > 0 {
		return Pin{}, false
	}
	p = Pin{Table: v.def.ID, Layer: v.Layer, SchemaID: v.def.SchemaID, Snapshot: v.Lake.ID}
	p.Ranges = append(p.Ranges, v.Ranges...)
	return p, true
}

// Pinnable reports whether a read of layer of t can be pinned.
// A read of a table some of whose buckets this node reads from other
// nodes is not pinnable either: its plan is taken when it is read
// (docs/cluster.md, "Distributed queries").
func (t *Table) Pinnable(layer Layer) bool {
	if rem := t.store.cfg.Remote; rem != nil && layer != LayerLake && !rem.ServesAll(t.Def().ID, t.log.Buckets()) {
		return false
	}
	return layer != LayerTable || t.pk == nil
}

// Pinned is the view a pin describes. The pin comes from a client's
// ticket: its layer, buckets and files are checked (files by the lake,
// as ReadFiles does), and a lake snapshot expired since is the lake's
// error.
func (t *Table) Pinned(p Pin) (*View, error) {
	def := t.Def()
	switch {
	case p.Table != def.ID:
		return nil, fmt.Errorf("pin of table %d read as %s (%d)", p.Table, def.FullName(), def.ID)
	case p.SchemaID != def.SchemaID:
		return nil, fmt.Errorf("read %s: %w (schema version %d, now %d): plan it again", def.FullName(), ErrPinStale, p.SchemaID, def.SchemaID)
	case p.Layer < LayerTable || p.Layer > LayerChangelog:
		return nil, fmt.Errorf("read %s: pin of unknown layer %d", def.FullName(), p.Layer)
	case !t.Pinnable(p.Layer):
		return nil, fmt.Errorf("read %s: a primary-key table's state cannot be pinned", def.FullName())
	}
	v := &View{Table: t, Layer: p.Layer, def: def, Ranges: p.Ranges, files: p.Files}
	if p.Snapshot != 0 {
		if v.lake = t.Lake(); v.lake == nil {
			return nil, notTiered(t.Name())
		}
		v.Lake = LakeSnapshot{ID: p.Snapshot, Rows: -1}
	}
	for _, r := range p.Ranges {
		if r.Bucket < 0 || r.Bucket >= t.log.Buckets() || r.From < 0 || r.To < r.From {
			return nil, fmt.Errorf("read %s: pinned range %+v out of range", def.FullName(), r)
		}
	}
	return v, nil
}

// filesPart reads chosen data files of a lake snapshot, as one part.
type filesPart struct {
	lake     TableLake
	snapshot int64
	paths    []string
	cols     []int
}

func (p filesPart) Open(ctx context.Context) (scan.RecordStream, error) {
	return scan.Produce(ctx, 2, func(ctx context.Context, send func(arrow.RecordBatch) bool) error {
		return p.lake.ReadFiles(ctx, p.snapshot, p.paths, p.cols, nil, func(rec arrow.RecordBatch) error {
			rec.Retain()
			if !send(rec) {
				return ctx.Err()
			}
			return nil
		})
	}), nil
}

type pinsKey struct{}

// WithPins returns ctx carrying pins: the query engine's reads of those
// tables' layers (Store.Table) read them as pinned rather than capture
// them. A table pinned twice in one layer is read as its first pin.
func WithPins(ctx context.Context, pins []Pin) context.Context {
	return context.WithValue(ctx, pinsKey{}, pins)
}

func pinOf(ctx context.Context, table int64, layer Layer) (Pin, bool) {
	pins, _ := ctx.Value(pinsKey{}).([]Pin)
	for _, p := range pins {
		if p.Table == table && p.Layer == layer {
			return p, true
		}
	}
	return Pin{}, false
}

// Resolved is a table layer the query engine resolved (RecordResolved).
type Resolved struct {
	Table *Table
	Layer Layer
}

// Resolutions collects the table layers the query engine resolves
// through Store.Table under a context of RecordResolved: what a query
// reads, found as DuckDB binds it.
type Resolutions struct {
	mu   sync.Mutex
	list []Resolved
}

type resolutionsKey struct{}

// RecordResolved returns ctx and the Resolutions that the engine's
// resolutions under it are added to.
func RecordResolved(ctx context.Context) (context.Context, *Resolutions) {
	r := &Resolutions{}
	return context.WithValue(ctx, resolutionsKey{}, r), r
}

// List is every resolution, in order (a table named twice is listed twice).
func (r *Resolutions) List() []Resolved {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Resolved(nil), r.list...)
}

func recordResolved(ctx context.Context, t *Table, layer Layer) {
	if r, _ := ctx.Value(resolutionsKey{}).(*Resolutions); r != nil {
		r.mu.Lock()
		r.list = append(r.list, Resolved{t, layer})
		r.mu.Unlock()
	}
}
