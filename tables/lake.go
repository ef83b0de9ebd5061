package tables

import (
	"context"
	"errors"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lakestream/lakestream/catalog"
	"github.com/lakestream/lakestream/columnarlog"
	"github.com/lakestream/lakestream/internal/scan"
)

// Lake is the lake layer of a store's tables. The tiering service, which
// keeps each table's rows in an Iceberg table, implements it and attaches
// itself once (Store.SetLake); from then on tables asks it, and it never
// installs anything into a Table. A table it has no lake for
// (datalake.enabled false) is its log alone. See docs/architecture.md.
type Lake interface {
	// DDLHook is told of each table change once the catalog holds it, so
	// that the lake keeps the Iceberg tables in step with the definitions.
	DDLHook
	// Table returns the lake of the table with id, or nil when the table
	// has none.
	Table(id int64) TableLake
}

// TableLake is one table's lake: what its reads (View), subscriptions
// (History) and log retention need of it.
type TableLake interface {
	// Snapshot returns the lake's current snapshot and each bucket's
	// tiered offset committed with it, read together: the log holds every
	// row at or above those offsets.
	Snapshot() LakeSnapshot
	// Files returns the data files of snapshot, each read whole by a plain
	// scan.
	Files(ctx context.Context, snapshot int64) ([]LakeFile, error)
	// Parts plans the query engine's read of snapshot: one part per data
	// file that req's filters do not rule out, each returning req's
	// columns in the table's current types, and of its rows those live
	// keeps (see LiveRows; nil: the rows the snapshot's position deletes
	// leave).
	Parts(ctx context.Context, snapshot int64, req scan.Request, live LiveRows) ([]scan.Part, error)
	// ReadFiles sends the records of the data files paths of snapshot,
	// with the table columns cols, in the table's types, to send (which
	// must not keep them), keeping the rows live keeps as Parts does. A
	// path that is not a data file of that snapshot, or a snapshot no
	// longer kept, is an error: the paths come from a client's ticket.
	ReadFiles(ctx context.Context, snapshot int64, paths []string, cols []int, live LiveRows, send func(arrow.RecordBatch) error) error
	// ReadLive sends, for the key index's rebuild, the rows of bucket in
	// the lake's current snapshot that its position deletes leave, in
	// offset order, in the table's columns (all of them), each with its
	// offset and change type (fn must not keep them). It returns the
	// bucket's tiered offset in that snapshot: the log holds every change
	// from there on. Replaying them as the log's changes gives the keys
	// live at the tiered offset, whether the deletes left only the live
	// rows or the whole changelog.
	ReadLive(ctx context.Context, bucket int, fn func(rec arrow.RecordBatch, offsets []int64, changes []columnarlog.ChangeType) error) (int64, error)
	History
}

// LiveRows says which lake rows of a primary-key table a read keeps: those
// whose change records hold a live key's current row in the state the read
// captured (PKState implements it). A lake row's (bucket, offset) comes from
// its data file's row map; a file without one (rewritten by another engine)
// is read with its position deletes applied, all that is known of it.
type LiveRows interface {
	// Live reports whether the record at offset off of bucket is live.
	Live(bucket int, off int64) bool
	// AnyLive reports whether some record of bucket in [from, to) is:
	// files and row groups with none are skipped without being decoded.
	AnyLive(bucket int, from, to int64) bool
}

// LakeSnapshot is a lake state a read is pinned to.
type LakeSnapshot struct {
	ID      int64   // the Iceberg snapshot id; 0: nothing is tiered yet
	Rows    int64   // the rows of its data files
	Offsets []int64 // each bucket's tiered offset
}

// LakeFile is one data file of a lake snapshot.
type LakeFile struct {
	Path string
	Rows int64 // -1: unknown until read (the file has deletes)
}

// The suffixes of a table's virtual names (catalog.CutSuffixFold reads
// them): "t$lake" is t's lake layer alone, "t$changelog" its retained log
// as a changelog.
const (
	LakeSuffix      = catalog.LakeSuffix
	ChangelogSuffix = catalog.ChangelogSuffix
)

type lakeRef struct{ l Lake }

// SetLake attaches the lake layer of the store's tables (nil detaches it).
func (s *Store) SetLake(l Lake) {
	if l == nil {
		s.lake.Store(nil)
		return
	}
	s.lake.Store(&lakeRef{l})
	s.resyncAwaitingLake()
}

// resyncAwaitingLake rebuilds the key indexes that need the lake (openPK
// could not: the lake attaches after the tables open).
func (s *Store) resyncAwaitingLake() {
	s.mu.Lock()
	var waiting []*Table
	for _, t := range s.open {
		if t.pk != nil && t.pk.state.Load() == nil {
			waiting = append(waiting, t)
		}
	}
	s.mu.Unlock()
	for _, t := range waiting {
		t.pk.mu.Lock()
		err := t.pk.resyncLocked(context.Background())
		t.pk.mu.Unlock()
		if err != nil {
			s.cfg.Logger.Error("rebuild the key index from the lake", "table", t.Name(), "error", err)
		} else {
			s.cfg.Logger.Info("key index rebuilt from the lake", "table", t.Name())
		}
	}
}

func (s *Store) lakeLayer() Lake {
	if r := s.lake.Load(); r != nil {
		return r.l
	}
	return nil
}

// Lake returns the table's lake, or nil when it has none.
func (t *Table) Lake() TableLake {
	l := t.store.lakeLayer()
	if l == nil {
		return nil
	}
	return l.Table(t.Def().ID)
}

// Tiered returns each bucket's tiered offset, or nil when the table has no
// lake.
func (t *Table) Tiered() []int64 {
	if l := t.Lake(); l != nil {
		return l.Snapshot().Offsets
	}
	return nil
}

// ErrHistoryUnavailable is returned for a changelog below the retained log
// that the lake cannot give exactly: a file rewritten by another engine has
// no row map, or compaction collapsed the range. Retrying does not help; a
// start at or above the retained log, or above the offset the error names,
// does (docs/lake.md).
var ErrHistoryUnavailable = errors.New("the lake does not hold this history")

// ErrLakeSnapshotGone is returned for a read planned on a lake snapshot
// that maintenance expired since: the read is to be planned again.
var ErrLakeSnapshotGone = errors.New("lake snapshot no longer kept")
