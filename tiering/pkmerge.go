package tiering

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
)

// mergePKDeletes merges, in each partition with CompactMinFiles position
// delete files or more, the delete files into one: every round adds one
// per partition it deletes in, and compaction (which applies them) waits
// for log.retention, so without merging readers would open ever more
// delete files per data file. Merging changes no row (the history stays
// exact): the merged file holds the positions of the data files still in
// the snapshot, and carries the largest data sequence number of the files
// it replaces, so it applies to exactly the data files they applied to
// (ReplaceFilesWithDeleteFiles). It returns the lake state after it and
// the number of delete files merged.
func (s *Service) mergePKDeletes(ctx context.Context, st *lakeState, m Maintenance) (*lakeState, int, error) {
	pk := st.pk
	parts := map[string][]*pkDeletes{}
	for _, p := range slices.Sorted(maps.Keys(pk.deletes)) {
		d := pk.deletes[p]
		k := partitionKeyOf(d.df)
		parts[k] = append(parts[k], d)
	}
	var groups [][]*pkDeletes
	for _, k := range slices.Sorted(maps.Keys(parts)) {
		if len(parts[k]) >= m.CompactMinFiles {
			groups = append(groups, parts[k])
		}
	}
	if len(groups) == 0 {
		return st, 0, nil
	}
	tbl := st.tbl
	fs, err := tbl.FS(ctx)
	if err != nil {
		return st, 0, err
	}
	seqs, err := deleteSequenceNumbers(tbl, fs)
	if err != nil {
		return st, 0, err
	}
	w, err := newLakeWriter(ctx, tbl, s.cfg.Mem)
	if err != nil {
		return st, 0, err
	}
	var removed []iceberg.DataFile
	var added []table.DeleteFileAddition
	var merged []*pkDeletes
	for _, g := range groups {
		targets := map[string][]int64{}
		var seq int64 = -1
		for _, d := range g {
			sn, ok := seqs[d.df.FilePath()]
			if !ok {
				w.abort()
				return st, 0, fmt.Errorf("delete file %s is not in the snapshot's delete manifests", d.df.FilePath())
			}
			seq = max(seq, sn)
			err := eachPosDelete(ctx, s, fs, d.df.FilePath(), func(path string, pos int64) {
				if pk.files[path] != nil {
					targets[path] = append(targets[path], pos)
				}
			}, func([]string) {})
			if err != nil {
				w.abort()
				return st, 0, err
			}
			removed = append(removed, d.df)
		}
		if len(targets) == 0 {
			continue
		}
		dels, err := w.writeDeletes(targets, func(p string) iceberg.DataFile { return pk.files[p].df })
		if err != nil {
			w.abort()
			return st, 0, err
		}
		for _, d := range dels {
			added = append(added, table.DeleteFileAddition{File: d.df, DataSequenceNumber: seq})
			merged = append(merged, d)
		}
	}
	tx := tbl.NewTransaction()
	if err := tx.ReplaceFilesWithDeleteFiles(ctx, nil, nil, removed, added, ownSnapshot(st), table.WithoutAutoNameMapping()); err != nil {
		w.abort()
		return st, 0, err
	}
	next, err := tx.Commit(ctx)
	if errors.Is(err, table.ErrCommitFailed) {
		w.abort()
		return st, 0, nil // a concurrent commit; the next pass merges
	}
	if err != nil {
		return st, 0, err
	}
	npk := *pk
	npk.deletes = maps.Clone(pk.deletes)
	for _, d := range removed {
		delete(npk.deletes, d.FilePath())
	}
	for _, d := range merged {
		npk.deletes[d.df.FilePath()] = d
	}
	return &lakeState{tbl: next, offsets: st.offsets, pk: &npk}, len(removed), nil
}

// deleteSequenceNumbers returns the data sequence number of each live
// delete file of tbl's current snapshot, by path.
func deleteSequenceNumbers(tbl *table.Table, fs icebergio.IO) (map[string]int64, error) {
	out := map[string]int64{}
	snap := tbl.CurrentSnapshot()
	if snap == nil {
		return out, nil
	}
	mans, err := snap.Manifests(fs)
	if err != nil {
		return nil, err
	}
	for _, man := range mans {
		if man.ManifestContent() != iceberg.ManifestContentDeletes {
			continue
		}
		entries, err := man.FetchEntries(fs, true)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			out[e.DataFile().FilePath()] = e.SequenceNum()
		}
	}
	return out, nil
}

// mergePKFiles merges, in each partition with CompactMinFiles small data
// files or more (too young for compaction, which applies the deletes),
// the small files into one, keeping every row and its row map, so the
// history stays exact: the rows deleted in the files merged (before
// images, deletes, rows not live in the lake's state) are deleted in the
// new file by a new position delete file. The replace and the delete
// file are two snapshots of one commit: readers of the table see both or
// neither. Delete files none of whose data files remain are removed. It
// returns the lake state after it and the number of data files merged.
func (s *Service) mergePKFiles(ctx context.Context, st *lakeState, m Maintenance) (*lakeState, int, error) {
	pk := st.pk
	parts := map[string][]*pkFile{}
	for _, p := range slices.Sorted(maps.Keys(pk.files)) {
		f := pk.files[p]
		if f.df.FileSizeBytes() < m.CompactSmallBytes {
			k := partitionKeyOf(f.df)
			parts[k] = append(parts[k], f)
		}
	}
	var groups [][]*pkFile
	for _, k := range slices.Sorted(maps.Keys(parts)) {
		if g := sizeTieredFiles(parts[k]); len(g) >= m.CompactMinFiles {
			// In log order, so that the new file's rows of a bucket are in
			// offset order as they were.
			slices.SortFunc(g, func(a, b *pkFile) int {
				ra, rb := a.rows[0], b.rows[0]
				if ra.bucket != rb.bucket {
					return int(ra.bucket - rb.bucket)
				}
				return compareInt(ra.offset, rb.offset)
			})
			groups = append(groups, g)
		}
	}
	if len(groups) == 0 {
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
	for _, g := range groups {
		for _, f := range g {
			if err := s.copyLakeFile(ctx, fs, w, f.df, f.rows); err != nil {
				w.abort()
				return st, 0, err
			}
			old = append(old, f.df)
			gone[f.df.FilePath()] = true
		}
		if err := w.closeAll(); err != nil {
			w.abort()
			return st, 0, err
		}
	}
	added, err := w.finish()
	if err != nil {
		w.abort()
		return st, 0, err
	}
	// The new files' deleted rows, from the lake's state.
	targets := map[string][]int64{}
	byPath := map[string]iceberg.DataFile{}
	for i, df := range added {
		byPath[df.FilePath()] = df
		var row int64
		for _, r := range w.maps[i] {
			for k := range r.rows {
				if !isState(r.change) || !pk.state.Live(int(r.bucket), r.offset+k) {
					targets[df.FilePath()] = append(targets[df.FilePath()], row+k)
				}
			}
			row += r.rows
		}
	}
	dels, err := w.writeDeletes(targets, func(p string) iceberg.DataFile { return byPath[p] })
	if err != nil {
		w.abort()
		return st, 0, err
	}
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
	if len(dels) > 0 {
		delFiles := make([]iceberg.DataFile, len(dels))
		for i, d := range dels {
			delFiles[i] = d.df
		}
		if err := tx.NewRowDelta(ownSnapshot(st)).AddDeletes(delFiles...).Commit(ctx); err != nil {
			w.abort()
			return st, 0, err
		}
	}
	next, err := tx.Commit(ctx)
	if errors.Is(err, table.ErrCommitFailed) {
		w.abort()
		return st, 0, nil // a concurrent commit; the next pass merges
	}
	if err != nil {
		return st, 0, err
	}
	npk, err := pk.withCompaction(gone, added, w.maps, dropDels)
	if err != nil {
		return st, 0, err
	}
	for _, d := range dels {
		npk.deletes[d.df.FilePath()] = d
	}
	return &lakeState{tbl: next, offsets: st.offsets, pk: npk}, len(old), nil
}

// sizeTieredFiles is sizeTiered for a primary-key table's files: smallest
// first, each while it is no larger than the files picked before it
// together, so that a byte is rewritten about log2(partition / round)
// times.
func sizeTieredFiles(files []*pkFile) []*pkFile {
	files = slices.Clone(files)
	slices.SortFunc(files, func(a, b *pkFile) int { return compareInt(a.df.FileSizeBytes(), b.df.FileSizeBytes()) })
	var sum int64
	for i, f := range files {
		if i >= 2 && f.df.FileSizeBytes() > sum {
			return files[:i]
		}
		sum += f.df.FileSizeBytes()
	}
	return files
}
