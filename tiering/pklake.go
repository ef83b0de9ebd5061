package tiering

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/lakestream/lakestream/columnarlog"
	"github.com/lakestream/lakestream/tables"
)

// pkLake is what the lake snapshot of a primary-key table holds, as its
// rounds and compactions need it (docs/lake.md, "Primary-key tables"):
//   - state: which lake offsets hold a live key's current row in the
//     snapshot (every other row of its data files is deleted by its
//     position deletes). After a round's commit it is the published state
//     the round tiered; when the table is loaded it is rebuilt from the
//     lake (the +I/+U offsets of the row maps minus the rows the position
//     deletes delete).
//   - runs: per bucket, where each lake offset is (data file, row), from
//     the row maps of the snapshot's data files, sorted by offset. The
//     key index's lake location of a row is its offset; these runs place
//     it.
//   - files and deletes: the snapshot's data files (with their row maps)
//     and position delete files (with the data files they target).
//
// It is immutable: a round or a compaction makes a new one.
type pkLake struct {
	state   tables.PKState
	runs    [][]lakeRun
	files   map[string]*pkFile
	deletes map[string]*pkDeletes
	// legacy is set for a lake no primary-key round committed to (one an
	// earlier version tiered as plain rows): its -U and -D rows are not
	// deleted yet, and the next round deletes them.
	legacy bool
}

// pkDeletesKey is the table property a primary-key round sets: the
// table's -U and -D rows are all deleted (pkLake.legacy).
const pkDeletesKey = "lakestream.pk-deletes"

// lakeRun is consecutive offsets of a bucket in consecutive rows of one
// data file, whatever their change types and commits (the -U/+U pair of an
// update is one run here, two in the row map).
type lakeRun struct {
	offset, rows int64
	path         string // the data file
	row          int64  // the file row of the run's first offset
}

func (r lakeRun) end() int64 { return r.offset + r.rows }

// pkFile is a data file of the snapshot.
type pkFile struct {
	df   iceberg.DataFile
	rows rowMap
}

// pkDeletes is a position delete file of the snapshot and the data files
// its rows name.
type pkDeletes struct {
	df      iceberg.DataFile
	targets []string
}

// locate returns the data file and row of offset off of bucket.
func (p *pkLake) locate(bucket int, off int64) (string, int64, bool) {
	runs := p.runs[bucket]
	i, _ := slices.BinarySearchFunc(runs, off, func(r lakeRun, off int64) int {
		switch {
		case r.end() <= off:
			return -1
		case r.offset > off:
			return 1
		}
		return 0
	})
	if i == len(runs) || runs[i].offset > off || runs[i].end() <= off {
		return "", 0, false
	}
	return runs[i].path, runs[i].row + off - runs[i].offset, true
}

// isState reports whether a change type's rows can be a key's current
// row: +I and +U (before images and deletes never are).
func isState(change uint8) bool {
	ct := columnarlog.ChangeType(change)
	return ct == columnarlog.Insert || ct == columnarlog.UpdateAfter
}

// fileRuns returns the lake runs of a data file's row map.
func fileRuns(path string, m rowMap, into [][]lakeRun) error {
	var row int64
	for _, r := range m {
		if int(r.bucket) >= len(into) {
			return fmt.Errorf("lake file %s: bucket %d in its row map, but the table has %d buckets", path, r.bucket, len(into))
		}
		runs := into[r.bucket]
		if n := len(runs); n > 0 && runs[n-1].path == path && runs[n-1].end() == r.offset && runs[n-1].row+runs[n-1].rows == row {
			runs[n-1].rows += r.rows
		} else {
			into[r.bucket] = append(runs, lakeRun{offset: r.offset, rows: r.rows, path: path, row: row})
		}
		row += r.rows
	}
	return nil
}

func sortRuns(runs []lakeRun) {
	slices.SortFunc(runs, func(a, b lakeRun) int { return compareInt(a.offset, b.offset) })
}

// loadPKLake rebuilds the pkLake of the snapshot of tbl, whose tiered
// offsets are offsets: it reads the footers of the data files and the
// rows of the position delete files.
func (s *Service) loadPKLake(ctx context.Context, tbl *table.Table, name string, offsets []int64) (*pkLake, error) {
	p := &pkLake{runs: make([][]lakeRun, len(offsets)), files: map[string]*pkFile{}, deletes: map[string]*pkDeletes{}}
	b := tables.NewPKStateBuilder(offsets)
	if tbl.CurrentSnapshot() == nil {
		p.state = b.Done()
		return p, nil
	}
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		return nil, err
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		return nil, err
	}
	p.legacy = len(tasks) > 0 && tbl.Properties()[pkDeletesKey] != "true"
	var dels []iceberg.DataFile
	for _, task := range tasks {
		df := task.File
		idx, err := s.fileIndex(fs, df.FilePath())
		if err != nil {
			return nil, err
		}
		if idx.rows == nil {
			return nil, fmt.Errorf("lake table of %s: data file %s has no row map (rewritten by another engine?): the offsets of its rows, and so the table's lake state, are unknown", name, df.FilePath())
		}
		p.files[df.FilePath()] = &pkFile{df: df, rows: idx.rows}
		if err := fileRuns(df.FilePath(), idx.rows, p.runs); err != nil {
			return nil, err
		}
		for _, r := range idx.rows {
			if r.end() > offsets[r.bucket] {
				return nil, fmt.Errorf("lake table of %s: data file %s holds offset %d of bucket %d, above the tiered offset %d", name, df.FilePath(), r.end()-1, r.bucket, offsets[r.bucket])
			}
			if isState(r.change) {
				for off := r.offset; off < r.end(); off++ {
					b.Set(int(r.bucket), off)
				}
			}
		}
		for _, d := range task.DeleteFiles {
			if _, ok := p.deletes[d.FilePath()]; !ok {
				p.deletes[d.FilePath()] = &pkDeletes{df: d}
				dels = append(dels, d)
			}
		}
		if len(task.EqualityDeleteFiles) > 0 || len(task.DeletionVectorFiles) > 0 {
			return nil, fmt.Errorf("lake table of %s: data file %s has equality deletes or deletion vectors (written by another engine): the table's lake state is unknown", name, df.FilePath())
		}
	}
	for i := range p.runs {
		sortRuns(p.runs[i])
	}
	starts := map[string][]int64{}
	for _, d := range dels {
		err := readPosDeletes(ctx, s, fs, d.FilePath(), func(path string, pos int64) {
			f := p.files[path]
			if f == nil {
				return // a data file no longer in the snapshot
			}
			st, ok := starts[path]
			if !ok {
				st = runStarts(f.rows)
				starts[path] = st
			}
			i, found := slices.BinarySearch(st, pos)
			if !found {
				i--
			}
			if i < 0 || i >= len(f.rows) || pos >= st[i]+f.rows[i].rows {
				return // past the file's rows: deletes nothing
			}
			r := f.rows[i]
			b.Clear(int(r.bucket), r.offset+pos-st[i])
		}, func(targets []string) { p.deletes[d.FilePath()].targets = targets })
		if err != nil {
			return nil, fmt.Errorf("lake table of %s: %w", name, err)
		}
	}
	p.state = b.Done()
	return p, nil
}

// runStarts returns the file row of each run of m.
func runStarts(m rowMap) []int64 {
	st := make([]int64, len(m))
	var row int64
	for i, r := range m {
		st[i] = row
		row += r.rows
	}
	return st
}

// readPosDeletes calls fn with each (file_path, pos) row of the position
// delete file at path, then targets with the distinct data files named.
func readPosDeletes(ctx context.Context, s *Service, fs icebergio.IO, path string, fn func(path string, pos int64), targets func([]string)) error {
	pr, ar, err := openParquet(fs, path, s.cfg.Mem)
	if err != nil {
		return err
	}
	defer pr.Close()
	sch, err := ar.Schema()
	if err != nil {
		return fmt.Errorf("position delete file %s: %w", path, err)
	}
	pathCol, posCol := -1, -1
	for i, f := range sch.Fields() {
		switch f.Name {
		case "file_path":
			pathCol = i
		case "pos":
			posCol = i
		}
	}
	if pathCol < 0 || posCol < 0 {
		return fmt.Errorf("position delete file %s: no file_path and pos columns", path)
	}
	rr, err := ar.GetRecordReader(ctx, []int{pathCol, posCol}, nil)
	if err != nil {
		return fmt.Errorf("read position delete file %s: %w", path, err)
	}
	defer rr.Release()
	seen := map[string]bool{}
	var names []string
	for rr.Next() {
		rec := rr.RecordBatch()
		var paths interface {
			Value(int) string
			Len() int
		}
		switch a := rec.Column(0).(type) {
		case *array.String:
			paths = a
		case *array.LargeString:
			paths = a
		default:
			return fmt.Errorf("position delete file %s: file_path is %s", path, a.DataType())
		}
		pos, ok := rec.Column(1).(*array.Int64)
		if !ok {
			return fmt.Errorf("position delete file %s: pos is %s", path, rec.Column(1).DataType())
		}
		for i := 0; i < paths.Len(); i++ {
			p := paths.Value(i)
			if !seen[p] {
				seen[p] = true
				names = append(names, p)
			}
			fn(p, pos.Value(i))
		}
	}
	if err := rr.Err(); err != nil {
		return fmt.Errorf("read position delete file %s: %w", path, err)
	}
	targets(names)
	return nil
}

// withRound returns the pkLake after a round's commit: state st, the
// round's data files (with their row maps) and delete files added.
func (p *pkLake) withRound(st tables.PKState, files []iceberg.DataFile, fileMaps []rowMap, dels []*pkDeletes) (*pkLake, error) {
	next := &pkLake{state: st, runs: make([][]lakeRun, len(p.runs)), files: maps.Clone(p.files), deletes: maps.Clone(p.deletes)}
	added := make([][]lakeRun, len(p.runs))
	for i, df := range files {
		next.files[df.FilePath()] = &pkFile{df: df, rows: fileMaps[i]}
		if err := fileRuns(df.FilePath(), fileMaps[i], added); err != nil {
			return nil, err
		}
	}
	for b := range p.runs {
		sortRuns(added[b])
		// The round's offsets are above every offset in the lake: appended
		// (to a slice the previous pkLake never sees past its length).
		next.runs[b] = append(p.runs[b], added[b]...)
	}
	for _, d := range dels {
		next.deletes[d.df.FilePath()] = d
	}
	return next, nil
}
