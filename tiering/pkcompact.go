package tiering

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/lakestream/lakestream/tables"
)

// Compaction of a primary-key table (docs/lake.md, "Maintenance") applies
// the position deletes: it rewrites the data files with deleted rows (any,
// by default: Maintenance.PKDeletedShare), the files of a partition with
// many delete files, and a partition's small files, keeping only the rows
// live in the lake's state (the row maps keep the kept rows' runs), and
// removes the delete files none of whose data files remain. Dropping the
// deleted rows collapses the changelog those files held (the history
// hand-off then starts above it), so only files whose newest commit is
// older than the table's log.retention are rewritten: what a subscription
// may still need from there on is in the log.

// compactPK compacts a primary-key table's lake, in one replace commit
// that keeps the lake's state (and the tiered offsets) as they are, and
// returns the lake state after it and the number of data files rewritten.
func (s *Service) compactPK(ctx context.Context, lt *lakeTable, st *lakeState, m Maintenance) (*lakeState, int, error) {
	pk := st.pk
	cutoff := s.now().Add(-lt.t.Def().Options.LogRetention).UnixMicro()
	picked := s.pickPKCompaction(pk, m, cutoff)
	if len(picked) == 0 {
		return st, 0, nil
	}
	tbl := st.tbl
	fs, err := tbl.FS(ctx)
	if err != nil {
		return st, 0, err
	}
	w, err := newLakeWriter(ctx, tbl, s.cfg.Mem)
	if err != nil {
		return st, 0, err
	}
	gone := map[string]bool{}
	var old []iceberg.DataFile
	for _, group := range picked {
		for _, f := range group {
			if err := s.copyLiveRows(ctx, fs, w, f, pk.state); err != nil {
				w.abort()
				return st, 0, err
			}
			old = append(old, f.df)
			gone[f.df.FilePath()] = true
		}
		if err := w.closeAll(); err != nil { // one partition, its own files
			w.abort()
			return st, 0, err
		}
	}
	added, err := w.finish()
	if err != nil {
		w.abort()
		return st, 0, err
	}
	// Delete files none of whose data files remain.
	var dropDels []iceberg.DataFile
	for _, p := range slices.Sorted(maps.Keys(pk.deletes)) {
		d := pk.deletes[p]
		if !slices.ContainsFunc(d.targets, func(t string) bool { return pk.files[t] != nil && !gone[t] }) {
			dropDels = append(dropDels, d.df)
		}
	}
	tx := tbl.NewTransaction()
	if err := tx.ReplaceFiles(ctx, old, added, dropDels, ownSnapshot(st), table.WithoutAutoNameMapping()); err != nil {
		w.abort()
		return st, 0, err
	}
	next, err := tx.Commit(ctx)
	if errors.Is(err, table.ErrCommitFailed) {
		w.abort()
		return st, 0, nil // a concurrent commit; the next pass compacts
	}
	if err != nil {
		return st, 0, err
	}
	npk, err := pk.withCompaction(gone, added, w.maps, dropDels)
	if err != nil {
		return st, 0, err
	}
	return &lakeState{tbl: next, offsets: st.offsets, pk: npk}, len(old), nil
}

// pickPKCompaction returns, per partition, the data files to rewrite:
// of the files whose newest commit is before cutoff (unix micros), those
// with a deleted row and PKDeletedShare of their rows deleted or more;
// those with deleted rows in a partition with CompactMinFiles delete files
// or more; and a partition's small files once it has CompactMinFiles of
// them.
func (s *Service) pickPKCompaction(pk *pkLake, m Maintenance, cutoff int64) [][]*pkFile {
	type cand struct {
		f       *pkFile
		deleted int64
	}
	parts := map[string][]cand{}
	for _, p := range slices.Sorted(maps.Keys(pk.files)) {
		f := pk.files[p]
		var newest, deleted int64
		for _, r := range f.rows {
			newest = max(newest, r.commit)
			if !isState(r.change) {
				deleted += r.rows
				continue
			}
			for off := r.offset; off < r.end(); off++ {
				if !pk.state.Live(int(r.bucket), off) {
					deleted++
				}
			}
		}
		if newest >= cutoff {
			continue
		}
		k := partitionKeyOf(f.df)
		parts[k] = append(parts[k], cand{f, deleted})
	}
	delFiles := map[string]int{}
	for _, d := range pk.deletes {
		delFiles[partitionKeyOf(d.df)]++
	}
	var out [][]*pkFile
	for _, k := range slices.Sorted(maps.Keys(parts)) {
		cands := parts[k]
		many := delFiles[k] >= m.CompactMinFiles
		small := 0
		for _, c := range cands {
			if c.f.df.FileSizeBytes() < m.CompactSmallBytes {
				small++
			}
		}
		var group []*pkFile
		for _, c := range cands {
			rows := c.f.rows.rows()
			switch {
			case c.deleted > 0 && float64(c.deleted) >= m.PKDeletedShare*float64(rows),
				many && c.deleted > 0,
				small >= m.CompactMinFiles && c.f.df.FileSizeBytes() < m.CompactSmallBytes:
				group = append(group, c.f)
			}
		}
		if len(group) == 0 {
			continue
		}
		// In log order, so that each output file's rows of a bucket are in
		// offset order as they were.
		slices.SortFunc(group, func(a, b *pkFile) int {
			ra, rb := a.rows[0], b.rows[0]
			if ra.bucket != rb.bucket {
				return int(ra.bucket - rb.bucket)
			}
			return compareInt(ra.offset, rb.offset)
		})
		out = append(out, group)
	}
	return out
}

// partitionKeyOf identifies the partition of a data or delete file.
func partitionKeyOf(df iceberg.DataFile) string {
	part := df.Partition()
	ids := slices.Sorted(maps.Keys(part))
	vals := make([]any, len(ids))
	for i, id := range ids {
		vals[i] = part[id]
	}
	return fmt.Sprint(df.SpecID(), ids, partitionKey(vals))
}

// copyLiveRows writes to w the rows of data file f that are live in state,
// in f's partition, with their runs. Each decoded batch is filtered once
// (a file with deletes spread over it would otherwise be written in
// ranges of a few rows, each a Parquet write and a row-map slice).
func (s *Service) copyLiveRows(ctx context.Context, fs icebergio.IO, w *lakeWriter, f *pkFile, state tables.PKState) error {
	df, m := f.df, f.rows
	part := df.Partition()
	vals := make([]any, len(w.fields))
	for i, pf := range w.fields {
		vals[i] = part[pf.id]
	}
	keep, kept := liveRows(m, state)
	pr, ar, err := openParquet(fs, df.FilePath(), s.cfg.Mem)
	if err != nil {
		return err
	}
	defer pr.Close()
	rr, err := ar.GetRecordReader(ctx, nil, nil)
	if err != nil {
		return fmt.Errorf("read lake file %s: %w", df.FilePath(), err)
	}
	defer rr.Release()
	cur := runCursor{m: kept}
	var at int64
	for rr.Next() {
		n := rr.RecordBatch().NumRows()
		if at+n > int64(len(keep)) {
			return fmt.Errorf("lake file %s: more rows than its row map's %d", df.FilePath(), len(keep))
		}
		if err := s.copyKept(ctx, w, rr.RecordBatch(), keep[at:at+n], &cur, vals); err != nil {
			return fmt.Errorf("rewrite lake file %s: %w", df.FilePath(), err)
		}
		at += n
	}
	if err := rr.Err(); err != nil {
		return fmt.Errorf("read lake file %s: %w", df.FilePath(), err)
	}
	if at != m.rows() {
		return fmt.Errorf("lake file %s: read %d rows, its row map has %d", df.FilePath(), at, m.rows())
	}
	return nil
}

// liveRows returns, for the rows a row map describes, whether each is live
// in state, and the runs of the live ones.
func liveRows(m rowMap, state tables.PKState) ([]bool, rowMap) {
	keep := make([]bool, m.rows())
	var kept rowMap
	var row int64
	for _, r := range m {
		if isState(r.change) {
			for k := range r.rows {
				if state.Live(int(r.bucket), r.offset+k) {
					keep[row+k] = true
					kept = kept.add(run{bucket: r.bucket, offset: r.offset + k, rows: 1, commit: r.commit, change: r.change})
				}
			}
		}
		row += r.rows
	}
	return keep, kept
}

// copyKept writes the rows of rec that keep marks, with the next runs of
// cur.
func (s *Service) copyKept(ctx context.Context, w *lakeWriter, raw arrow.RecordBatch, keep []bool, cur *runCursor, vals []any) error {
	var n int
	for _, k := range keep {
		if k {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	rec, err := conformLakeRecord(raw, w.schema, s.cfg.Mem)
	if err != nil {
		return err
	}
	defer rec.Release()
	if n < len(keep) {
		b := array.NewBooleanBuilder(s.cfg.Mem)
		b.AppendValues(keep, nil)
		mask := b.NewBooleanArray()
		b.Release()
		defer mask.Release()
		filtered, err := compute.FilterRecordBatch(compute.WithAllocator(ctx, s.cfg.Mem), rec, mask, compute.DefaultFilterOptions())
		if err != nil {
			return err
		}
		defer filtered.Release()
		rec = filtered
	}
	return w.writeRange(rec, cur.next(int64(n)), 0, n, vals)
}

// runCursor hands out the runs of a row map in order, n rows at a time.
type runCursor struct {
	m    rowMap
	i    int   // the run the next row is in
	used int64 // rows of m[i] handed out
}

// next returns the runs of the next n rows (fewer at the end of m).
func (c *runCursor) next(n int64) rowMap {
	var out rowMap
	for n > 0 && c.i < len(c.m) {
		r := c.m[c.i]
		take := min(n, r.rows-c.used)
		out = append(out, run{bucket: r.bucket, offset: r.offset + c.used, rows: take, commit: r.commit, change: r.change})
		c.used += take
		n -= take
		if c.used == r.rows {
			c.i, c.used = c.i+1, 0
		}
	}
	return out
}

// withCompaction returns the pkLake after a compaction: the data files
// gone replaced by added (with their row maps), the delete files dropped
// removed; the state is unchanged.
func (p *pkLake) withCompaction(gone map[string]bool, added []iceberg.DataFile, addedMaps []rowMap, dropped []iceberg.DataFile) (*pkLake, error) {
	next := &pkLake{state: p.state, runs: make([][]lakeRun, len(p.runs)), files: maps.Clone(p.files), deletes: maps.Clone(p.deletes), legacy: p.legacy}
	for path := range gone {
		delete(next.files, path)
	}
	for i, df := range added {
		next.files[df.FilePath()] = &pkFile{df: df, rows: addedMaps[i]}
	}
	for _, d := range dropped {
		delete(next.deletes, d.FilePath())
	}
	for _, path := range slices.Sorted(maps.Keys(next.files)) {
		if err := fileRuns(path, next.files[path].rows, next.runs); err != nil {
			return nil, err
		}
	}
	for i := range next.runs {
		sortRuns(next.runs[i])
	}
	return next, nil
}
