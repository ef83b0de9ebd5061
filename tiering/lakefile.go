package tiering

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/lakestream/lakestream/internal/bucket"
	"github.com/lakestream/lakestream/internal/scan"
)

// Lakestream writes the lake's data files itself (rather than through
// iceberg-go's Append) so that each file carries its row map (rowmap.go):
// rows are split by partition, each partition's rows go to its own Parquet
// file in the order they come, and the file's footer records where in the
// log each of its rows came from.

const (
	// lakeRowGroupRows bounds a row group: the unit a history read
	// decodes, and row-group pruning's grain.
	lakeRowGroupRows = 128 << 10
	// lakeDictionaryBytes bounds a column chunk's dictionary: a column of
	// (nearly) unique values falls back to plain encoding early instead of
	// writing a dictionary as large as its values. (iceberg-go's 2 MiB
	// limit has that effect on its 1M-row row groups, not on these.)
	lakeDictionaryBytes = 128 << 10
	// lakeTargetFileBytes rolls a partition's file over at this size.
	lakeTargetFileBytes = 512 << 20
)

// lakeWriter writes the data files of one commit (a tiering round or a
// compaction). It is not safe for concurrent use.
type lakeWriter struct {
	tbl    *table.Table
	schema *arrow.Schema // the table's Iceberg schema in Arrow, with field ids
	spec   iceberg.PartitionSpec
	fields []partitionField
	fs     icebergio.WriteFileIO
	loc    table.LocationProvider
	mem    memory.Allocator
	prefix string // names this commit's files
	count  int

	open  map[string]*lakeFile // by partition key
	order []*lakeFile          // open files in the order they were opened
	done  []iceberg.DataFile
	maps  []rowMap // the row map of each file of done
	paths []string // every file created, for clean-up after a failure
}

// partitionField computes one partition field's value of a row.
type partitionField struct {
	id  int // the partition field id
	col int // the source column in the writer's schema
	// logBucket is set for the bucket(N, key) field: its value is the
	// row's log bucket (the log hashes the key as Iceberg does), or null
	// for a null key.
	logBucket bool
	value     func(arr arrow.Array, row int) (any, error)
}

// lakeFile is one open data file.
type lakeFile struct {
	key       string
	values    []any // partition values in spec order
	path      string
	out       *countingWriter
	fw        *pqarrow.FileWriter
	rows      rowMap
	rowsTotal int64
}

func newLakeWriter(ctx context.Context, tbl *table.Table, mem memory.Allocator) (*lakeWriter, error) {
	sch, err := table.SchemaToArrowSchema(tbl.Schema(), nil, true, false)
	if err != nil {
		return nil, fmt.Errorf("lake schema: %w", err)
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		return nil, err
	}
	wfs, ok := fs.(icebergio.WriteFileIO)
	if !ok {
		return nil, errors.New("the lake's file system is read-only")
	}
	loc, err := tbl.LocationProvider()
	if err != nil {
		return nil, err
	}
	w := &lakeWriter{
		tbl: tbl, schema: sch, spec: tbl.Spec(), fs: wfs, loc: loc, mem: mem,
		prefix: uuid.NewString(), open: map[string]*lakeFile{},
	}
	for _, f := range w.spec.Fields() {
		pf, err := w.partitionField(f)
		if err != nil {
			return nil, err
		}
		w.fields = append(w.fields, pf)
	}
	return w, nil
}

func (w *lakeWriter) partitionField(f iceberg.PartitionField) (partitionField, error) {
	src, ok := w.tbl.Schema().FindFieldByID(f.SourceID())
	if !ok {
		return partitionField{}, fmt.Errorf("partition field %s: source column %d is not in the schema", f.Name, f.SourceID())
	}
	col := scan.FieldIndex(w.schema, src.Name)
	if col < 0 {
		return partitionField{}, fmt.Errorf("partition field %s: no column %q", f.Name, src.Name)
	}
	pf := partitionField{id: f.FieldID, col: col}
	switch tr := f.Transform.(type) {
	case iceberg.BucketTransform:
		pf.logBucket = true
	case iceberg.IdentityTransform:
		pf.value = func(arr arrow.Array, row int) (any, error) { return icebergValue(arr, row) }
	case iceberg.TimeTransform:
		fn, err := tr.Transformer(src.Type)
		if err != nil {
			return partitionField{}, err
		}
		_, day := tr.(iceberg.DayTransform)
		pf.value = func(arr arrow.Array, row int) (any, error) {
			v, err := icebergValue(arr, row)
			if err != nil || v == nil {
				return nil, err
			}
			r := fn(v)
			switch {
			case !r.Valid:
				return nil, nil
			case day:
				return iceberg.Date(r.Val), nil
			}
			return r.Val, nil
		}
	default:
		return partitionField{}, fmt.Errorf("partition field %s: transform %s is not written by Lakestream", f.Name, f.Transform)
	}
	return pf, nil
}

// icebergValue is the value of arr at row as Iceberg's partition values
// hold it.
func icebergValue(arr arrow.Array, row int) (any, error) {
	if arr.IsNull(row) {
		return nil, nil
	}
	switch a := arr.(type) {
	case *array.Boolean:
		return a.Value(row), nil
	case *array.Int8:
		return int32(a.Value(row)), nil
	case *array.Int16:
		return int32(a.Value(row)), nil
	case *array.Int32:
		return a.Value(row), nil
	case *array.Int64:
		return a.Value(row), nil
	case *array.Float32:
		return a.Value(row), nil
	case *array.Float64:
		return a.Value(row), nil
	case *array.String:
		return a.Value(row), nil
	case *array.LargeString:
		return a.Value(row), nil
	case *array.Binary:
		return string(a.Value(row)), nil // comparable; converted when recorded
	case *array.Date32:
		return iceberg.Date(a.Value(row)), nil
	case *array.Time64:
		return iceberg.Time(a.Value(row)), nil
	case *array.Timestamp:
		if a.DataType().(*arrow.TimestampType).Unit != arrow.Microsecond {
			return nil, fmt.Errorf("timestamp unit %s", a.DataType())
		}
		return iceberg.Timestamp(a.Value(row)), nil
	case *array.Decimal128:
		return iceberg.Decimal{Val: a.Value(row), Scale: int(a.DataType().(*arrow.Decimal128Type).Scale)}, nil
	}
	return nil, fmt.Errorf("no partition value of type %s", arr.DataType())
}

// writeLog writes rec (in the writer's schema), the rows of log bucket
// bucket from offset on, committed at commit (unix micros) with the change
// types changes (nil: all append-only).
func (w *lakeWriter) writeLog(rec arrow.RecordBatch, bucket int, offset, commit int64, changes []byte) error {
	var m rowMap
	n := rec.NumRows()
	for i := int64(0); i < n; {
		j := i + 1
		var ct uint8
		if changes != nil {
			ct = changes[i]
			for j < n && changes[j] == ct {
				j++
			}
		} else {
			j = n
		}
		m = m.add(run{bucket: int32(bucket), offset: offset + i, rows: j - i, commit: commit, change: ct})
		i = j
	}
	return w.write(rec, m, bucket)
}

// write routes rec's rows, whose log positions m describes, to their
// partitions' files. logBucket is the log bucket of every row. Rows of one
// partition keep their order; when a record's rows fall in several
// partitions, each partition's rows are gathered into a record of their
// own (bucket.Split), and its row map holds their runs.
func (w *lakeWriter) write(rec arrow.RecordBatch, m rowMap, logBucket int) error {
	n := int(rec.NumRows())
	if n == 0 {
		return nil
	}
	if m.rows() != int64(n) {
		return fmt.Errorf("lake write: %d rows but a row map of %d", n, m.rows())
	}
	first, err := w.rowPartition(rec, 0, logBucket)
	if err != nil {
		return err
	}
	if w.onePartition(rec) {
		return w.writeRange(rec, m, 0, n, first)
	}
	// Most records hold one partition: the bucket, or a time partition of
	// rows that arrive in time order.
	parts := [][]any{first}
	ordinal := make([]int32, n)
	keys := map[string]int32{}
	cur := first
	for i := 1; i < n; i++ {
		next, err := w.rowPartition(rec, i, logBucket)
		if err != nil {
			return err
		}
		if equalValues(cur, next) {
			ordinal[i] = ordinal[i-1]
			continue
		}
		if len(keys) == 0 {
			keys[partitionKey(first)] = 0
		}
		k := partitionKey(next)
		o, ok := keys[k]
		if !ok {
			o = int32(len(parts))
			keys[k] = o
			parts = append(parts, next)
		}
		ordinal[i], cur = o, next
	}
	if len(parts) == 1 {
		return w.writeRange(rec, m, 0, n, first)
	}
	split, err := bucket.Split(rec, ordinal, len(parts), w.mem)
	if err != nil {
		return err
	}
	defer func() {
		for _, r := range split {
			if r != nil {
				r.Release()
			}
		}
	}()
	// Each partition's runs: its rows in order, cut where rec's next row
	// of the partition is not the next row.
	maps := make([]rowMap, len(parts))
	for i := 0; i < n; {
		j := i + 1
		for j < n && ordinal[j] == ordinal[i] {
			j++
		}
		for _, r := range m.slice(int64(i), int64(j)) {
			maps[ordinal[i]] = maps[ordinal[i]].add(r)
		}
		i = j
	}
	for o, part := range split {
		if err := w.writeRange(part, maps[o], 0, int(part.NumRows()), parts[o]); err != nil {
			return err
		}
	}
	return nil
}

// onePartition reports whether every row of rec is in one partition
// without looking at each: the table is partitioned by the log bucket
// alone (or not at all) and rec has no null key.
func (w *lakeWriter) onePartition(rec arrow.RecordBatch) bool {
	for _, f := range w.fields {
		if !f.logBucket || rec.Column(f.col).NullN() > 0 {
			return false
		}
	}
	return true
}

// rowPartition returns the partition values of row i.
func (w *lakeWriter) rowPartition(rec arrow.RecordBatch, i, logBucket int) ([]any, error) {
	if len(w.fields) == 0 {
		return nil, nil
	}
	vals := make([]any, len(w.fields))
	for k, f := range w.fields {
		col := rec.Column(f.col)
		switch {
		case f.logBucket:
			if logBucket < 0 {
				return nil, errors.New("lake write: rows of unknown bucket in a bucketed table")
			}
			if col.IsValid(i) {
				vals[k] = int32(logBucket)
			}
		default:
			v, err := f.value(col, i)
			if err != nil {
				return nil, fmt.Errorf("partition value of column %q: %w", w.schema.Field(f.col).Name, err)
			}
			vals[k] = v
		}
	}
	return vals, nil
}

func equalValues(a, b []any) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// writeRange writes rows [from, to) of rec, whose log positions m
// describes, to the file of partition vals.
func (w *lakeWriter) writeRange(rec arrow.RecordBatch, m rowMap, from, to int, vals []any) error {
	if m.rows() != int64(to-from) {
		return fmt.Errorf("lake write: %d rows but a row map of %d", to-from, m.rows())
	}
	f, err := w.file(vals)
	if err != nil {
		return err
	}
	part := rec
	if from != 0 || to != int(rec.NumRows()) {
		part = rec.NewSlice(int64(from), int64(to))
		defer part.Release()
	}
	if err := f.fw.WriteBuffered(part); err != nil {
		return fmt.Errorf("write %s: %w", f.path, err)
	}
	for _, r := range m {
		f.rows = f.rows.add(r)
	}
	f.rowsTotal += int64(to - from)
	if f.fw.RowGroupTotalBytesWritten()+f.out.n >= lakeTargetFileBytes {
		return w.closeFile(f)
	}
	return nil
}

// slice returns the runs of rows [from, to) of the rows m describes.
func (m rowMap) slice(from, to int64) rowMap {
	var out rowMap
	var at int64
	for _, r := range m {
		lo, hi := max(from, at), min(to, at+r.rows)
		at += r.rows
		if lo < hi {
			r.offset += lo - (at - r.rows)
			r.rows = hi - lo
			out = append(out, r)
		}
		if at >= to {
			break
		}
	}
	return out
}

// file returns the open file of partition vals, opening one if needed.
func (w *lakeWriter) file(vals []any) (*lakeFile, error) {
	key := partitionKey(vals)
	if f := w.open[key]; f != nil {
		return f, nil
	}
	rec := make(partitionRecord, len(vals))
	for i, v := range vals {
		rec[i] = v
	}
	dir := partitionDir(w.spec, rec, w.tbl.Schema())
	w.count++
	name := fmt.Sprintf("%s-%05d.parquet", w.prefix, w.count)
	p := w.loc.NewDataLocation(path.Join(dir, name))
	out, err := w.fs.Create(p)
	if err != nil {
		return nil, fmt.Errorf("create lake file %s: %w", p, err)
	}
	w.paths = append(w.paths, p)
	cw := &countingWriter{w: out}
	// iceberg-go's defaults (as Append would write), but for smaller row
	// groups and a smaller dictionary bound.
	props := parquet.NewWriterProperties(
		parquet.WithCompression(compress.Codecs.Zstd),
		parquet.WithCompressionLevel(table.ParquetCompressionLevelDefault),
		parquet.WithMaxRowGroupLength(lakeRowGroupRows),
		parquet.WithDataPageSize(table.ParquetPageSizeBytesDefault),
		parquet.WithDataPageVersion(parquet.DataPageV2),
		parquet.WithBatchSize(table.ParquetPageRowLimitDefault),
		parquet.WithDictionaryDefault(true),
		parquet.WithDictionaryPageSizeLimit(lakeDictionaryBytes),
		parquet.WithStats(true),
		parquet.WithAllocator(w.mem),
	)
	fw, err := pqarrow.NewFileWriter(w.schema, cw, props, pqarrow.NewArrowWriterProperties(pqarrow.WithAllocator(w.mem)))
	if err != nil {
		out.Close()
		return nil, fmt.Errorf("open lake file %s: %w", p, err)
	}
	f := &lakeFile{key: key, values: vals, path: p, out: cw, fw: fw}
	w.open[key] = f
	w.order = append(w.order, f)
	return f, nil
}

// partitionKey identifies a partition by its values.
func partitionKey(vals []any) string {
	b := make([]byte, 0, 32)
	for _, v := range vals {
		switch v := v.(type) {
		case nil:
			b = append(b, 'n')
		case int32:
			b = strconv.AppendInt(append(b, 'i'), int64(v), 10)
		case iceberg.Date:
			b = strconv.AppendInt(append(b, 'd'), int64(v), 10)
		default:
			b = fmt.Appendf(b, "%T:%v", v, v)
		}
		b = append(b, 0)
	}
	return string(b)
}

// partitionRecord is partition values as iceberg.StructLike.
type partitionRecord []any

func (p partitionRecord) Size() int            { return len(p) }
func (p partitionRecord) Get(pos int) any      { return p[pos] }
func (p partitionRecord) Set(pos int, val any) { p[pos] = val }

// closeFile finishes a file: its row map goes into the footer, and its
// DataFile, with statistics from the footer, joins the commit's.
func (w *lakeWriter) closeFile(f *lakeFile) error {
	delete(w.open, f.key)
	if err := f.fw.AppendKeyValueMetadata(rowMapKey, f.rows.encode()); err != nil {
		f.fw.Close()
		return err
	}
	if err := f.fw.Close(); err != nil { // closes the file too
		return fmt.Errorf("write lake file %s: %w", f.path, err)
	}
	meta, err := f.fw.FileMetadata()
	if err != nil {
		return err
	}
	values := make(map[int]any, len(w.fields))
	for i, pf := range w.fields {
		v := f.values[i]
		if s, ok := v.(string); ok && w.schema.Field(pf.col).Type.ID() == arrow.BINARY {
			v = []byte(s)
		}
		values[pf.id] = v
	}
	df, err := table.DataFileFromMetadata(table.DataFileArgs{
		Schema:          w.tbl.Schema(),
		Spec:            w.spec,
		Format:          iceberg.ParquetFile,
		Metadata:        meta,
		FilePath:        f.path,
		FileSize:        f.out.n,
		Content:         iceberg.EntryContentData,
		PartitionValues: values,
		Properties:      w.tbl.Properties(),
		FormatVersion:   w.tbl.Metadata().Version(),
	})
	if err != nil {
		return fmt.Errorf("lake file %s: %w", f.path, err)
	}
	w.done = append(w.done, df)
	w.maps = append(w.maps, f.rows)
	return nil
}

// closeAll closes every open file: rows written next go to new files.
func (w *lakeWriter) closeAll() error {
	for _, f := range w.order {
		if w.open[f.key] != f {
			continue
		}
		if err := w.closeFile(f); err != nil {
			return err
		}
	}
	w.order = nil
	return nil
}

// finish closes every open file and returns the DataFiles written.
func (w *lakeWriter) finish() ([]iceberg.DataFile, error) {
	if err := w.closeAll(); err != nil {
		return nil, err
	}
	return w.done, nil
}

// abort closes and deletes every file the writer created: nothing of them
// was committed.
func (w *lakeWriter) abort() {
	for _, f := range w.open {
		f.fw.Close()
	}
	w.open = map[string]*lakeFile{}
	for _, p := range w.paths {
		_ = w.fs.Remove(p)
	}
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w interface {
		Write([]byte) (int, error)
		Close() error
	}
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

func (c *countingWriter) Close() error { return c.w.Close() }
