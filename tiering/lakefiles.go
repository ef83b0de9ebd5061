package tiering

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go/table"

	"github.com/lakestream/lakestream/internal/scan"
	"github.com/lakestream/lakestream/tables"
)

// Table implements tables.Lake: the lake of the table with id, nil when it
// does not tier.
func (s *Service) Table(id int64) tables.TableLake {
	lt := s.lookup(id)
	if lt == nil {
		return nil
	}
	return lakeReader{s: s, lt: lt}
}

// Snapshot implements tables.TableLake: the snapshot and the offsets of
// the table's current lake state.
func (h lakeReader) Snapshot() tables.LakeSnapshot {
	st := h.lt.state.Load()
	out := tables.LakeSnapshot{Offsets: append([]int64(nil), st.offsets...)}
	if snap := st.tbl.CurrentSnapshot(); snap != nil {
		out.ID = snap.SnapshotID
		if snap.Summary != nil {
			out.Rows = snapshotRecords(snap)
		}
	}
	return out
}

// Files implements tables.TableLake.
func (h lakeReader) Files(ctx context.Context, snapshot int64) ([]tables.LakeFile, error) {
	r, err := h.planSnapshot(ctx, snapshot, nil, nil)
	if err != nil {
		return nil, err
	}
	tasks := r.tasks
	files := make([]tables.LakeFile, len(tasks))
	for i, task := range tasks {
		files[i] = tables.LakeFile{Path: task.File.FilePath(), Rows: task.File.Count()}
		if len(task.DeleteFiles) > 0 || len(task.EqualityDeleteFiles) > 0 {
			files[i].Rows = -1 // known once its deletes are read
		}
	}
	return files, nil
}

// ReadFiles implements tables.TableLake. The paths come from a client's
// ticket: each must be a data file of the snapshot, found by planning it.
// The files are read as the engine's lake parts are (through the read
// cache, keeping the rows live keeps), in the table's types.
func (h lakeReader) ReadFiles(ctx context.Context, snapshot int64, paths []string, cols []int, live tables.LiveRows, send func(arrow.RecordBatch) error) error {
	r, err := h.planSnapshot(ctx, snapshot, cols, nil)
	if err != nil {
		return err
	}
	byPath := make(map[string]table.FileScanTask, len(r.tasks))
	for _, task := range r.tasks {
		byPath[task.File.FilePath()] = task
	}
	for _, path := range paths {
		task, ok := byPath[path]
		if !ok {
			return fmt.Errorf("%q is not a data file of lake snapshot %d of %s", path, snapshot, h.lt.t.Name())
		}
		if err := scan.Send(ctx, r.part(h, task, live), send); err != nil {
			return err
		}
	}
	return nil
}

// Metadata returns the Iceberg metadata of the lake table of the table with
// id as Lakestream last committed or loaded it (the state reads capture),
// and its metadata file's location; ok is false when the table has no lake
// here (it does not tier, or its lake is quarantined). The node's Iceberg
// REST catalog serves it (docs/lake.md).
func (s *Service) Metadata(id int64) (location string, md table.Metadata, ok bool) {
	lt := s.lookup(id)
	if lt == nil {
		return "", nil, false
	}
	st := lt.state.Load()
	return st.tbl.MetadataLocation(), st.tbl.Metadata(), true
}
