package tiering

import (
	"context"
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go/table"

	"github.com/lakestream/lakestream/columnarlog"
)

// ReadLive implements tables.TableLake: the key index of a primary-key
// table whose log head retention deleted is rebuilt from the lake's rows of
// the bucket (tables/pk.go, rebuild). The rows are those the current
// snapshot's position deletes leave, in offset order, found through the
// row maps; rows deleted are not sent, and offsets compaction dropped are
// simply absent (unlike the history, which must be whole). A data file
// without a row map holds rows whose offsets are unknown: the rebuild
// cannot place them, and fails saying so.
func (h lakeReader) ReadLive(ctx context.Context, bucket int, fn func(rec arrow.RecordBatch, offsets []int64, changes []columnarlog.ChangeType) error) (int64, error) {
	st := h.lt.state.Load()
	name := h.lt.t.Name()
	if bucket < 0 || bucket >= len(st.offsets) {
		return 0, fmt.Errorf("lake of %s: bucket %d out of range", name, bucket)
	}
	tiered := st.offsets[bucket]
	snap := st.tbl.CurrentSnapshot()
	if snap == nil {
		return tiered, nil
	}
	tasks, err := st.tbl.Scan(table.WithSnapshotID(snap.SnapshotID)).PlanFiles(ctx)
	if err != nil {
		return 0, fmt.Errorf("plan lake snapshot %d of %s: %w", snap.SnapshotID, name, err)
	}
	fs, err := st.tbl.FS(ctx)
	if err != nil {
		return 0, err
	}
	dels := &posDeletes{fs: fs, mem: h.s.cfg.Mem}
	var pieces []historyPiece
	var files []*lakeFileIndex
	var keeps []*rowKeep
	for _, task := range tasks {
		idx, err := h.s.fileIndex(fs, task.File.FilePath())
		if err != nil {
			return 0, err
		}
		if idx.rows == nil {
			return 0, fmt.Errorf("%w: lake file %s of %s has no row map (rewritten by another engine?): the key index cannot be rebuilt from it", errNoHistory, task.File.FilePath(), name)
		}
		keep, err := dels.keepUndeleted(ctx, task.File.FilePath(), idx.rows.rows(), task.DeleteFiles)
		if err != nil {
			return 0, err
		}
		fi, row := len(files), int64(0)
		for _, r := range idx.rows {
			if int(r.bucket) == bucket && r.offset < tiered && keep.count(row, row+r.rows) > 0 {
				pieces = append(pieces, historyPiece{run: r, file: fi, row: row})
			}
			row += r.rows
		}
		files, keeps = append(files, idx), append(keeps, keep)
	}
	slices.SortFunc(pieces, func(a, b historyPiece) int { return compareInt(a.offset, b.offset) })
	rd := &historyReader{s: h.s, t: h.lt.t, fs: fs, files: files}
	defer rd.close()
	lr := liveReader{rd: rd, fn: fn}
	defer lr.release()
	for _, p := range pieces {
		if err := lr.piece(ctx, p, keeps[p.file]); err != nil {
			return 0, fmt.Errorf("lake of %s bucket %d: %w", name, bucket, err)
		}
	}
	if err := lr.flush(); err != nil {
		return 0, fmt.Errorf("lake of %s bucket %d: %w", name, bucket, err)
	}
	return tiered, nil
}

// liveReader gathers the kept rows of pieces into records for ReadLive.
type liveReader struct {
	rd      *historyReader
	fn      func(arrow.RecordBatch, []int64, []columnarlog.ChangeType) error
	pending []arrow.RecordBatch
	offs    []int64
	changes []columnarlog.ChangeType
}

// piece adds the kept rows of p, sending a record once historyBatchRows
// are gathered.
func (l *liveReader) piece(ctx context.Context, p historyPiece, keep *rowKeep) error {
	idx := l.rd.files[p.file]
	for i := int64(0); i < p.rows; {
		row := p.row + i
		rg := idx.rowGroup(row)
		if rg < 0 {
			return fmt.Errorf("lake file %s: row %d is past its row groups", idx.path, row)
		}
		n := min(p.rows-i, idx.rgStart[rg+1]-row)
		if keep.count(row, row+n) == 0 {
			i += n
			continue
		}
		rec, err := l.rd.rowGroup(ctx, p.file, rg)
		if err != nil {
			return err
		}
		for j := int64(0); j < n; {
			if !keep.has(row + j) {
				j++
				continue
			}
			k := j
			for k < n && keep.has(row+k) {
				k++
			}
			first := row + j - idx.rgStart[rg]
			l.pending = append(l.pending, rec.NewSlice(first, first+k-j))
			for x := j; x < k; x++ {
				l.offs = append(l.offs, p.offset+i+x)
				l.changes = append(l.changes, columnarlog.ChangeType(p.change))
			}
			j = k
		}
		if len(l.offs) >= historyBatchRows {
			if err := l.flush(); err != nil {
				return err
			}
		}
		i += n
	}
	return nil
}

func (l *liveReader) flush() error {
	if len(l.pending) == 0 {
		return nil
	}
	rec, err := concatRecords(l.rd.t.Schema(), l.pending, l.rd.s)
	l.release()
	if err != nil {
		return err
	}
	defer rec.Release()
	err = l.fn(rec, l.offs, l.changes)
	l.offs, l.changes = l.offs[:0], l.changes[:0]
	return err
}

func (l *liveReader) release() {
	for _, p := range l.pending {
		p.Release()
	}
	l.pending = l.pending[:0]
}
