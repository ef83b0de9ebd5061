package duck

import (
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lakestream/lakestream/internal/scan"
)

// An in-memory scan.Resolver and scan.Table for the tests: records split
// into parts, and a record of every request the engine made.

type fakeResolver struct {
	mu     sync.Mutex
	tables map[string]scan.Table // key "db.name"; db "" is "default"
}

func newFakeResolver() *fakeResolver {
	return &fakeResolver{tables: make(map[string]scan.Table)}
}

func (r *fakeResolver) add(t scan.Table) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.tables[t.Name()] = t
}

func (r *fakeResolver) Table(_ context.Context, db, name string) (scan.Table, error) {
	if db == "" {
		db = "default"
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.tables[db+"."+name]
	if !ok {
		return nil, fmt.Errorf("%s.%s: %w", db, name, scan.ErrTableNotFound)
	}
	return t, nil
}

// fakeTable serves fixed records, split into parts.
type fakeTable struct {
	name   string
	schema *arrow.Schema
	parts  [][]arrow.RecordBatch

	mu       sync.Mutex
	requests []scan.Request

	opened, closed atomic.Int64
}

// newFakeTable splits rec into nparts parts of batches of at most batch
// rows. It keeps its own references; the caller still releases rec.
func newFakeTable(name string, rec arrow.RecordBatch, nparts, batch int) *fakeTable {
	t := &fakeTable{name: name, schema: rec.Schema(), parts: make([][]arrow.RecordBatch, nparts)}
	rows := int(rec.NumRows())
	per := (rows + nparts - 1) / nparts
	for p := range nparts {
		lo, hi := min(p*per, rows), min((p+1)*per, rows)
		for s := lo; s < hi; s += batch {
			t.parts[p] = append(t.parts[p], rec.NewSlice(int64(s), int64(min(s+batch, hi))))
		}
	}
	return t
}

func (t *fakeTable) release() {
	for _, p := range t.parts {
		for _, r := range p {
			r.Release()
		}
	}
}

func (t *fakeTable) Name() string          { return t.name }
func (t *fakeTable) Schema() *arrow.Schema { return t.schema }

func (t *fakeTable) lastRequest() scan.Request {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.requests) == 0 {
		return scan.Request{Columns: []int{-1}}
	}
	return t.requests[len(t.requests)-1]
}

func (t *fakeTable) requestCount() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.requests)
}

func (t *fakeTable) Plan(_ context.Context, req scan.Request) (scan.Plan, error) {
	t.mu.Lock()
	t.requests = append(t.requests, req)
	t.mu.Unlock()
	cols := req.Columns
	if cols == nil {
		cols = make([]int, t.schema.NumFields())
		for i := range cols {
			cols[i] = i
		}
	}
	fields := make([]arrow.Field, len(cols))
	for i, c := range cols {
		fields[i] = t.schema.Field(c)
	}
	p := &fakePlan{schema: arrow.NewSchema(fields, nil)}
	for _, part := range t.parts {
		p.parts = append(p.parts, &fakePart{t: t, recs: part, cols: cols, schema: p.schema})
	}
	return p, nil
}

type fakePlan struct {
	schema *arrow.Schema
	parts  []scan.Part
}

func (p *fakePlan) Schema() *arrow.Schema { return p.schema }
func (p *fakePlan) Parts() []scan.Part    { return p.parts }

type fakePart struct {
	t      *fakeTable
	recs   []arrow.RecordBatch
	cols   []int
	schema *arrow.Schema
}

func (p *fakePart) Open(ctx context.Context) (scan.RecordStream, error) {
	p.t.opened.Add(1)
	return &fakeStream{p: p, ctx: ctx}, nil
}

type fakeStream struct {
	p   *fakePart
	ctx context.Context
	i   int
}

func (s *fakeStream) Next() (arrow.RecordBatch, error) {
	if err := s.ctx.Err(); err != nil {
		return nil, err
	}
	if s.i == len(s.p.recs) {
		return nil, io.EOF
	}
	rec := s.p.recs[s.i]
	s.i++
	cols := make([]arrow.Array, len(s.p.cols))
	for i, c := range s.p.cols {
		cols[i] = rec.Column(c)
	}
	return array.NewRecordBatch(s.p.schema, cols, rec.NumRows()), nil
}

func (s *fakeStream) Close() error {
	s.p.t.closed.Add(1)
	return nil
}

// endlessTable produces batches of a counter column until its reader is
// cancelled: a stand-in for a big or unbounded source.
type endlessTable struct {
	name   string
	schema *arrow.Schema
	batch  int
	alloc  memory.Allocator

	opened, closed, batches atomic.Int64
	// produced gets a value per batch while it has room.
	produced chan struct{}
}

func newEndlessTable(name string, batch int, alloc memory.Allocator) *endlessTable {
	return &endlessTable{
		produced: make(chan struct{}, 64),
		alloc:    alloc,
		name:     name,
		schema:   arrow.NewSchema([]arrow.Field{{Name: "n", Type: arrow.PrimitiveTypes.Int64}}, nil),
		batch:    batch,
	}
}

func (t *endlessTable) Name() string          { return t.name }
func (t *endlessTable) Schema() *arrow.Schema { return t.schema }

func (t *endlessTable) Plan(context.Context, scan.Request) (scan.Plan, error) {
	return &fakePlan{schema: t.schema, parts: []scan.Part{endlessPart{t}}}, nil
}

type endlessPart struct{ t *endlessTable }

func (p endlessPart) Open(ctx context.Context) (scan.RecordStream, error) {
	p.t.opened.Add(1)
	return &endlessStream{t: p.t, ctx: ctx}, nil
}

type endlessStream struct {
	t   *endlessTable
	ctx context.Context
	n   int64
}

func (s *endlessStream) Next() (arrow.RecordBatch, error) {
	if err := s.ctx.Err(); err != nil {
		return nil, err
	}
	b := array.NewInt64Builder(s.t.alloc)
	defer b.Release()
	for range s.t.batch {
		b.Append(s.n)
		s.n++
	}
	col := b.NewArray()
	defer col.Release()
	s.t.batches.Add(1)
	select {
	case s.t.produced <- struct{}{}:
	default:
	}
	return array.NewRecordBatch(s.t.schema, []arrow.Array{col}, int64(s.t.batch)), nil
}

func (s *endlessStream) Close() error {
	s.t.closed.Add(1)
	return nil
}

// failingTable returns its first batch, then err.
type failingTable struct {
	*fakeTable
	err error
}

func (t *failingTable) Plan(ctx context.Context, req scan.Request) (scan.Plan, error) {
	p, err := t.fakeTable.Plan(ctx, req)
	if err != nil {
		return nil, err
	}
	parts := p.Parts()
	out := &fakePlan{schema: p.Schema()}
	for _, part := range parts {
		out.parts = append(out.parts, failingPart{part, t.err})
	}
	return out, nil
}

type failingPart struct {
	scan.Part
	err error
}

func (p failingPart) Open(ctx context.Context) (scan.RecordStream, error) {
	rs, err := p.Part.Open(ctx)
	if err != nil {
		return nil, err
	}
	return &failingStream{RecordStream: rs, err: p.err}, nil
}

type failingStream struct {
	scan.RecordStream
	err  error
	done bool
}

func (s *failingStream) Next() (arrow.RecordBatch, error) {
	if s.done {
		return nil, s.err
	}
	s.done = true
	return s.RecordStream.Next()
}
