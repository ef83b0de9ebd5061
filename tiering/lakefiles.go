package tiering

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go/table"

	"github.com/lakestream/lakestream/tables"
)

// Split implements tables.LakeFiles: the snapshot and the offsets of one
// lake state, and the snapshot's data files.
func (h lakeReader) Split(ctx context.Context) (tables.LakeSplit, error) {
	st := h.lt.state.Load()
	split := tables.LakeSplit{Offsets: append([]int64(nil), st.offsets...)}
	snap := st.tbl.CurrentSnapshot()
	if snap == nil {
		return split, nil
	}
	tasks, err := st.tbl.Scan().PlanFiles(ctx)
	if err != nil {
		return split, fmt.Errorf("plan lake scan of %s: %w", h.lt.t.Name(), err)
	}
	split.Snapshot = snap.SnapshotID
	for _, task := range tasks {
		split.Files = append(split.Files, task.File.FilePath())
		split.Rows += task.File.Count()
	}
	return split, nil
}

// ReadFiles implements tables.LakeFiles. The paths come from a client's
// ticket: each must be a data file of the snapshot, found by planning it.
// The files are read as a union read's lake parts are (through the read
// cache), in the table's types.
func (h lakeReader) ReadFiles(ctx context.Context, snapshot int64, paths []string, cols []int, send func(arrow.RecordBatch) error) error {
	st := h.lt.state.Load()
	t := h.lt.t
	snap := st.tbl.SnapshotByID(snapshot)
	if snap == nil {
		return fmt.Errorf("lake snapshot %d of %s is no longer kept (expired by maintenance): plan the scan again", snapshot, t.Name())
	}
	// A scan of a snapshot reads it in the snapshot's schema: a column
	// added since is not selected, and reads as nulls (conformLakeRecord).
	snapSchema := st.tbl.Schema()
	for _, sc := range st.tbl.Metadata().Schemas() {
		if snap.SchemaID != nil && sc.ID == *snap.SchemaID {
			snapSchema = sc
		}
	}
	out, err := projectColumns(t.Schema(), cols, t.Name())
	if err != nil {
		return err
	}
	var names []string
	for _, f := range out.Fields() {
		if _, ok := snapSchema.FindFieldByNameCaseInsensitive(f.Name); ok {
			names = append(names, f.Name)
		}
	}
	if len(names) == 0 { // only new columns: read one to count the rows
		names = append(names, snapSchema.Field(0).Name)
	}
	read := st.tbl.Scan(table.WithSnapshotID(snapshot), table.WithSelectedFields(names...), table.WithCaseSensitive(false))
	tasks, err := read.PlanFiles(ctx)
	if err != nil {
		return fmt.Errorf("plan lake snapshot %d of %s: %w", snapshot, t.Name(), err)
	}
	byPath := make(map[string]table.FileScanTask, len(tasks))
	for _, task := range tasks {
		task.Residual = nil
		byPath[task.File.FilePath()] = task
	}
	for _, path := range paths {
		task, ok := byPath[path]
		if !ok {
			return fmt.Errorf("%q is not a data file of lake snapshot %d of %s", path, snapshot, t.Name())
		}
		part := &lakePart{scan: read, task: task, out: out, cols: cols, s: h.s, table: t.Def().ID}
		if err := sendPart(ctx, part, send); err != nil {
			return err
		}
	}
	return nil
}

// sendPart sends the records of part, releasing each once sent.
func sendPart(ctx context.Context, part *lakePart, send func(arrow.RecordBatch) error) error {
	rs, err := part.Open(ctx)
	if err != nil {
		return err
	}
	defer rs.Close()
	for {
		rec, err := rs.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		err = send(rec)
		rec.Release()
		if err != nil {
			return err
		}
	}
}
