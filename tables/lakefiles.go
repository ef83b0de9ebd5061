package tables

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"
)

// LakeSuffix names a tiered table's lake layer alone: "t$lake".
const LakeSuffix = "$lake"

// LakeFiles reads a tiered table's lake the way plain scans do: the data
// files of one lake snapshot, each whole. A scan captures a LakeSplit,
// then reads the log above its offsets and the snapshot's files, possibly
// in several requests (one per endpoint): the split pins what each reads,
// so that together they read every row once.
type LakeFiles interface {
	// Split returns the lake's current snapshot, its data files and
	// their rows, and each bucket's tiered offset, read together.
	Split(ctx context.Context) (LakeSplit, error)
	// ReadFiles sends the records of the data files paths of snapshot,
	// with the table columns cols, in the table's types, to send (which
	// must not keep them). A path that is not a data file of that
	// snapshot, or a snapshot no longer kept, is an error.
	ReadFiles(ctx context.Context, snapshot int64, paths []string, cols []int, send func(arrow.RecordBatch) error) error
}

// LakeSplit is a tiered table's lake state for a scan.
type LakeSplit struct {
	Snapshot int64    // the snapshot id; 0: the lake holds nothing yet
	Files    []string // its data files
	Rows     int64    // the rows of those files
	Offsets  []int64  // each bucket's tiered offset: the log holds the rest
}

type lakeFilesRef struct{ l LakeFiles }

// SetLakeFiles installs the table's lake reader (nil removes it).
func (t *Table) SetLakeFiles(l LakeFiles) {
	if l == nil {
		t.lakeFiles.Store(nil)
		return
	}
	t.lakeFiles.Store(&lakeFilesRef{l})
}

// LakeFiles returns the table's lake reader, or nil.
func (t *Table) LakeFiles() LakeFiles {
	if r := t.lakeFiles.Load(); r != nil {
		return r.l
	}
	return nil
}
