package tiering

import (
	"context"
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/lakestream/lakestream/internal/scan"
	"github.com/lakestream/lakestream/tables"
)

// SystemTable returns the system table db.name the service serves
// ("lakestream.tiering", each bucket's tiering state), or nil.
func (s *Service) SystemTable(db, name string) scan.Table {
	if isStatusTable(db, name) {
		return statusTable{s}
	}
	return nil
}

func snapshotRecords(snap *table.Snapshot) int64 {
	var n int64
	fmt.Sscan(snap.Summary.Properties["total-records"], &n)
	return n
}

// snapshotRead is a planned read of data files of one lake snapshot: the
// Iceberg scan that reads them, in the snapshot's schema, and the tasks of
// the files the filters did not rule out.
type snapshotRead struct {
	scan  *table.Scan
	tasks []table.FileScanTask
	out   *arrow.Schema // the table columns cols, in the table's current types
	cols  []int
	fs    icebergio.IO
	dels  *posDeletes // the tasks' position delete files, each read once
}

// planSnapshot plans a read of the table columns cols of snapshot. The
// filters prune files (partition and column statistics); the files are
// then read whole, without a row filter: the engine applies every filter
// again, and a file read whole can be cached whole. Columns added after the
// snapshot are not in its schema: they are not read, and come back as nulls
// (conformLakeRecord), and filters on them prune nothing.
//
// A manifest found missing (another engine's maintenance deleted it) makes
// it read the table's metadata again and plan once more (refresh), so that
// external maintenance does not make reads fail.
func (h lakeReader) planSnapshot(ctx context.Context, snapshot int64, cols []int, filters []scan.Filter) (*snapshotRead, error) {
	st := h.lt.state.Load()
	r, err := h.planSnapshotOf(ctx, st, snapshot, cols, filters)
	if err != nil && notExist(err) {
		if st, err = h.s.refresh(ctx, h.lt, st); err != nil {
			return nil, err
		}
		r, err = h.planSnapshotOf(ctx, st, snapshot, cols, filters)
	}
	return r, err
}

func (h lakeReader) planSnapshotOf(ctx context.Context, st *lakeState, snapshot int64, cols []int, filters []scan.Filter) (*snapshotRead, error) {
	t := h.lt.t
	snap, err := readSnapshot(st, snapshot, t.Name())
	if err != nil {
		return nil, err
	}
	snapshot = snap.SnapshotID
	snapSchema := st.tbl.Schema()
	for _, sc := range st.tbl.Metadata().Schemas() {
		if snap.SchemaID != nil && sc.ID == *snap.SchemaID {
			snapSchema = sc
		}
	}
	schema := t.Schema()
	out, err := scan.ProjectSchema(schema, cols)
	if err != nil {
		return nil, fmt.Errorf("scan %s: %w", t.Name(), err)
	}
	inSnapshot := func(c int) bool {
		_, ok := snapSchema.FindFieldByNameCaseInsensitive(schema.Field(c).Name)
		return ok
	}
	var names []string
	for _, c := range cols {
		if inSnapshot(c) {
			names = append(names, schema.Field(c).Name)
		}
	}
	if len(names) == 0 { // count(*), or only new columns: read one to count rows
		names = append(names, snapSchema.Field(0).Name)
	}
	var pushed []scan.Filter
	for _, f := range filters {
		if f.Column >= 0 && f.Column < schema.NumFields() && inSnapshot(f.Column) {
			pushed = append(pushed, f)
		}
	}
	opts := []table.ScanOption{table.WithSnapshotID(snapshot), table.WithSelectedFields(names...), table.WithCaseSensitive(false)}
	read := st.tbl.Scan(opts...)
	plan := read
	if expr := icebergFilter(schema, pushed); expr != nil {
		plan = st.tbl.Scan(append(opts, table.WithRowFilter(expr))...)
	}
	tasks, err := plan.PlanFiles(ctx)
	if err != nil {
		return nil, fmt.Errorf("plan lake snapshot %d of %s: %w", snapshot, t.Name(), err)
	}
	for i := range tasks {
		tasks[i].Residual = nil
	}
	fs, err := st.tbl.FS(ctx)
	if err != nil {
		return nil, err
	}
	return &snapshotRead{scan: read, tasks: tasks, out: out, cols: cols, fs: fs, dels: &posDeletes{fs: fs, mem: h.s.cfg.Mem}}, nil
}

// part is the read of one of the planned files, keeping the rows live
// keeps (lakekeep.go).
func (r *snapshotRead) part(h lakeReader, task table.FileScanTask, live tables.LiveRows) *lakePart {
	return &lakePart{scan: r.scan, task: task, out: r.out, cols: r.cols, s: h.s, table: h.lt.t.Def().ID, fs: r.fs, dels: r.dels, live: live}
}

// Parts implements tables.TableLake: one part per data file of snapshot
// that req's filters do not rule out.
func (h lakeReader) Parts(ctx context.Context, snapshot int64, req scan.Request, live tables.LiveRows) ([]scan.Part, error) {
	r, err := h.planSnapshot(ctx, snapshot, scan.Columns(req.Columns, h.lt.t.Schema().NumFields()), req.Filters)
	if err != nil {
		return nil, err
	}
	parts := make([]scan.Part, len(r.tasks))
	for i, task := range r.tasks {
		parts[i] = r.part(h, task, live)
	}
	return parts, nil
}

// icebergFilter turns the pushed filters into one Iceberg conjunction; a
// filter of a type it cannot express is left out (the engine applies every
// filter again, pushed ones only prune).
func icebergFilter(schema *arrow.Schema, filters []scan.Filter) iceberg.BooleanExpression {
	var exprs []iceberg.BooleanExpression
	for _, f := range filters {
		if f.Column < 0 || f.Column >= schema.NumFields() {
			continue
		}
		field := schema.Field(f.Column)
		if e := icebergPredicate(field, f); e != nil {
			exprs = append(exprs, e)
		}
	}
	switch len(exprs) {
	case 0:
		return nil
	case 1:
		return exprs[0]
	}
	return iceberg.NewAnd(exprs[0], exprs[1], exprs[2:]...)
}

func icebergPredicate(field arrow.Field, f scan.Filter) iceberg.BooleanExpression {
	if field.Type.ID() == arrow.LIST || field.Type.ID() == arrow.MAP || field.Type.ID() == arrow.STRUCT {
		return nil // iceberg-go's manifest evaluator binds no nested column
	}
	ref := iceberg.Reference(field.Name)
	switch f.Op {
	case "IS NULL":
		return iceberg.IsNull(ref)
	case "IS NOT NULL":
		return iceberg.NotNull(ref)
	}
	switch v := f.Value.(type) {
	case int8:
		return compare(ref, f.Op, int32(v))
	case int16:
		return compare(ref, f.Op, int32(v))
	case int32:
		return compare(ref, f.Op, v)
	case int64:
		return compare(ref, f.Op, v)
	case float32:
		if floatPushable(f.Op, float64(v)) {
			return compare(ref, f.Op, v)
		}
	case float64:
		if floatPushable(f.Op, v) {
			return compare(ref, f.Op, v)
		}
	case string:
		return compare(ref, f.Op, v)
	case bool:
		if f.Op == "=" { // iceberg-go filters rows with Arrow compute, which does not order booleans
			return compare(ref, f.Op, v)
		}
	case arrow.Date32:
		return compare(ref, f.Op, iceberg.Date(v))
	case arrow.Time64:
		if tt, ok := field.Type.(*arrow.Time64Type); ok && tt.Unit == arrow.Microsecond {
			return compare(ref, f.Op, iceberg.Time(v))
		}
	case arrow.Timestamp:
		if tt, ok := field.Type.(*arrow.TimestampType); ok && tt.Unit == arrow.Microsecond {
			return compare(ref, f.Op, iceberg.Timestamp(v))
		}
	case decimal128.Num:
		if dt, ok := field.Type.(*arrow.Decimal128Type); ok {
			return compare(ref, f.Op, iceberg.Decimal{Val: v, Scale: int(dt.Scale)})
		}
	}
	return nil
}

// floatPushable says whether a comparison of a float column can go to
// Iceberg, which reads NaN the IEEE way (never greater, never equal) while
// SQL (DuckDB) orders NaN above every number and equal to itself: x > c and
// x >= c hold for NaN rows in SQL, and a NaN value compares as SQL does.
// Only < and <= against a number agree.
func floatPushable(op string, v float64) bool {
	return !math.IsNaN(v) && (op == "<" || op == "<=")
}

func compare[T iceberg.LiteralType](ref iceberg.UnboundTerm, op string, v T) iceberg.BooleanExpression {
	switch op {
	case "=":
		return iceberg.EqualTo(ref, v)
	case "<":
		return iceberg.LessThan(ref, v)
	case "<=":
		return iceberg.LessThanEqual(ref, v)
	case ">":
		return iceberg.GreaterThan(ref, v)
	case ">=":
		return iceberg.GreaterThanEqual(ref, v)
	}
	return nil
}

// lakePart reads one data file.
type lakePart struct {
	scan  *table.Scan
	task  table.FileScanTask
	out   *arrow.Schema
	cols  []int // the table columns of out
	s     *Service
	table int64
	fs    icebergio.IO
	dels  *posDeletes
	live  tables.LiveRows // nil: the rows the position deletes leave
}

// lakeChunkRows is the rows of each record a part cut from cached columns
// sends.
const lakeChunkRows = 128 << 10

func (p *lakePart) Open(ctx context.Context) (scan.RecordStream, error) {
	return scan.Produce(ctx, 2, func(ctx context.Context, send func(arrow.RecordBatch) bool) error {
		if err := p.read(ctx, send); err != nil {
			return fmt.Errorf("read lake file %s: %w", p.task.File.FilePath(), err)
		}
		return nil
	}), nil
}

func (p *lakePart) read(ctx context.Context, send func(arrow.RecordBatch) bool) error {
	if p.live == nil && len(p.task.EqualityDeleteFiles) > 0 {
		// Equality deletes (written by another engine) match by value:
		// iceberg-go applies them, and the position deletes, as it reads.
		return p.stream(ctx, p.task, nil, send)
	}
	keep, err := p.keep(ctx)
	if err != nil {
		return err
	}
	if keep != nil && keep.kept == 0 {
		return nil // no row kept: the file is not read
	}
	raw := p.task
	raw.DeleteFiles = nil // applied by keep, after the read or the cache
	switch {
	case p.out.NumFields() == 0:
		// count(*): the rows kept are known without reading the file.
		n := p.task.File.Count()
		if keep != nil {
			n = keep.kept
		}
		for off := int64(0); off < n; off += lakeChunkRows {
			if !send(array.NewRecordBatch(p.out, nil, min(lakeChunkRows, n-off))) {
				return nil
			}
		}
		return nil
	case p.cacheable():
		return p.readCached(ctx, raw, keep, send)
	}
	if keep != nil {
		idx, err := p.s.fileIndex(p.fs, p.task.File.FilePath())
		if err != nil {
			return err
		}
		if keep.sparse(idx) {
			return p.streamRowGroups(ctx, idx, keep, send)
		}
	}
	return p.stream(ctx, raw, keep, send)
}

// keep returns the rows of the file the part keeps; nil: all of them.
func (p *lakePart) keep(ctx context.Context) (*rowKeep, error) {
	path := p.task.File.FilePath()
	if p.live != nil {
		idx, err := p.s.fileIndex(p.fs, path)
		if err != nil {
			return nil, err
		}
		if idx.rows != nil {
			return keepLive(idx.rows, p.live), nil
		}
		// A file without a row map (rewritten by another engine): its
		// position deletes are all that is known of which rows are live.
	}
	if len(p.task.DeleteFiles) == 0 {
		return nil, nil
	}
	return p.dels.keepUndeleted(ctx, path, p.task.File.Count(), p.task.DeleteFiles)
}

// sendKept sends the rows of rec (the file's rows from row first on) that
// keep keeps, releasing rec; it reports whether to go on.
func (p *lakePart) sendKept(ctx context.Context, rec arrow.RecordBatch, first int64, keep *rowKeep, send func(arrow.RecordBatch) bool) (bool, error) {
	if keep == nil {
		return send(rec), nil
	}
	out, err := keep.filter(ctx, rec, first, p.s.cfg.Mem)
	rec.Release()
	if err != nil || out == nil {
		return err == nil, err
	}
	return send(out), nil
}

// cacheable says whether the part's columns go through the cache: whole
// files whose columns fit in a quarter of it (8 bytes a value is a floor
// of the decoded size).
func (p *lakePart) cacheable() bool {
	c := p.s.cache
	return c != nil && p.task.Start == 0 && p.task.File.Count()*int64(len(p.cols))*8 <= c.MaxBytes()/4
}

// stream reads the file (task) and sends its kept records as they come.
func (p *lakePart) stream(ctx context.Context, task table.FileScanTask, keep *rowKeep, send func(arrow.RecordBatch) bool) error {
	_, recs, err := p.scan.ReadTasks(ctx, []table.FileScanTask{task})
	if err != nil {
		return err
	}
	var row int64
	for rec, err := range recs {
		if err != nil {
			return err
		}
		// ReadTasks hands each record over: released once conformed.
		out, err := conformLakeRecord(rec, p.out, p.s.cfg.Mem)
		rec.Release()
		if err != nil {
			return err
		}
		n := out.NumRows()
		more, err := p.sendKept(ctx, out, row, keep, send)
		if err != nil || !more {
			return err
		}
		row += n
	}
	return nil
}

// readCached sends the file's kept rows from the cache, reading the file
// (task: all of the part's columns, no deletes) once when a column is
// missing.
func (p *lakePart) readCached(ctx context.Context, task table.FileScanTask, keep *rowKeep, send func(arrow.RecordBatch) bool) error {
	c := p.s.cache
	file := p.s.fileID(p.task.File.FilePath())
	cols := make([]arrow.Array, len(p.cols))
	defer func() {
		for _, a := range cols {
			if a != nil {
				a.Release()
			}
		}
	}()
	complete := true
	for i, col := range p.cols {
		if cols[i] = c.GetLake(p.table, file, col); cols[i] == nil {
			complete = false
		}
	}
	if !complete {
		read, own, err := p.readWholeOwn(ctx)
		if err == nil && !own {
			read, err = p.readWhole(ctx, task)
		}
		if err != nil {
			return err
		}
		for i, col := range p.cols {
			if cols[i] != nil {
				cols[i].Release()
			}
			cols[i] = read[i]
			c.PutLake(p.table, file, col, read[i])
		}
	}
	n := int64(cols[0].Len())
	for off := int64(0); off < n; off += lakeChunkRows {
		end := min(n, off+lakeChunkRows)
		if keep != nil && keep.count(off, end) == 0 {
			continue
		}
		slices := make([]arrow.Array, len(cols))
		for i, a := range cols {
			slices[i] = array.NewSlice(a, off, end)
		}
		rec := array.NewRecordBatch(p.out, slices, end-off)
		for _, a := range slices {
			a.Release()
		}
		more, err := p.sendKept(ctx, rec, off, keep, send)
		if err != nil || !more {
			return err
		}
	}
	return nil
}

// readWhole reads the part's columns of the whole file, one array each.
func (p *lakePart) readWhole(ctx context.Context, task table.FileScanTask) ([]arrow.Array, error) {
	_, recs, err := p.scan.ReadTasks(ctx, []table.FileScanTask{task})
	if err != nil {
		return nil, err
	}
	chunks := make([][]arrow.Array, len(p.cols))
	defer func() {
		for _, cs := range chunks {
			for _, a := range cs {
				a.Release()
			}
		}
	}()
	for rec, err := range recs {
		if err != nil {
			return nil, err
		}
		out, err := conformLakeRecord(rec, p.out, p.s.cfg.Mem)
		rec.Release()
		if err != nil {
			return nil, err
		}
		for i := range p.cols {
			a := out.Column(i)
			a.Retain()
			chunks[i] = append(chunks[i], a)
		}
		out.Release()
	}
	whole := make([]arrow.Array, len(p.cols))
	for i, cs := range chunks {
		if len(cs) == 0 {
			whole[i] = array.MakeArrayOfNull(p.s.cfg.Mem, p.out.Field(i).Type, 0)
			continue
		}
		a, err := array.Concatenate(cs, p.s.cfg.Mem)
		if err != nil {
			for _, w := range whole[:i] {
				w.Release()
			}
			return nil, err
		}
		whole[i] = a
	}
	return whole, nil
}
