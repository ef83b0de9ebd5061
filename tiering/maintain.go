package tiering

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/table/compaction"
)

// Maintenance is the table maintenance policy. A table tiered every few
// seconds gains a snapshot, a manifest and a few small data files each
// round; without maintenance its metadata file, its manifest list and its
// planning time grow with every round. Manifests are merged as they are
// written (commit.manifest-merge.enabled); the rest runs here, after
// rounds, by the table's committer.
type Maintenance struct {
	// EveryRounds runs snapshot expiry and compaction after this many
	// rounds. Default 10.
	EveryRounds int
	// RetainSnapshots keeps at least this many recent snapshots. Default 20.
	RetainSnapshots int
	// SnapshotAge expires snapshots older than this, beyond the retained
	// ones. A query planned on an expired snapshot may find files it reads
	// replaced by compaction, so it is longer than any query. Default 10m;
	// negative means expire by count only.
	SnapshotAge time.Duration
	// CompactMinFiles compacts a partition once it has this many small
	// files. Default 8.
	CompactMinFiles int
	// CompactSmallBytes is what a small file is: smaller than this. Files
	// are compacted into ones of 4 times this size, so that a compacted
	// file is not small any more and each byte is rewritten a bounded
	// number of times. Default 16 MiB.
	CompactSmallBytes int64
	// OrphanAge deletes files under the table location that no snapshot
	// references once they are this old: files of expired snapshots
	// (compacted data files, old manifests) and those of rounds that
	// crashed before their commit. Default 15m.
	OrphanAge time.Duration
	// OrphanEveryRounds looks for orphan files after this many rounds.
	// Default 50.
	OrphanEveryRounds int
	// PKDeletedShare rewrites a primary-key table's data file whose newest
	// commit is older than the table's log.retention, applying its position
	// deletes, once this share of its rows or more is deleted (and one row
	// at least). Default 0: any deleted row, so that the lake's old files carry no deletes — an
	// engine reading a file that has deletes may pay for every row of it
	// (pyiceberg 0.12 does, docs/benchmarks.md "Primary-key tables in the
	// lake"). A higher share rewrites less often (an old lake updated at
	// random keys is rewritten at each pass with 0) and leaves readers more
	// deletes to apply. Values below 0 are 0, above 1 are 1.
	PKDeletedShare float64
}

func (m *Maintenance) ensureDefaults() {
	if m.EveryRounds <= 0 {
		m.EveryRounds = 10
	}
	if m.RetainSnapshots <= 0 {
		m.RetainSnapshots = 20
	}
	if m.SnapshotAge == 0 {
		m.SnapshotAge = 10 * time.Minute
	}
	if m.CompactMinFiles <= 0 {
		m.CompactMinFiles = 8
	}
	if m.CompactSmallBytes <= 0 {
		m.CompactSmallBytes = 16 << 20
	}
	if m.OrphanAge <= 0 {
		m.OrphanAge = 15 * time.Minute
	}
	if m.OrphanEveryRounds <= 0 {
		m.OrphanEveryRounds = 50
	}
	m.PKDeletedShare = min(max(m.PKDeletedShare, 0), 1)
}

// MaintenanceResult says what one maintenance pass did.
type MaintenanceResult struct {
	SnapshotsExpired int
	FilesCompacted   int
	// DeleteFilesMerged is the position delete files merged (primary-key
	// tables, pkmerge.go).
	DeleteFilesMerged int
	OrphansDeleted    int
}

// maintain runs the due maintenance of a table after a round.
func (s *Service) maintain(ctx context.Context, lt *lakeTable) error {
	n := lt.rounds.Load()
	m := s.cfg.Maintenance
	if n == 0 || n%int64(m.EveryRounds) != 0 {
		return nil
	}
	_, err := s.Maintain(ctx, lt.t.Def().ID, n%int64(m.OrphanEveryRounds) == 0)
	return err
}

// Maintain compacts the table's small files and expires old snapshots
// now, and with orphans also deletes files no snapshot references. It holds
// the table's committer: no round runs meanwhile.
func (s *Service) Maintain(ctx context.Context, tableID int64, orphans bool) (MaintenanceResult, error) {
	var res MaintenanceResult
	lt := s.lookup(tableID)
	if lt == nil {
		return res, errDropped
	}
	lt.mu.Lock()
	defer lt.mu.Unlock()
	if _, err := s.checkFence(lt); err != nil { // lease.go
		return res, err
	}
	st := lt.state.Load()
	tbl := st.tbl
	if tbl.CurrentSnapshot() == nil {
		return res, nil
	}
	m := s.cfg.Maintenance
	var err error
	if st.pk != nil {
		st, res.FilesCompacted, err = s.compactPK(ctx, lt, st, m)
		if err == nil {
			lt.state.Store(st)
			var merged int
			st, merged, err = s.mergePKFiles(ctx, st, m)
			res.FilesCompacted += merged
		}
		if err == nil {
			lt.state.Store(st)
			st, res.DeleteFilesMerged, err = s.mergePKDeletes(ctx, st, m)
		}
	} else {
		tbl, res.FilesCompacted, err = s.compact(ctx, tbl, m)
		st = st.withTable(tbl)
	}
	if err != nil {
		err = fmt.Errorf("compact lake table %s: %w", lt.t.Name(), err)
		return res, errors.Join(err, s.reload(ctx, lt)) // the outcome may be unknown
	}
	lt.state.Store(st)
	tbl = st.tbl
	before := len(tbl.Metadata().Snapshots())
	tx := tbl.NewTransaction()
	// Expiry removes snapshots from the metadata only: the files they alone
	// referenced (compacted ones, old manifests) are left to the orphan pass,
	// which deletes whatever no snapshot references. Deleting them at expiry
	// fails once a file is gone already and would leave the commit's outcome
	// in doubt.
	opts := []table.ExpireSnapshotsOpt{table.WithRetainLast(m.RetainSnapshots), table.WithPostCommit(false)}
	if m.SnapshotAge > 0 {
		opts = append(opts, table.WithOlderThan(m.SnapshotAge))
	} else {
		opts = append(opts, table.WithOlderThan(0))
	}
	if err := tx.ExpireSnapshots(opts...); err != nil {
		return res, fmt.Errorf("expire snapshots of %s: %w", lt.t.Name(), err)
	}
	if next, err := tx.Commit(ctx); err != nil {
		if !errors.Is(err, table.ErrCommitFailed) {
			// The outcome is unknown: read the table back before going on.
			if rerr := s.reload(ctx, lt); rerr != nil {
				return res, errors.Join(fmt.Errorf("expire snapshots of %s: %w", lt.t.Name(), err), rerr)
			}
			return res, fmt.Errorf("expire snapshots of %s: %w", lt.t.Name(), err)
		}
		// Someone else committed: the next pass expires them.
	} else {
		res.SnapshotsExpired = before - len(next.Metadata().Snapshots())
		tbl = next
		lt.state.Store(st.withTable(tbl))
	}
	if orphans {
		r, err := tbl.DeleteOrphanFiles(ctx, table.WithFilesOlderThan(m.OrphanAge))
		if err != nil {
			return res, fmt.Errorf("delete orphan files of %s: %w", lt.t.Name(), err)
		}
		res.OrphansDeleted = len(r.DeletedFiles)
	}
	return res, nil
}

// compact rewrites each partition's small files into larger ones, in one
// replace commit that keeps the rows (and so the tiered offsets) as they
// are. The rewrite is Lakestream's own so that the row maps of the files
// (rowmap.go) are concatenated with their rows; files without one (written
// by another engine) are left as they are.
func (s *Service) compact(ctx context.Context, tbl *table.Table, m Maintenance) (*table.Table, int, error) {
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		return tbl, 0, err
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		return tbl, 0, err
	}
	// Only files with a row map are candidates.
	maps := map[string]rowMap{}
	mapped := tasks[:0:0]
	for _, task := range tasks {
		idx, err := s.fileIndex(fs, task.File.FilePath())
		if err != nil {
			return tbl, 0, err
		}
		if idx.rows != nil {
			maps[task.File.FilePath()] = idx.rows
			mapped = append(mapped, task)
		}
	}
	cfg := compaction.DefaultConfig()
	cfg.MinInputFiles = uint(m.CompactMinFiles)
	cfg.MinFileSizeBytes = m.CompactSmallBytes
	cfg.TargetFileSizeBytes = 4 * m.CompactSmallBytes
	cfg.MaxFileSizeBytes = 8 * m.CompactSmallBytes
	plan, err := cfg.PlanCompaction(mapped)
	if err != nil || len(plan.Groups) == 0 {
		return tbl, 0, err
	}
	w, err := newLakeWriter(ctx, tbl, s.cfg.Mem)
	if err != nil {
		return tbl, 0, err
	}
	var old []iceberg.DataFile
	for _, g := range plan.Groups {
		group := sizeTiered(g.Tasks)
		if len(group) < m.CompactMinFiles {
			continue
		}
		// Rounds in log order, so that each output file's rows of a bucket
		// are in offset order as they were.
		slices.SortFunc(group, func(a, b table.FileScanTask) int {
			ra, rb := maps[a.File.FilePath()][0], maps[b.File.FilePath()][0]
			if ra.bucket != rb.bucket {
				return int(ra.bucket - rb.bucket)
			}
			return compareInt(ra.offset, rb.offset)
		})
		for _, task := range group {
			if err := s.copyLakeFile(ctx, fs, w, task.File, maps[task.File.FilePath()]); err != nil {
				w.abort()
				return tbl, 0, err
			}
			old = append(old, task.File)
		}
		// One group, one set of output files.
		if err := w.closeAll(); err != nil {
			w.abort()
			return tbl, 0, err
		}
	}
	if len(old) == 0 {
		return tbl, 0, nil
	}
	added, err := w.finish()
	if err != nil {
		w.abort()
		return tbl, 0, err
	}
	tx := tbl.NewTransaction()
	if err := tx.ReplaceDataFilesWithDataFiles(ctx, old, added, iceberg.Properties{offsetsKey: tbl.Properties()[offsetsKey]}, table.WithoutAutoNameMapping()); err != nil {
		w.abort()
		return tbl, 0, err
	}
	next, err := tx.Commit(ctx)
	if errors.Is(err, table.ErrCommitFailed) {
		w.abort()
		return tbl, 0, nil // a concurrent commit; the next pass compacts
	}
	if err != nil {
		return tbl, 0, err
	}
	return next, len(old), nil
}

// sizeTiered picks the files of a compaction group to merge now: smallest
// first, each while it is no larger than the files picked before it
// together. New small files merge with each other, and with an earlier
// compaction's product only once they add up to its size, so a byte is
// rewritten about log2(table / round) times in all, rather than at every
// pass while its file stays under the small-file size (rounds of a few
// thousand rows make 16 MiB a long way off).
func sizeTiered(tasks []table.FileScanTask) []table.FileScanTask {
	tasks = slices.Clone(tasks)
	slices.SortFunc(tasks, func(a, b table.FileScanTask) int {
		return compareInt(a.File.FileSizeBytes(), b.File.FileSizeBytes())
	})
	var sum int64
	for i, t := range tasks {
		if i >= 2 && t.File.FileSizeBytes() > sum {
			return tasks[:i]
		}
		sum += t.File.FileSizeBytes()
	}
	return tasks
}

// copyLakeFile writes the rows of data file df, whose row map is m, to w,
// in its partition.
func (s *Service) copyLakeFile(ctx context.Context, fs icebergio.IO, w *lakeWriter, df iceberg.DataFile, m rowMap) error {
	part := df.Partition()
	vals := make([]any, len(w.fields))
	for i, f := range w.fields {
		vals[i] = part[f.id]
	}
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
	var at int64
	for rr.Next() {
		rec, err := conformLakeRecord(rr.RecordBatch(), w.schema, s.cfg.Mem)
		if err != nil {
			return fmt.Errorf("read lake file %s: %w", df.FilePath(), err)
		}
		n := rec.NumRows()
		err = w.writeRange(rec, m.slice(at, at+n), 0, int(n), vals)
		rec.Release()
		if err != nil {
			return err
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

// purge deletes the files of a dropped table.
func purge(ctx context.Context, tbl *table.Table) error {
	if tbl == nil {
		return nil
	}
	return tbl.PurgeFiles(ctx)
}
