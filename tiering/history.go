package tiering

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"

	"github.com/lakestream/lakestream/columnarlog"
	"github.com/lakestream/lakestream/tables"
)

// The lake hand-off: a subscription that starts below a bucket's retained
// log reads the bucket's rows from the lake, in offset order, each with
// the position its file's row map gives it, up to the lake's tiered offset;
// the log continues from there (tables.Table.Follow). The lake state is
// captured once per call, so the rows sent are exactly [from, tiered) of
// one snapshot: every offset once, none skipped.

// lakeReader reads a lake table for tables.History (the hand-off) and
// tables.LakeFiles (plain scans).
type lakeReader struct {
	s  *Service
	lt *lakeTable
}

// errNoHistory reports lake rows whose log positions are unknown.
var errNoHistory = tables.ErrHistoryUnavailable

// historyPiece is a run of one bucket's rows in one data file.
type historyPiece struct {
	run
	file int   // index into the read's files
	row  int64 // the file row of the run's first row
}

// pieces returns the runs of bucket's offsets [from, end) in the lake
// state st, in offset order, with the files they are in, checking that
// they hold every offset of the range once.
func (h lakeReader) pieces(ctx context.Context, st *lakeState, bucket int, from, end int64) ([]historyPiece, []*lakeFileIndex, error) {
	snap := st.tbl.CurrentSnapshot()
	if snap == nil || from >= end {
		return nil, nil, nil
	}
	tasks, err := st.tbl.Scan().PlanFiles(ctx)
	if err != nil && notExist(err) {
		// Maintenance by another engine deleted a manifest: read the
		// metadata again (a rewrite keeps the rows; its files' row maps
		// are checked below).
		if st, err = h.s.refresh(ctx, h.lt, st); err != nil {
			return nil, nil, err
		}
		tasks, err = st.tbl.Scan().PlanFiles(ctx)
	}
	if err != nil {
		return nil, nil, err
	}
	fs, err := st.tbl.FS(ctx)
	if err != nil {
		return nil, nil, err
	}
	bucketField := -1
	spec := st.tbl.Spec()
	for _, f := range spec.Fields() {
		if _, ok := f.Transform.(iceberg.BucketTransform); ok {
			bucketField = f.FieldID
		}
	}
	var pieces []historyPiece
	var files []*lakeFileIndex
	for _, task := range tasks {
		df := task.File
		if bucketField >= 0 {
			// The file holds one lake bucket: the log bucket, or null keys
			// (log bucket 0).
			switch v := df.Partition()[bucketField].(type) {
			case nil:
				if bucket != 0 {
					continue
				}
			case int32:
				if int(v) != bucket {
					continue
				}
			}
		}
		idx, err := h.s.fileIndex(fs, df.FilePath())
		if err != nil {
			return nil, nil, err
		}
		if idx.rows == nil {
			return nil, nil, fmt.Errorf("%w: lake file %s has no row map (rewritten by another engine?): the log positions of its rows are unknown", errNoHistory, df.FilePath())
		}
		fi := len(files)
		added := false
		var row int64
		for _, r := range idx.rows {
			lo, hi := max(from, r.offset), min(end, r.end())
			if int(r.bucket) == bucket && lo < hi {
				p := historyPiece{run: r, file: fi, row: row + lo - r.offset}
				p.offset, p.rows = lo, hi-lo
				pieces = append(pieces, p)
				added = true
			}
			row += r.rows
		}
		if added {
			files = append(files, idx)
		}
	}
	slices.SortFunc(pieces, func(a, b historyPiece) int { return compareInt(a.offset, b.offset) })
	next := from
	for _, p := range pieces {
		if p.offset != next {
			if p.offset < next {
				return nil, nil, fmt.Errorf("lake table %s bucket %d: offset %d is in the lake twice", h.lt.t.Name(), bucket, p.offset)
			}
			break
		}
		next = p.end()
	}
	if next != end {
		if st.pk != nil {
			if exact := exactHistoryStart(st.pk.runs[bucket], end); exact > next {
				return nil, nil, fmt.Errorf("%w: lake table %s bucket %d: compaction kept only the rows live below offset %d, so the changelog from offset %d is no longer exact; the exact history starts at offset %d", errNoHistory, h.lt.t.Name(), bucket, exact, next, exact)
			}
		}
		return nil, nil, fmt.Errorf("%w: lake table %s bucket %d: offsets [%d, %d) are not in the lake's row maps", errNoHistory, h.lt.t.Name(), bucket, next, end)
	}
	return pieces, files, nil
}

// exactHistoryStart returns the first offset from which a primary-key
// table's lake runs of a bucket (sorted by offset) hold every offset up to
// end once: above the last offset a compaction dropped (pkcompact.go).
func exactHistoryStart(runs []lakeRun, end int64) int64 {
	at := end
	for i := len(runs) - 1; i >= 0; i-- {
		r := runs[i]
		if r.offset >= at {
			continue
		}
		if r.end() < at {
			return at // a gap [r.end(), at)
		}
		at = r.offset
	}
	return at
}

func compareInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// ReadHistory implements tables.History.
func (h lakeReader) ReadHistory(ctx context.Context, bucket int, from int64, cols []int, out chan<- arrow.RecordBatch) (int64, error) {
	st := h.lt.state.Load()
	if bucket < 0 || bucket >= len(st.offsets) {
		return 0, fmt.Errorf("history of %s: bucket %d out of range", h.lt.t.Name(), bucket)
	}
	end := st.offsets[bucket]
	pieces, files, err := h.pieces(ctx, st, bucket, from, end)
	if err != nil {
		return 0, fmt.Errorf("history of %s bucket %d from offset %d: %w", h.lt.t.Name(), bucket, from, err)
	}
	fs, err := st.tbl.FS(ctx)
	if err != nil {
		return 0, err
	}
	rd := &historyReader{s: h.s, t: h.lt.t, fs: fs, files: files}
	defer rd.close()
	for _, p := range pieces {
		if err := rd.send(ctx, p, bucket, cols, out); err != nil {
			return 0, fmt.Errorf("history of %s bucket %d: %w", h.lt.t.Name(), bucket, err)
		}
	}
	if err := rd.flush(ctx, bucket, cols, out); err != nil {
		return 0, fmt.Errorf("history of %s bucket %d: %w", h.lt.t.Name(), bucket, err)
	}
	return end, nil
}

// HistoryOffsetForTime implements tables.History.
func (h lakeReader) HistoryOffsetForTime(ctx context.Context, bucket int, ts int64) (int64, error) {
	st := h.lt.state.Load()
	if bucket < 0 || bucket >= len(st.offsets) {
		return 0, fmt.Errorf("history of %s: bucket %d out of range", h.lt.t.Name(), bucket)
	}
	end := st.offsets[bucket]
	var from int64
	if st.pk != nil {
		// Below a collapsed range the history is not exact: look from its
		// exact start, and refuse a time before it.
		from = exactHistoryStart(st.pk.runs[bucket], end)
	}
	pieces, _, err := h.pieces(ctx, st, bucket, from, end)
	if err != nil {
		return 0, fmt.Errorf("history of %s bucket %d: %w", h.lt.t.Name(), bucket, err)
	}
	// Commit times grow with offsets within a bucket.
	for i, p := range pieces {
		if p.commit >= ts {
			if i == 0 && from > 0 {
				return 0, fmt.Errorf("history of %s bucket %d: %w: compaction kept only the rows live below offset %d, so the changelog before it is no longer exact; the exact history starts at offset %d, committed after the time asked for", h.lt.t.Name(), bucket, errNoHistory, from, from)
			}
			return p.offset, nil
		}
	}
	return end, nil
}

// historyReader reads pieces of lake files, keeping the last row groups it
// decoded (interleaved pieces of a few files read each once).
type historyReader struct {
	s      *Service
	t      *tables.Table
	fs     icebergio.IO
	files  []*lakeFileIndex
	open   map[int]*openLakeFile
	cached []cachedRowGroup

	// the rows gathered for the next record
	pending       []arrow.RecordBatch
	runs          []tables.HistoryRun
	pendingRows   int64
	pendingOffset int64
}

type openLakeFile struct {
	pr *file.Reader
	ar *pqarrow.FileReader
}

type cachedRowGroup struct {
	file, rg int
	rec      arrow.RecordBatch // in the table's columns
}

const historyCachedRowGroups = 4

func (r *historyReader) close() {
	r.releasePending()
	for _, c := range r.cached {
		c.rec.Release()
	}
	r.cached = nil
	for _, o := range r.open {
		o.pr.Close()
	}
	r.open = nil
}

// historyBatchRows is the most rows a history record carries: pieces
// (runs of interleaved files can be a row or two) are gathered up to it.
const historyBatchRows = 64 << 10

// send adds piece p's rows to the pending record, sending it once full.
func (r *historyReader) send(ctx context.Context, p historyPiece, bucket int, cols []int, out chan<- arrow.RecordBatch) error {
	idx := r.files[p.file]
	row, left := p.row, p.rows
	for left > 0 {
		rg := idx.rowGroup(row)
		if rg < 0 {
			return fmt.Errorf("lake file %s: row %d is past its row groups", idx.path, row)
		}
		rec, err := r.rowGroup(ctx, p.file, rg)
		if err != nil {
			return err
		}
		first := row - idx.rgStart[rg]
		n := min(left, rec.NumRows()-first, historyBatchRows-r.pendingRows)
		if len(r.pending) == 0 {
			r.pendingOffset = p.offset + (p.rows - left)
		}
		r.pending = append(r.pending, rec.NewSlice(first, first+n))
		r.runs = append(r.runs, tables.HistoryRun{Rows: n, Commit: p.commit, Change: columnarlog.ChangeType(p.change)})
		r.pendingRows += n
		row, left = row+n, left-n
		if r.pendingRows == historyBatchRows {
			if err := r.flush(ctx, bucket, cols, out); err != nil {
				return err
			}
		}
	}
	return nil
}

// flush sends the pending rows as one changelog record.
func (r *historyReader) flush(ctx context.Context, bucket int, cols []int, out chan<- arrow.RecordBatch) error {
	if len(r.pending) == 0 {
		return nil
	}
	rec, err := concatRecords(r.t.Schema(), r.pending, r.s)
	r.releasePending()
	if err != nil {
		return err
	}
	cl, err := r.t.HistoryRecord(rec, cols, bucket, r.pendingOffset, r.runs)
	rec.Release()
	r.runs, r.pendingRows = r.runs[:0], 0
	if err != nil {
		return err
	}
	select {
	case out <- cl:
		return nil
	case <-ctx.Done():
		cl.Release()
		return ctx.Err()
	}
}

func (r *historyReader) releasePending() {
	for _, p := range r.pending {
		p.Release()
	}
	r.pending = r.pending[:0]
}

// rowGroup returns row group rg of file fi in the table's columns.
func (r *historyReader) rowGroup(ctx context.Context, fi, rg int) (arrow.RecordBatch, error) {
	for i, c := range r.cached {
		if c.file == fi && c.rg == rg {
			// most recently used last
			r.cached = append(append(r.cached[:i:i], r.cached[i+1:]...), c)
			return c.rec, nil
		}
	}
	idx := r.files[fi]
	o, err := r.openFile(fi)
	if err != nil {
		return nil, err
	}
	rr, err := o.ar.GetRecordReader(ctx, nil, []int{rg})
	if err != nil {
		return nil, fmt.Errorf("read lake file %s: %w", idx.path, err)
	}
	defer rr.Release()
	var recs []arrow.RecordBatch
	defer func() {
		for _, rec := range recs {
			rec.Release()
		}
	}()
	for rr.Next() {
		rec, err := conformLakeRecord(rr.RecordBatch(), r.t.Schema(), r.s.cfg.Mem)
		if err != nil {
			return nil, fmt.Errorf("read lake file %s: %w", idx.path, err)
		}
		recs = append(recs, rec)
	}
	if err := rr.Err(); err != nil {
		return nil, fmt.Errorf("read lake file %s: %w", idx.path, err)
	}
	rec, err := concatRecords(r.t.Schema(), recs, r.s)
	if err != nil {
		return nil, err
	}
	if want := idx.rgRows(rg); rec.NumRows() != want {
		rec.Release()
		return nil, fmt.Errorf("lake file %s row group %d: read %d rows, the footer says %d", idx.path, rg, rec.NumRows(), want)
	}
	if len(r.cached) == historyCachedRowGroups {
		r.cached[0].rec.Release()
		r.cached = r.cached[1:]
	}
	r.cached = append(r.cached, cachedRowGroup{file: fi, rg: rg, rec: rec})
	return rec, nil
}

func (r *historyReader) openFile(fi int) (*openLakeFile, error) {
	if o := r.open[fi]; o != nil {
		return o, nil
	}
	pr, ar, err := openParquet(r.fs, r.files[fi].path, r.s.cfg.Mem)
	if err != nil {
		return nil, err
	}
	if r.open == nil {
		r.open = map[int]*openLakeFile{}
	}
	o := &openLakeFile{pr: pr, ar: ar}
	r.open[fi] = o
	return o, nil
}

// concatRecords makes one record of recs (released by the caller).
func concatRecords(schema *arrow.Schema, recs []arrow.RecordBatch, s *Service) (arrow.RecordBatch, error) {
	if len(recs) == 1 {
		recs[0].Retain()
		return recs[0], nil
	}
	cols := make([]arrow.Array, schema.NumFields())
	var rows int64
	for _, rec := range recs {
		rows += rec.NumRows()
	}
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	for i := range cols {
		parts := make([]arrow.Array, len(recs))
		for j, rec := range recs {
			parts[j] = rec.Column(i)
		}
		if len(parts) == 0 {
			cols[i] = array.MakeArrayOfNull(s.cfg.Mem, schema.Field(i).Type, 0)
			continue
		}
		c, err := array.Concatenate(parts, s.cfg.Mem)
		if err != nil {
			return nil, err
		}
		cols[i] = c
	}
	return array.NewRecordBatch(schema, cols, rows), nil
}

// openParquet opens the lake data file at path: its Parquet reader, whose
// Close closes the file, and an Arrow reader over it.
func openParquet(fs icebergio.IO, path string, mem memory.Allocator) (*file.Reader, *pqarrow.FileReader, error) {
	f, err := fs.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("open lake file %s: %w", path, err)
	}
	pr, err := file.NewParquetReader(f)
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("read footer of lake file %s: %w", path, err)
	}
	ar, err := pqarrow.NewFileReader(pr, pqarrow.ArrowReadProperties{BatchSize: lakeRowGroupRows}, mem)
	if err != nil {
		pr.Close()
		return nil, nil, fmt.Errorf("open lake file %s: %w", path, err)
	}
	return pr, ar, nil
}

// lakeFileIndex is what the footer of a lake data file says: its row map
// (nil if it has none) and where its row groups start.
type lakeFileIndex struct {
	path    string
	rows    rowMap
	rgStart []int64 // first row of each row group, and the row count last
}

// rowGroup returns the row group holding row, or -1.
func (x *lakeFileIndex) rowGroup(row int64) int {
	i, found := slices.BinarySearch(x.rgStart, row)
	if !found {
		i--
	}
	if i < 0 || i >= len(x.rgStart)-1 {
		return -1
	}
	return i
}

func (x *lakeFileIndex) rgRows(rg int) int64 { return x.rgStart[rg+1] - x.rgStart[rg] }

// fileIndex reads (once; data files are immutable) the footer of the lake
// data file at path.
func (s *Service) fileIndex(fs icebergio.IO, path string) (*lakeFileIndex, error) {
	if x := s.footers.get(path); x != nil {
		return x, nil
	}
	pr, _, err := openParquet(fs, path, s.cfg.Mem)
	if err != nil {
		return nil, err
	}
	defer pr.Close()
	md := pr.MetaData()
	x := &lakeFileIndex{path: path, rgStart: make([]int64, 0, md.NumRowGroups()+1)}
	var rows int64
	for i := 0; i < md.NumRowGroups(); i++ {
		x.rgStart = append(x.rgStart, rows)
		rows += md.RowGroup(i).NumRows()
	}
	x.rgStart = append(x.rgStart, rows)
	if v := md.KeyValueMetadata().FindValue(rowMapKey); v != nil {
		m, err := decodeRowMap(*v)
		if err != nil {
			return nil, fmt.Errorf("lake file %s: %w", path, err)
		}
		if m.rows() != rows {
			return nil, fmt.Errorf("lake file %s: %w: it maps %d rows of %d", path, errBadRowMap, m.rows(), rows)
		}
		x.rows = m
	}
	s.footers.put(path, x)
	return x, nil
}

// footerCache keeps the footers of lake files read, by path, up to
// maxFooters of them: enough for the live files of the tables read, and
// emptied when full (files compacted away are never asked for again).
type footerCache struct {
	mu sync.Mutex
	m  map[string]*lakeFileIndex
}

const maxFooters = 16 << 10

func (c *footerCache) get(path string) *lakeFileIndex {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[path]
}

func (c *footerCache) put(path string, x *lakeFileIndex) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxFooters {
		c.m = map[string]*lakeFileIndex{}
	}
	c.m[path] = x
}
