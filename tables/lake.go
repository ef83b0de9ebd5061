package tables

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lakestream/lakestream/catalog"
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
	// columns in the table's current types.
	Parts(ctx context.Context, snapshot int64, req scan.Request) ([]scan.Part, error)
	// ReadFiles sends the records of the data files paths of snapshot,
	// with the table columns cols, in the table's types, to send (which
	// must not keep them). A path that is not a data file of that
	// snapshot, or a snapshot no longer kept, is an error: the paths come
	// from a client's ticket.
	ReadFiles(ctx context.Context, snapshot int64, paths []string, cols []int, send func(arrow.RecordBatch) error) error
	History
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
	Rows int64
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
