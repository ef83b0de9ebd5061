package tiering

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/lakestream/lakestream/internal/scan"
	"github.com/lakestream/lakestream/tables"
)

// lakeSuffix names a table's lake layer: SELECT ... FROM "t$lake".
const lakeSuffix = tables.LakeSuffix

// Resolver resolves table names for the query engine: a table that tiers is
// the union of its lake and log tail, "t$lake" its lake layer only; every
// other name goes to base.
func (s *Service) Resolver(base *tables.Store) scan.Resolver {
	return resolver{s: s, base: base}
}

type resolver struct {
	s    *Service
	base *tables.Store
}

func (r resolver) Table(ctx context.Context, db, name string) (scan.Table, error) {
	if isStatusTable(db, name) {
		return statusTable{r.s}, nil
	}
	if n, ok := cutSuffixFold(name, lakeSuffix); ok {
		t, err := r.base.Get(ctx, db, n)
		if err != nil {
			return r.base.Table(ctx, db, n) // the store's not-found error
		}
		lt := r.s.lookup(t.Def().ID)
		if lt == nil {
			return nil, fmt.Errorf("%w: table %s is not tiered into the lake (datalake.enabled is false)", scan.ErrTableNotFound, t.Name())
		}
		return &unionTable{s: r.s, lt: lt, lakeOnly: true}, nil
	}
	st, err := r.base.Table(ctx, db, name)
	if err != nil {
		return nil, err
	}
	t, ok := st.(*tables.Table)
	if !ok {
		return st, nil // a view such as t$changelog: the log only
	}
	if lt := r.s.lookup(t.Def().ID); lt != nil {
		return &unionTable{s: r.s, lt: lt}, nil
	}
	return t, nil
}

func cutSuffixFold(s, suffix string) (string, bool) {
	if len(s) > len(suffix) && strings.EqualFold(s[len(s)-len(suffix):], suffix) {
		return s[:len(s)-len(suffix)], true
	}
	return s, false
}

// unionTable is a tiered table as the planner sees it: the lake snapshot
// and the log tail above it, or the lake only.
type unionTable struct {
	s        *Service
	lt       *lakeTable
	lakeOnly bool
}

func (u *unionTable) Name() string {
	if u.lakeOnly {
		return u.lt.t.Name() + lakeSuffix
	}
	return u.lt.t.Name()
}

func (u *unionTable) Schema() *arrow.Schema { return u.lt.t.Schema() }

// EstimatedRows is the lake snapshot's record count plus the log tail.
func (u *unionTable) EstimatedRows() int64 {
	st := u.lt.state.Load()
	var n int64
	if snap := st.tbl.CurrentSnapshot(); snap != nil && snap.Summary != nil {
		n = snapshotRecords(snap)
	}
	if u.lakeOnly {
		return n
	}
	ends := u.lt.t.Log().CommittedEnds()
	for b, end := range ends {
		n += max(0, end-st.offsets[b])
	}
	return n
}

func snapshotRecords(snap *table.Snapshot) int64 {
	var n int64
	fmt.Sscan(snap.Summary.Properties["total-records"], &n)
	return n
}

// Plan captures the lake state with its tiered offsets O, then each
// bucket's committed end H (H >= O: the tierer only tiers committed rows),
// and plans the lake files and the log ranges [O[b], H[b]).
func (u *unionTable) Plan(ctx context.Context, req scan.Request) (scan.Plan, error) {
	st := u.lt.state.Load()
	t := u.lt.t
	schema := t.Schema()
	cols := req.Columns
	if cols == nil {
		cols = make([]int, schema.NumFields())
		for i := range cols {
			cols[i] = i
		}
	}
	out, err := projectColumns(schema, cols, u.Name())
	if err != nil {
		return nil, err
	}
	p := &unionPlan{schema: out}
	lake, err := u.lakeParts(ctx, st, schema, cols, p.schema, req.Filters)
	if err != nil {
		return nil, err
	}
	p.parts = lake
	if u.lakeOnly {
		return p, nil
	}
	ends := t.Log().CommittedEnds()
	var ranges []tables.Range
	for b, end := range ends {
		if end > st.offsets[b] {
			ranges = append(ranges, tables.Range{Bucket: b, From: st.offsets[b], To: end})
		}
	}
	if len(ranges) > 0 {
		tail, err := t.PlanRanges(req, ranges)
		if err != nil {
			return nil, err
		}
		p.parts = append(p.parts, tail.Parts()...)
	}
	return p, nil
}

// projectColumns is the schema of the columns cols of schema, the table
// name's.
func projectColumns(schema *arrow.Schema, cols []int, name string) (*arrow.Schema, error) {
	fields := make([]arrow.Field, len(cols))
	for i, c := range cols {
		if c < 0 || c >= schema.NumFields() {
			return nil, fmt.Errorf("scan %s: column %d out of range", name, c)
		}
		fields[i] = schema.Field(c)
	}
	return arrow.NewSchema(fields, nil), nil
}

type unionPlan struct {
	schema *arrow.Schema
	parts  []scan.Part
}

func (p *unionPlan) Schema() *arrow.Schema { return p.schema }
func (p *unionPlan) Parts() []scan.Part    { return p.parts }

// lakeParts plans the snapshot's data files with the filters pushed into
// Iceberg's partition and file-statistics pruning (and row-group pruning
// and row filtering as the files are read): one part per file.
func (u *unionTable) lakeParts(ctx context.Context, st *lakeState, schema *arrow.Schema, cols []int, out *arrow.Schema, filters []scan.Filter) ([]scan.Part, error) {
	if st.tbl.CurrentSnapshot() == nil {
		return nil, nil
	}
	// A scan of no columns (count(*)) still reads one to count rows.
	names := make([]string, 0, len(cols))
	for _, c := range cols {
		names = append(names, schema.Field(c).Name)
	}
	if len(names) == 0 {
		names = append(names, schema.Field(0).Name)
	}
	// The filters prune files (partition and column statistics); the files
	// are then read whole, without a row filter: the engine applies every
	// filter again, and a file read whole can be cached whole.
	opts := []table.ScanOption{table.WithSelectedFields(names...), table.WithCaseSensitive(false)}
	read := st.tbl.Scan(opts...)
	plan := read
	if expr := icebergFilter(schema, filters); expr != nil {
		plan = st.tbl.Scan(append(opts, table.WithRowFilter(expr))...)
	}
	tasks, err := plan.PlanFiles(ctx)
	if err != nil {
		return nil, fmt.Errorf("plan lake scan of %s: %w", u.lt.t.Name(), err)
	}
	parts := make([]scan.Part, len(tasks))
	for i := range tasks {
		task := tasks[i]
		task.Residual = nil
		parts[i] = &lakePart{scan: read, task: task, out: out, cols: cols, s: u.s, table: u.lt.t.Def().ID}
	}
	return parts, nil
}

// icebergFilter turns the pushed filters into one Iceberg conjunction; a
// filter of a type it cannot express is left out (the engine applies every
// filter again, pushed ones only prune).
func icebergFilter(schema *arrow.Schema, filters []scan.Filter) iceberg.BooleanExpression {
	var exprs []iceberg.BooleanExpression
	for _, f := range filters {
		if f.Column < 0 || f.Column >= schema.NumFields() {
			continue
		}
		field := schema.Field(f.Column)
		if e := icebergPredicate(field, f); e != nil {
			exprs = append(exprs, e)
		}
	}
	switch len(exprs) {
	case 0:
		return nil
	case 1:
		return exprs[0]
	}
	return iceberg.NewAnd(exprs[0], exprs[1], exprs[2:]...)
}

func icebergPredicate(field arrow.Field, f scan.Filter) iceberg.BooleanExpression {
	if field.Type.ID() == arrow.LIST || field.Type.ID() == arrow.MAP || field.Type.ID() == arrow.STRUCT {
		return nil // iceberg-go's manifest evaluator binds no nested column
	}
	ref := iceberg.Reference(field.Name)
	switch f.Op {
	case "IS NULL":
		return iceberg.IsNull(ref)
	case "IS NOT NULL":
		return iceberg.NotNull(ref)
	}
	switch v := f.Value.(type) {
	case int8:
		return compare(ref, f.Op, int32(v))
	case int16:
		return compare(ref, f.Op, int32(v))
	case int32:
		return compare(ref, f.Op, v)
	case int64:
		return compare(ref, f.Op, v)
	case float32:
		if floatPushable(f.Op, float64(v)) {
			return compare(ref, f.Op, v)
		}
	case float64:
		if floatPushable(f.Op, v) {
			return compare(ref, f.Op, v)
		}
	case string:
		return compare(ref, f.Op, v)
	case bool:
		if f.Op == "=" { // iceberg-go filters rows with Arrow compute, which does not order booleans
			return compare(ref, f.Op, v)
		}
	case arrow.Date32:
		return compare(ref, f.Op, iceberg.Date(v))
	case arrow.Time64:
		if tt, ok := field.Type.(*arrow.Time64Type); ok && tt.Unit == arrow.Microsecond {
			return compare(ref, f.Op, iceberg.Time(v))
		}
	case arrow.Timestamp:
		if tt, ok := field.Type.(*arrow.TimestampType); ok && tt.Unit == arrow.Microsecond {
			return compare(ref, f.Op, iceberg.Timestamp(v))
		}
	case decimal128.Num:
		if dt, ok := field.Type.(*arrow.Decimal128Type); ok {
			return compare(ref, f.Op, iceberg.Decimal{Val: v, Scale: int(dt.Scale)})
		}
	}
	return nil
}

// floatPushable says whether a comparison of a float column can go to
// Iceberg, which reads NaN the IEEE way (never greater, never equal) while
// SQL (DuckDB) orders NaN above every number and equal to itself: x > c and
// x >= c hold for NaN rows in SQL, and a NaN value compares as SQL does.
// Only < and <= against a number agree.
func floatPushable(op string, v float64) bool {
	return !math.IsNaN(v) && (op == "<" || op == "<=")
}

func compare[T iceberg.LiteralType](ref iceberg.UnboundTerm, op string, v T) iceberg.BooleanExpression {
	switch op {
	case "=":
		return iceberg.EqualTo(ref, v)
	case "<":
		return iceberg.LessThan(ref, v)
	case "<=":
		return iceberg.LessThanEqual(ref, v)
	case ">":
		return iceberg.GreaterThan(ref, v)
	case ">=":
		return iceberg.GreaterThanEqual(ref, v)
	}
	return nil
}

// lakePart reads one data file.
type lakePart struct {
	scan  *table.Scan
	task  table.FileScanTask
	out   *arrow.Schema
	cols  []int // the table columns of out
	s     *Service
	table int64
}

// lakeChunkRows is the rows of each record a part cut from cached columns
// sends.
const lakeChunkRows = 128 << 10

func (p *lakePart) Open(ctx context.Context) (scan.RecordStream, error) {
	return scan.Produce(ctx, 2, func(ctx context.Context, send func(arrow.RecordBatch) bool) error {
		var err error
		switch {
		case p.out.NumFields() == 0:
			// count(*): a data file's row count is in the manifest (the
			// tables carry no delete files), no need to read it.
			n := p.task.File.Count()
			for off := int64(0); off < n; off += lakeChunkRows {
				if !send(array.NewRecordBatch(p.out, nil, min(lakeChunkRows, n-off))) {
					return nil
				}
			}
		case p.cacheable():
			err = p.readCached(ctx, send)
		default:
			err = p.stream(ctx, send)
		}
		if err != nil {
			return fmt.Errorf("read lake file %s: %w", p.task.File.FilePath(), err)
		}
		return nil
	}), nil
}

// cacheable says whether the part's columns go through the cache: whole
// files whose columns fit in a quarter of it (8 bytes a value is a floor
// of the decoded size).
func (p *lakePart) cacheable() bool {
	c := p.s.cache
	return c != nil && p.task.Start == 0 && p.task.File.Count()*int64(len(p.cols))*8 <= c.MaxBytes()/4
}

// stream reads the file and sends its records as they come.
func (p *lakePart) stream(ctx context.Context, send func(arrow.RecordBatch) bool) error {
	_, recs, err := p.scan.ReadTasks(ctx, []table.FileScanTask{p.task})
	if err != nil {
		return err
	}
	for rec, err := range recs {
		if err != nil {
			return err
		}
		// ReadTasks hands each record over: released once conformed.
		out, err := conformLakeRecord(rec, p.out, p.s.cfg.Mem)
		rec.Release()
		if err != nil {
			return err
		}
		if !send(out) {
			return nil
		}
	}
	return nil
}

// readCached sends the file's columns from the cache, reading the file
// (all of the part's columns) once when one is missing.
func (p *lakePart) readCached(ctx context.Context, send func(arrow.RecordBatch) bool) error {
	c := p.s.cache
	file := p.s.fileID(p.task.File.FilePath())
	cols := make([]arrow.Array, len(p.cols))
	defer func() {
		for _, a := range cols {
			if a != nil {
				a.Release()
			}
		}
	}()
	complete := true
	for i, col := range p.cols {
		if cols[i] = c.GetLake(p.table, file, col); cols[i] == nil {
			complete = false
		}
	}
	if !complete {
		read, err := p.readWhole(ctx)
		if err != nil {
			return err
		}
		for i, col := range p.cols {
			if cols[i] != nil {
				cols[i].Release()
			}
			cols[i] = read[i]
			c.PutLake(p.table, file, col, read[i])
		}
	}
	n := int64(cols[0].Len())
	for off := int64(0); off < n; off += lakeChunkRows {
		end := min(n, off+lakeChunkRows)
		slices := make([]arrow.Array, len(cols))
		for i, a := range cols {
			slices[i] = array.NewSlice(a, off, end)
		}
		rec := array.NewRecordBatch(p.out, slices, end-off)
		for _, a := range slices {
			a.Release()
		}
		if !send(rec) {
			return nil
		}
	}
	return nil
}

// readWhole reads the part's columns of the whole file, one array each.
func (p *lakePart) readWhole(ctx context.Context) ([]arrow.Array, error) {
	_, recs, err := p.scan.ReadTasks(ctx, []table.FileScanTask{p.task})
	if err != nil {
		return nil, err
	}
	chunks := make([][]arrow.Array, len(p.cols))
	defer func() {
		for _, cs := range chunks {
			for _, a := range cs {
				a.Release()
			}
		}
	}()
	for rec, err := range recs {
		if err != nil {
			return nil, err
		}
		out, err := conformLakeRecord(rec, p.out, p.s.cfg.Mem)
		rec.Release()
		if err != nil {
			return nil, err
		}
		for i := range p.cols {
			a := out.Column(i)
			a.Retain()
			chunks[i] = append(chunks[i], a)
		}
		out.Release()
	}
	whole := make([]arrow.Array, len(p.cols))
	for i, cs := range chunks {
		if len(cs) == 0 {
			whole[i] = array.MakeArrayOfNull(p.s.cfg.Mem, p.out.Field(i).Type, 0)
			continue
		}
		a, err := array.Concatenate(cs, p.s.cfg.Mem)
		if err != nil {
			for _, w := range whole[:i] {
				w.Release()
			}
			return nil, err
		}
		whole[i] = a
	}
	return whole, nil
}
