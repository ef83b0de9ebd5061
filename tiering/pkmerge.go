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
			err := readPosDeletes(ctx, s, fs, d.df.FilePath(), func(path string, pos int64) {
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
	if err := tx.ReplaceFilesWithDeleteFiles(ctx, nil, nil, removed, added, nil, table.WithoutAutoNameMapping()); err != nil {
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
