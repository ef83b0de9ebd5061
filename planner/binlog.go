package planner

import (
	"context"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lakestream/lakestream/internal/scan"
)

// BinlogSuffix names a table's binlog view: "t$binlog" is the changelog of
// t ("t$changelog") with each change in one row, as Fluss's binlog system
// table has it:
//
//	_change_type       'insert' (+I, and +A of a log table), 'update'
//	                   (a -U and the +U after it), 'delete' (-D)
//	_bucket, _offset   where the change is in the log; an update's is its
//	                   +U's, so that resuming at _offset + 1 skips the
//	                   whole change
//	_commit_timestamp  when it was committed
//	before, after      STRUCTs of the table's columns: the row before and
//	                   after the change, NULL where there is none (before
//	                   of an insert, after of a delete)
//
// The view pairs the images within each bucket's read; an update whose
// -U fell below the retained log shows its +U alone (before NULL).
const BinlogSuffix = "$binlog"

// The changelog columns that follow a table's own in "t$changelog".
const (
	clChangeType = iota
	clBucket
	clOffset
	clCommit
	clColumns
)

// Binlog is the binlog view of a table's changelog view, which has the
// table's n columns followed by _change_type, _bucket, _offset and
// _commit_timestamp.
func Binlog(changelog scan.Table, name string, mem memory.Allocator) (scan.Table, error) {
	cs := changelog.Schema()
	n := cs.NumFields() - clColumns
	if n < 1 || cs.Field(n+clChangeType).Name != "_change_type" || cs.Field(n+clCommit).Name != "_commit_timestamp" {
		return nil, fmt.Errorf("binlog of %s: %s is not a changelog view", name, changelog.Name())
	}
	row := arrow.StructOf(cs.Fields()[:n]...)
	fields := []arrow.Field{
		{Name: "_change_type", Type: arrow.BinaryTypes.String},
		cs.Field(n + clBucket),
		cs.Field(n + clOffset),
		cs.Field(n + clCommit),
		{Name: "before", Type: row, Nullable: true},
		{Name: "after", Type: row, Nullable: true},
	}
	return &binlogTable{cl: changelog, name: name, n: n, schema: arrow.NewSchema(fields, nil), mem: mem}, nil
}

type binlogTable struct {
	cl     scan.Table
	name   string
	n      int // the table's own columns
	schema *arrow.Schema
	mem    memory.Allocator
}

func (b *binlogTable) Name() string          { return b.name }
func (b *binlogTable) Schema() *arrow.Schema { return b.schema }

// Plan reads every column of the changelog (pairing needs the change
// types and both images) and projects the binlog rows it builds. Filters
// are not pushed: they name binlog columns, and pruning the changelog by
// them could split a pair.
func (b *binlogTable) Plan(ctx context.Context, req scan.Request) (scan.Plan, error) {
	cols := scan.Columns(req.Columns, b.schema.NumFields())
	out, err := scan.ProjectSchema(b.schema, cols)
	if err != nil {
		return nil, fmt.Errorf("scan %s: %w", b.name, err)
	}
	p, err := b.cl.Plan(ctx, scan.Request{})
	if err != nil {
		return nil, err
	}
	parts := make([]scan.Part, len(p.Parts()))
	for i, part := range p.Parts() {
		parts[i] = binlogPart{b: b, in: part, cols: cols, out: out}
	}
	return scan.NewPlan(out, parts), nil
}

type binlogPart struct {
	b    *binlogTable
	in   scan.Part
	cols []int
	out  *arrow.Schema
}

func (p binlogPart) Open(ctx context.Context) (scan.RecordStream, error) {
	rs, err := p.in.Open(ctx)
	if err != nil {
		return nil, err
	}
	return &binlogStream{p: p, ctx: ctx, in: rs}, nil
}

// binlogStream pairs the changes of one part (one bucket's range, in
// offset order). A -U that ends an input record waits for the record
// that follows.
type binlogStream struct {
	p       binlogPart
	ctx     context.Context
	in      scan.RecordStream
	pending arrow.RecordBatch // the -U row that ended the last record
	done    bool
}

func (s *binlogStream) Next() (arrow.RecordBatch, error) {
	for !s.done {
		rec, err := s.in.Next()
		if err == io.EOF {
			s.done = true
			if s.pending == nil {
				break
			}
			rec, s.pending = s.pending, nil
		} else if err != nil {
			return nil, err
		} else if s.pending != nil {
			joined, err := concat(s.p.b.mem, s.pending, rec)
			rec.Release()
			s.pending.Release()
			s.pending = nil
			if err != nil {
				return nil, err
			}
			rec = joined
		}
		out, err := s.pair(rec)
		rec.Release()
		if err != nil {
			return nil, err
		}
		if out != nil {
			return out, nil
		}
	}
	return nil, io.EOF
}

func (s *binlogStream) Close() error {
	if s.pending != nil {
		s.pending.Release()
		s.pending = nil
	}
	return s.in.Close()
}

// pair turns a changelog record into binlog rows; nil when it makes none.
// A -U in its last row is kept for the next record (unless the stream has
// ended, when it is shown alone, after NULL).
func (s *binlogStream) pair(rec arrow.RecordBatch) (arrow.RecordBatch, error) {
	n := s.p.b.n
	types, ok := rec.Column(n + clChangeType).(*array.String)
	if !ok {
		return nil, fmt.Errorf("binlog of %s: _change_type is %s", s.p.b.name, rec.Column(n+clChangeType).DataType())
	}
	rows := int(rec.NumRows())
	if rows > 0 && types.Value(rows-1) == "-U" && !s.done {
		s.pending = rec.NewSlice(int64(rows-1), int64(rows))
		rows--
	}
	mem := s.p.b.mem
	kind := array.NewStringBuilder(mem)
	defer kind.Release()
	at, before, after := array.NewInt64Builder(mem), array.NewInt64Builder(mem), array.NewInt64Builder(mem)
	defer at.Release()
	defer before.Release()
	defer after.Release()
	idx := func(b *array.Int64Builder, i int) {
		if i < 0 {
			b.AppendNull()
		} else {
			b.Append(int64(i))
		}
	}
	emit := func(k string, row, bef, aft int) {
		kind.Append(k)
		at.Append(int64(row))
		idx(before, bef)
		idx(after, aft)
	}
	for i := 0; i < rows; i++ {
		switch ct := types.Value(i); ct {
		case "+I", "+A":
			emit("insert", i, -1, i)
		case "-D":
			emit("delete", i, i, -1)
		case "+U":
			emit("update", i, -1, i) // its -U is not in this read
		case "-U":
			if i+1 < rows && types.Value(i+1) == "+U" {
				emit("update", i+1, i, i+1)
				i++
			} else {
				emit("update", i, i, -1)
			}
		default:
			return nil, fmt.Errorf("binlog of %s: unknown change type %q", s.p.b.name, ct)
		}
	}
	if kind.Len() == 0 {
		return nil, nil
	}
	return s.build(rec, kind, at, before, after)
}

// build takes the binlog columns out of rec: the meta columns at the rows
// at, and the images at before and after (NULL indexes: NULL rows).
func (s *binlogStream) build(rec arrow.RecordBatch, kind *array.StringBuilder, at, before, after *array.Int64Builder) (arrow.RecordBatch, error) {
	n, mem := s.p.b.n, s.p.b.mem
	ctx := compute.WithAllocator(s.ctx, mem)
	kinds := kind.NewArray()
	defer kinds.Release()
	rows := int64(kinds.Len())
	idx := [3]arrow.Array{at.NewArray(), before.NewArray(), after.NewArray()}
	defer func() {
		for _, a := range idx {
			a.Release()
		}
	}()
	images, err := array.NewStructArrayWithFields(rec.Columns()[:n], rec.Schema().Fields()[:n])
	if err != nil {
		return nil, fmt.Errorf("binlog of %s: %w", s.p.b.name, err)
	}
	defer images.Release()
	all := make([]arrow.Array, 0, 6)
	defer func() {
		for _, a := range all {
			a.Release()
		}
	}()
	kinds.Retain()
	all = append(all, kinds)
	for _, src := range []struct {
		col arrow.Array
		idx arrow.Array
	}{{rec.Column(n + clBucket), idx[0]}, {rec.Column(n + clOffset), idx[0]}, {rec.Column(n + clCommit), idx[0]}, {images, idx[1]}, {images, idx[2]}} {
		a, err := compute.TakeArray(ctx, src.col, src.idx)
		if err != nil {
			return nil, fmt.Errorf("binlog of %s: %w", s.p.b.name, err)
		}
		all = append(all, a)
	}
	cols := make([]arrow.Array, len(s.p.cols))
	for i, c := range s.p.cols {
		cols[i] = all[c]
	}
	return array.NewRecordBatch(s.p.out, cols, rows), nil
}

// concat joins two records of one schema.
func concat(mem memory.Allocator, a, b arrow.RecordBatch) (arrow.RecordBatch, error) {
	cols := make([]arrow.Array, a.NumCols())
	for i := range cols {
		c, err := array.Concatenate([]arrow.Array{a.Column(i), b.Column(i)}, mem)
		if err != nil {
			for _, c := range cols[:i] {
				c.Release()
			}
			return nil, err
		}
		cols[i] = c
	}
	rec := array.NewRecordBatch(a.Schema(), cols, a.NumRows()+b.NumRows())
	for _, c := range cols {
		c.Release()
	}
	return rec, nil
}
