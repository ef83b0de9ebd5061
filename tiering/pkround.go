package tiering

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// A round of a primary-key table (docs/lake.md, "Primary-key tables")
// tiers exactly one published state st of the table: every bucket from
// its tiered offset O[b] up to st.Ends()[b], a write boundary in every
// bucket, so that the snapshot is the table as of one write (MaxRoundRows
// does not cut it). The change records are written as a log table's rows
// are, row maps included, and the same commit adds position deletes that
// hide every row but each live key's current one:
//  1. every -U and -D row the round wrote (before images are never state);
//  2. every +I/+U row the round wrote that is not live in st;
//  3. every row of the lake live in its previous state and not in st.
//
// Every engine that applies position deletes (Spark, pyiceberg, iceberg-go)
// then reads one row per live key as of st; the data files still hold the
// whole changelog for the history hand-off, which ignores deletes.

// tryPKRound is tryRound for a primary-key table.
func (s *Service) tryPKRound(ctx context.Context, lt *lakeTable, st *lakeState) (RoundResult, error) {
	t := lt.t
	def := t.Def()
	tbl := st.tbl
	res := RoundResult{From: st.offsets, To: append([]int64(nil), st.offsets...)}
	pst, ok := t.PKState()
	if !ok {
		return res, fmt.Errorf("tier %s: the table has no primary-key state", def.FullName())
	}
	if !pst.Valid() {
		// The key index is being rebuilt from the lake (at start-up):
		// nothing to tier until the state is published.
		return res, nil
	}
	ends := pst.Ends()
	var backlog int64
	for b, end := range ends {
		if end < st.offsets[b] {
			if s.cfg.Leases != nil {
				// In a cluster: this replica's state is behind the previous
				// committer's; a state is tiered whole, so wait for it.
				return res, nil
			}
			return res, fmt.Errorf("table %s bucket %d: the lake is tiered to offset %d but the table's state ends at %d: the log lost acknowledged rows", def.FullName(), b, st.offsets[b], end)
		}
		backlog += end - st.offsets[b]
	}
	prev := st.pk
	if backlog == 0 && !prev.legacy {
		return res, nil
	}
	w, err := newLakeWriter(ctx, tbl, s.cfg.Mem)
	if err != nil {
		return res, fmt.Errorf("tier %s: %w", def.FullName(), err)
	}
	files, err := s.writeRound(ctx, t, w, nil, st.offsets, ends, &res)
	if err != nil {
		if !errors.Is(err, errFault) {
			w.abort()
		}
		return res, fmt.Errorf("tier %s: write: %w", def.FullName(), err)
	}
	if !equalOffsets(res.To, ends) {
		w.abort()
		return res, fmt.Errorf("tier %s: the log holds offsets up to %v, the table's state ends at %v", def.FullName(), res.To, ends)
	}
	// The positions to delete, by data file.
	targets := map[string][]int64{}
	newFiles := map[string]iceberg.DataFile{}
	for i, df := range files {
		newFiles[df.FilePath()] = df
		var row int64
		for _, r := range w.maps[i] {
			for k := range r.rows {
				if !isState(r.change) || !pst.Live(int(r.bucket), r.offset+k) {
					targets[df.FilePath()] = append(targets[df.FilePath()], row+k)
				}
			}
			row += r.rows
		}
	}
	if prev.legacy {
		// Rows an earlier version tiered: their before images and deletes.
		for path, f := range prev.files {
			var row int64
			for _, r := range f.rows {
				if !isState(r.change) {
					for k := range r.rows {
						targets[path] = append(targets[path], row+k)
					}
				}
				row += r.rows
			}
		}
	}
	for b := range ends {
		err := pst.EachDead(prev.state, b, st.offsets[b], func(off int64) error {
			p, row, ok := prev.locate(b, off)
			if !ok {
				return fmt.Errorf("bucket %d offset %d is live in the lake but in none of its data files", b, off)
			}
			targets[p] = append(targets[p], row)
			return nil
		})
		if err != nil {
			w.abort()
			return res, fmt.Errorf("tier %s: %w", def.FullName(), err)
		}
	}
	dels, err := w.writeDeletes(targets, func(p string) iceberg.DataFile {
		if df := newFiles[p]; df != nil {
			return df
		}
		return prev.files[p].df
	})
	if err != nil {
		w.abort()
		return res, fmt.Errorf("tier %s: position deletes: %w", def.FullName(), err)
	}
	delFiles := make([]iceberg.DataFile, len(dels))
	for i, d := range dels {
		delFiles[i] = d.df
	}
	tx := tbl.NewTransaction()
	summary := iceberg.Properties{offsetsKey: formatOffsets(res.To)}
	rd := tx.NewRowDelta(summary).AddRows(files...).AddDeletes(delFiles...)
	if err := rd.Commit(ctx); err != nil {
		w.abort()
		return res, fmt.Errorf("tier %s: %w", def.FullName(), err)
	}
	// An unknown outcome reloads the state, which rebuilds the lake's PK
	// state from whatever the table holds.
	next, err := s.commitRound(ctx, lt, tx, w, iceberg.Properties{offsetsKey: formatOffsets(res.To), pkDeletesKey: "true"}, &res)
	if err != nil || next == nil {
		return res, err
	}
	pk, err := prev.withRound(pst, files, w.maps, dels)
	if err != nil {
		// Committed, but the lake's state is not known here: read it back.
		return res, errors.Join(fmt.Errorf("tier %s: %w", def.FullName(), err), s.reload(ctx, lt))
	}
	lt.lastCommitNs.Store(int64(res.Commit))
	lt.state.Store(&lakeState{tbl: next, offsets: res.To, pk: pk})
	return res, nil
}

// The Arrow schema of a position delete file, with the reserved field ids
// of the Iceberg spec.
var posDeleteSchema = arrow.NewSchema([]arrow.Field{
	{Name: "file_path", Type: posDeletePathType, Metadata: arrow.NewMetadata([]string{"PARQUET:field_id"}, []string{"2147483546"})},
	{Name: "pos", Type: arrow.PrimitiveTypes.Int64, Metadata: arrow.NewMetadata([]string{"PARQUET:field_id"}, []string{"2147483545"})},
}, nil)

var posDeletePathType = &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}

// posDeleteStats makes the delete files' statistics exact: full lower
// and upper bounds of file_path (readers match a delete file to the data
// files it names by them; equal bounds name exactly one).
var posDeleteStats = iceberg.Properties{table.DefaultWriteMetricsModeKey: "full"}

// writeDeletes writes position delete files deleting the rows targets
// gives, by data file path (in any order), and returns them: one per
// partition of the data files named, with that partition's values, rows
// sorted by file_path then pos. file returns the DataFile of a path.
func (w *lakeWriter) writeDeletes(targets map[string][]int64, file func(string) iceberg.DataFile) ([]*pkDeletes, error) {
	type part struct {
		values map[int]any
		paths  []string
	}
	parts := map[string]*part{}
	var keys []string
	for p := range targets {
		df := file(p)
		vals := make([]any, len(w.fields))
		for i, f := range w.fields {
			vals[i] = df.Partition()[f.id]
		}
		k := partitionKey(vals)
		pt := parts[k]
		if pt == nil {
			pt = &part{values: df.Partition()}
			parts[k] = pt
			keys = append(keys, k)
		}
		pt.paths = append(pt.paths, p)
	}
	slices.Sort(keys)
	var out []*pkDeletes
	for _, k := range keys {
		pt := parts[k]
		slices.Sort(pt.paths)
		d, err := w.writeDeleteFile(pt.paths, targets, pt.values)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

// writeDeleteFile writes one position delete file of the rows of paths
// (sorted) in targets, in the partition of values.
func (w *lakeWriter) writeDeleteFile(paths []string, targets map[string][]int64, values map[int]any) (*pkDeletes, error) {
	vals := make(partitionRecord, len(w.fields))
	for i, f := range w.fields {
		vals[i] = values[f.id]
	}
	dir := partitionDir(w.spec, vals, w.tbl.Schema())
	w.count++
	p := w.loc.NewDataLocation(path.Join(dir, fmt.Sprintf("%s-%05d-deletes.parquet", w.prefix, w.count)))
	out, err := w.fs.Create(p)
	if err != nil {
		return nil, fmt.Errorf("create position delete file %s: %w", p, err)
	}
	w.paths = append(w.paths, p)
	cw := &countingWriter{w: out}
	props := parquet.NewWriterProperties(
		parquet.WithCompression(compress.Codecs.Zstd),
		parquet.WithMaxRowGroupLength(lakeRowGroupRows),
		parquet.WithDictionaryDefault(true),
		parquet.WithStats(true),
		parquet.WithAllocator(w.mem),
	)
	fw, err := pqarrow.NewFileWriter(posDeleteSchema, cw, props, pqarrow.NewArrowWriterProperties(pqarrow.WithAllocator(w.mem)))
	if err != nil {
		out.Close()
		return nil, fmt.Errorf("open position delete file %s: %w", p, err)
	}
	// file_path is dictionary-encoded in Arrow as in Parquet: each path
	// repeats for all its positions.
	dict := array.NewStringBuilder(w.mem)
	dict.AppendValues(paths, nil)
	dictArr := dict.NewArray()
	dict.Release()
	defer dictArr.Release()
	idx := array.NewInt32Builder(w.mem)
	defer idx.Release()
	ob := array.NewInt64Builder(w.mem)
	defer ob.Release()
	flush := func() error {
		ia := idx.NewArray()
		defer ia.Release()
		pa := array.NewDictionaryArray(posDeletePathType, ia, dictArr)
		defer pa.Release()
		oa := ob.NewArray()
		defer oa.Release()
		rec := array.NewRecordBatch(posDeleteSchema, []arrow.Array{pa, oa}, int64(oa.Len()))
		defer rec.Release()
		return fw.WriteBuffered(rec)
	}
	var n int64
	for i, fp := range paths {
		pos := targets[fp]
		slices.Sort(pos)
		for k, v := range pos {
			if k > 0 && pos[k-1] == v {
				continue
			}
			idx.Append(int32(i))
			ob.Append(v)
			n++
			if ob.Len() == 64<<10 {
				if err := flush(); err != nil {
					fw.Close()
					return nil, fmt.Errorf("write position delete file %s: %w", p, err)
				}
			}
		}
	}
	if ob.Len() > 0 {
		if err := flush(); err != nil {
			fw.Close()
			return nil, fmt.Errorf("write position delete file %s: %w", p, err)
		}
	}
	if err := fw.Close(); err != nil {
		return nil, fmt.Errorf("write position delete file %s: %w", p, err)
	}
	meta, err := fw.FileMetadata()
	if err != nil {
		return nil, err
	}
	df, err := table.DataFileFromMetadata(table.DataFileArgs{
		Schema:          iceberg.PositionalDeleteSchema,
		Spec:            w.spec,
		Format:          iceberg.ParquetFile,
		Metadata:        meta,
		FilePath:        p,
		FileSize:        cw.n,
		Content:         iceberg.EntryContentPosDeletes,
		PartitionValues: values,
		Properties:      posDeleteStats,
		FormatVersion:   w.tbl.Metadata().Version(),
	})
	if err != nil {
		return nil, fmt.Errorf("position delete file %s: %w", p, err)
	}
	if df.Count() != n {
		return nil, fmt.Errorf("position delete file %s: %d rows, %d written", p, df.Count(), n)
	}
	return &pkDeletes{df: df, targets: paths}, nil
}
