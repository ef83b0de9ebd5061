package planner

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lakestream/lakestream/internal/scan"
)

// Filter is the WHERE of a changes() subscription bound to the changelog
// schema. The followers read the selected columns followed by the filter
// columns that are not selected; the filter keeps rows, then drops those
// extra columns. It is evaluated with plain loops over the typed arrays:
// an earlier version built on arrow's compute kernels hung under -race for
// reasons never found, and the conditions are simple enough not to need
// them.
type Filter struct {
	conds []boundCond
	// out is the number of leading read columns that are sent.
	out    int
	schema *arrow.Schema // the sent schema
}

type boundCond struct {
	col  int // index into the read columns
	pred predicate
}

// predicate narrows a selection: it clears sel[i] for the rows of arr that
// do not meet it, and leaves cleared rows alone.
type predicate interface {
	keep(arr arrow.Array, sel []bool) error
}

// BindFilter checks where against the changelog schema and returns the
// columns to read (cols, then the filter's other columns) and the filter,
// nil when there is no WHERE. A literal that does not convert to its
// column's type is an ErrInvalid naming the column.
func BindFilter(schema *arrow.Schema, cols []int, where []Condition) ([]int, *Filter, error) {
	if len(where) == 0 {
		return cols, nil, nil
	}
	sent, err := scan.ProjectSchema(schema, cols)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: changes(): %v", ErrInvalid, err)
	}
	read := append([]int(nil), cols...)
	f := &Filter{out: len(cols), schema: sent}
	for _, c := range where {
		idx := scan.FieldIndex(schema, c.Column)
		if idx < 0 {
			return nil, nil, fmt.Errorf("%w: changes(): WHERE %s: column %q not found in changes", ErrInvalid, c, c.Column)
		}
		pred, err := bindPredicate(schema.Field(idx), c)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: changes(): WHERE %s: %v", ErrInvalid, c, err)
		}
		pos := indexOf(read, idx)
		if pos < 0 {
			pos = len(read)
			read = append(read, idx)
		}
		f.conds = append(f.conds, boundCond{col: pos, pred: pred})
	}
	return read, f, nil
}

func indexOf(xs []int, x int) int {
	for i, v := range xs {
		if v == x {
			return i
		}
	}
	return -1
}

// Apply returns the rows of rec that meet every condition, with the sent
// columns only, or nil when none does. It takes ownership of rec. Kept
// rows keep their _offset: a consumer resumes from them as from an
// unfiltered stream.
func (f *Filter) Apply(rec arrow.RecordBatch, mem memory.Allocator) (arrow.RecordBatch, error) {
	defer rec.Release()
	n := int(rec.NumRows())
	sel := make([]bool, n)
	for i := range sel {
		sel[i] = true
	}
	for _, c := range f.conds {
		if err := c.pred.keep(rec.Column(c.col), sel); err != nil {
			return nil, err
		}
	}
	runs := keptRuns(sel)
	if len(runs) == 0 {
		return nil, nil
	}
	cols := make([]arrow.Array, f.out)
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	kept := 0
	for _, r := range runs {
		kept += r[1] - r[0]
	}
	for i := range cols {
		var err error
		if cols[i], err = takeRuns(rec.Column(i), runs, mem); err != nil {
			return nil, err
		}
	}
	return array.NewRecordBatch(f.schema, cols, int64(kept)), nil
}

// keptRuns are the [start, end) runs of selected rows.
func keptRuns(sel []bool) [][2]int {
	var runs [][2]int
	for i := 0; i < len(sel); {
		if !sel[i] {
			i++
			continue
		}
		j := i
		for j < len(sel) && sel[j] {
			j++
		}
		runs = append(runs, [2]int{i, j})
		i = j
	}
	return runs
}

// takeRuns returns the runs of arr: a zero-copy slice for one run, a
// concatenation of the slices for more.
func takeRuns(arr arrow.Array, runs [][2]int, mem memory.Allocator) (arrow.Array, error) {
	if len(runs) == 1 {
		return array.NewSlice(arr, int64(runs[0][0]), int64(runs[0][1])), nil
	}
	parts := make([]arrow.Array, len(runs))
	for i, r := range runs {
		parts[i] = array.NewSlice(arr, int64(r[0]), int64(r[1]))
	}
	defer func() {
		for _, p := range parts {
			p.Release()
		}
	}()
	return array.Concatenate(parts, mem)
}
