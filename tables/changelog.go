package tables

import (
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lakestream/lakestream/columnarlog"
)

// changelogFields follow the table's columns in the changelog view.
var changelogFields = []arrow.Field{
	{Name: "_change_type", Type: arrow.BinaryTypes.String},
	{Name: "_bucket", Type: arrow.PrimitiveTypes.Int32},
	{Name: "_offset", Type: arrow.PrimitiveTypes.Int64},
	{Name: "_commit_timestamp", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
}

func changelogSchema(s *arrow.Schema) *arrow.Schema {
	return arrow.NewSchema(append(append([]arrow.Field(nil), s.Fields()...), changelogFields...), nil)
}

// changeTypeNames are the _change_type values, by columnarlog.ChangeType.
var changeTypeNames = [...]string{"+A", "+I", "-U", "+U", "-D"}

// decoder returns the part's batch decoder: the table's columns, plus the
// changelog columns for the changelog view.
func (p *logPart) decoder() func(columnarlog.Batch) (arrow.RecordBatch, error) {
	plan := p.plan
	if !plan.changelog {
		dec := newDecoder(plan.def, plan.cols, plan.t.mem).cached(plan.cache, p.r.Bucket)
		return dec.decode
	}
	n := len(plan.def.Columns)
	var user []int
	for _, c := range plan.cols {
		if c < n {
			user = append(user, c)
		}
	}
	dec := newDecoder(plan.def, user, plan.t.mem).cached(plan.cache, p.r.Bucket)
	return func(b columnarlog.Batch) (arrow.RecordBatch, error) {
		rec, err := dec.decode(b)
		if err != nil {
			return nil, err
		}
		defer rec.Release()
		return withChangelogColumns(rec, b, p.r.Bucket, plan, n)
	}
}

// withChangelogColumns builds the record of the requested view columns from
// the decoded table columns and the batch's header.
func withChangelogColumns(rec arrow.RecordBatch, b columnarlog.Batch, bucket int, plan *logPlan, n int) (arrow.RecordBatch, error) {
	rows := int(rec.NumRows())
	mem := plan.t.mem
	cols := make([]arrow.Array, len(plan.cols))
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	at, err := batchRows(b, bucket)
	if err != nil {
		return nil, err
	}
	j := 0
	for i, c := range plan.cols {
		if c < n {
			cols[i] = rec.Column(j)
			cols[i].Retain()
			j++
			continue
		}
		a, err := changelogColumn(c-n, at, rows, mem)
		if err != nil {
			return nil, err
		}
		cols[i] = a
	}
	return array.NewRecordBatch(plan.schema, cols, int64(rows)), nil
}

// rowsAt says where consecutive rows of a bucket were committed, for their
// changelog columns: a log batch's header, or a run of the lake's history.
type rowsAt struct {
	bucket  int
	offset  int64                  // of the first row
	commit  int64                  // unix microseconds
	changes []byte                 // per row, or nil: all change
	change  columnarlog.ChangeType // when changes is nil
	commits []int64                // per row, or nil: all commit
}

// batchRows is where batch b's rows were committed.
func batchRows(b columnarlog.Batch, bucket int) (rowsAt, error) {
	cts, err := b.ChangeTypes()
	if err != nil {
		return rowsAt{}, err
	}
	return rowsAt{bucket: bucket, offset: b.BaseOffset(), commit: b.CommitTimestamp(), changes: cts}, nil
}

func changelogColumn(which int, at rowsAt, rows int, mem memory.Allocator) (arrow.Array, error) {
	switch which {
	case 0:
		sb := array.NewStringBuilder(mem)
		defer sb.Release()
		sb.Reserve(rows)
		for i := 0; i < rows; i++ {
			ct := at.change
			if at.changes != nil {
				ct = columnarlog.ChangeType(at.changes[i])
			}
			if int(ct) >= len(changeTypeNames) {
				return nil, fmt.Errorf("unknown change type %d", ct)
			}
			sb.Append(changeTypeNames[ct])
		}
		return sb.NewArray(), nil
	case 1:
		ib := array.NewInt32Builder(mem)
		defer ib.Release()
		ib.Reserve(rows)
		for i := 0; i < rows; i++ {
			ib.UnsafeAppend(int32(at.bucket))
		}
		return ib.NewArray(), nil
	case 2:
		ob := array.NewInt64Builder(mem)
		defer ob.Release()
		ob.Reserve(rows)
		for i := 0; i < rows; i++ {
			ob.UnsafeAppend(at.offset + int64(i))
		}
		return ob.NewArray(), nil
	}
	tb := array.NewTimestampBuilder(mem, changelogFields[3].Type.(*arrow.TimestampType))
	defer tb.Release()
	tb.Reserve(rows)
	for i := 0; i < rows; i++ {
		ts := at.commit
		if at.commits != nil {
			ts = at.commits[i]
		}
		tb.UnsafeAppend(arrow.Timestamp(ts))
	}
	return tb.NewArray(), nil
}

// ParseChangeType is the change type named by a _change_type value.
func ParseChangeType(name string) (columnarlog.ChangeType, bool) {
	i := slices.Index(changeTypeNames[:], name)
	return columnarlog.ChangeType(i), i >= 0
}
