package flightsrv

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"

	"github.com/lakestream/lakestream/catalog"
	"github.com/lakestream/lakestream/internal/scan"
	"github.com/lakestream/lakestream/planner"
	"github.com/lakestream/lakestream/tables"
)

// changesInfo plans a subscription: it resolves the start position of every
// bucket now ('latest' means the rows committed after this call) and
// splits the buckets into the asked number of endpoints, each an unbounded
// stream.
func (s *Server) changesInfo(ctx context.Context, c *planner.Changes, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	t, cols, schema, err := s.resolveChanges(ctx, c)
	if err != nil {
		return nil, err
	}
	start, err := parseStart(t, c)
	if err != nil {
		return nil, err
	}
	info := &flight.FlightInfo{
		Schema:           flight.SerializeSchema(schema, s.opts.Mem),
		FlightDescriptor: desc,
		TotalRecords:     -1,
		TotalBytes:       -1,
	}
	add := func(ranges []tables.Range, at Location, st *tables.Start) error {
		groups := min(c.Endpoints, len(ranges))
		for g := 0; g < groups; g++ {
			tk := &ticket{Kind: "changes", Table: t.Def().ID, Cols: cols, Where: c.Where, Start: st}
			for i := g; i < len(ranges); i += groups {
				tk.Ranges = append(tk.Ranges, ranges[i])
			}
			ep, err := s.endpoint(ctx, tk)
			if err != nil {
				return err
			}
			info.Endpoint = append(info.Endpoint, locate(ep, at))
		}
		return nil
	}
	if s.opts.Placement == nil {
		starts, err := startOffsets(ctx, t, start)
		if err != nil {
			return nil, err
		}
		return info, add(starts, Location{}, nil)
	}
	// In a cluster: the buckets this node serves start where it resolves
	// them, the others where their node resolves the same start at DoGet
	// (placement.go); each node checks the offsets of its own buckets.
	locs, err := s.opts.Placement.ReadFrom(ctx, t.Def().ID, t.Log().Buckets())
	if err != nil {
		return nil, err
	}
	here, there, err := splitByNode(t, locs)
	if err != nil {
		return nil, err
	}
	starts, err := startOffsets(ctx, t, startOf(start, here))
	if err != nil {
		return nil, err
	}
	var mine []tables.Range
	for _, b := range here {
		mine = append(mine, starts[b])
	}
	if err := add(mine, s.opts.Placement.Self(), nil); err != nil {
		return nil, err
	}
	for _, g := range there {
		var rs []tables.Range
		for _, b := range g.buckets {
			rs = append(rs, tables.Range{Bucket: b, From: -1, To: -1})
		}
		if err := add(rs, g.at, &start); err != nil {
			return nil, err
		}
	}
	return info, nil
}

// resolveChanges finds the table, the selected changelog columns and
// their schema, and checks the WHERE against them, so that a bad filter
// fails at planning.
func (s *Server) resolveChanges(ctx context.Context, c *planner.Changes) (*tables.Table, []int, *arrow.Schema, error) {
	t, err := s.table(ctx, catalog.PrivSelect, c.DB, c.Table)
	if err != nil {
		return nil, nil, nil, err
	}
	schema := t.ChangelogSchema()
	cols := scan.Columns(nil, schema.NumFields())
	if c.Columns != nil {
		cols = make([]int, len(c.Columns))
		for i, name := range c.Columns {
			cols[i] = scan.FieldIndex(schema, name)
			if cols[i] < 0 {
				return nil, nil, nil, fmt.Errorf("%w: column %q not found in changes of %s", errInvalid, name, t.Name())
			}
		}
	}
	if _, _, err := planner.BindFilter(schema, cols, c.Where); err != nil {
		return nil, nil, nil, err
	}
	out, err := scan.ProjectSchema(schema, cols)
	return t, cols, withColumnMetadata(out, &columnOrigin{db: t.Def().DB, table: t.Def().Name}), err
}

// parseStart reads the start of changes().
func parseStart(t *tables.Table, c *planner.Changes) (tables.Start, error) {
	var start tables.Start
	switch {
	case c.StartTime:
		at, err := c.StartMicros()
		if err != nil {
			return start, err
		}
		start = tables.Start{At: tables.StartTime, Time: at}
	case strings.EqualFold(c.Start, "earliest"):
	case strings.EqualFold(c.Start, "latest"):
		start.At = tables.StartLatest
	default:
		listed, err := planner.ParseOffsets(c.Start)
		if err != nil {
			return start, fmt.Errorf("%w: %v", errInvalid, err)
		}
		for b := range listed {
			if n := t.Log().Buckets(); b >= n {
				return start, fmt.Errorf("%w: changes(): bucket %d does not exist (the table has %d)", errInvalid, b, n)
			}
		}
		start = tables.Start{At: tables.StartOffsets, Offsets: listed}
	}
	return start, nil
}

// startOffsets resolves each bucket's first offset, as the table here
// resolves start.
func startOffsets(ctx context.Context, t *tables.Table, start tables.Start) ([]tables.Range, error) {
	froms, err := t.StartOffsets(ctx, start)
	if err != nil {
		return nil, fmt.Errorf("changes(): %w", err)
	}
	out := make([]tables.Range, len(froms))
	for b, from := range froms {
		out[b] = tables.Range{Bucket: b, From: from, To: -1}
	}
	return out, nil
}

// streamChanges follows the ticket's buckets and emits their rows to out
// as they commit, until ctx ends. Each bucket is read by its own goroutine,
// which hands its records over one at a time; the stream's window
// (pipe.go) is all the buffering there is, so a slow client holds a batch
// per bucket and its window, and slows only its own readers, never the
// writers.
func (s *Server) streamChanges(ctx context.Context, tk *ticket, out flight.DataStreamWriter) error {
	t, err := s.store.ByID(ctx, tk.Table)
	if err != nil {
		return err
	}
	schema := t.ChangelogSchema()
	sent, err := scan.ProjectSchema(schema, tk.Cols)
	if err != nil {
		return fmt.Errorf("%w: ticket: %v", errInvalid, err)
	}
	sent = withColumnMetadata(sent, &columnOrigin{db: t.Def().DB, table: t.Def().Name}) // as changesInfo announced it
	read, filter, err := planner.BindFilter(schema, tk.Cols, tk.Where)
	if err != nil {
		return err
	}
	if err := s.checkHere(ctx, t, ticketBuckets(t, tk)); err != nil { // placement.go
		return err
	}
	if err := resolveStarts(ctx, t, tk); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	recs := make(chan arrow.RecordBatch)
	errc := make(chan error, len(tk.Ranges))
	var followers sync.WaitGroup
	for _, r := range tk.Ranges {
		followers.Add(1)
		go func() {
			defer followers.Done()
			errc <- t.Follow(ctx, r.Bucket, r.From, read, recs)
		}()
	}
	defer drain(recs, cancel, &followers)
	sub := s.subs.open(t, tk.Ranges)
	defer s.subs.close(sub)
	w := newRecordWriter(out, ipc.WithSchema(sent), ipc.WithAllocator(s.opts.Mem))
	defer w.Close()
	// An empty first message carries the schema at once, so a client's
	// execute returns before the first row arrives.
	empty := emptyRecord(sent, s)
	err = w.Write(empty)
	empty.Release()
	if err != nil {
		return err
	}
	for {
		select {
		case rec := <-recs:
			sub.read.Add(rec.NumRows())
			if err := s.authorizeFollow(ctx, t); err != nil { // authorize.go: a REVOKE ends the stream
				rec.Release()
				return err
			}
			if err := s.sendChanges(w, sent, rec, filter); err != nil {
				return err
			}
		case err := <-errc:
			if errors.Is(err, context.Canceled) {
				return nil
			}
			return err
		case <-ctx.Done():
			return nil
		}
	}
}

// resolveStarts resolves the ranges of tk planned on another node (From
// -1) as this node resolves the ticket's start.
func resolveStarts(ctx context.Context, t *tables.Table, tk *ticket) error {
	var starts []tables.Range
	for i, r := range tk.Ranges {
		if r.From >= 0 {
			continue
		}
		if tk.Start == nil {
			return fmt.Errorf("%w: ticket: bucket %d without a start", errInvalid, r.Bucket)
		}
		if starts == nil {
			var mine []int
			for _, r := range tk.Ranges {
				mine = append(mine, r.Bucket)
			}
			var err error
			if starts, err = startOffsets(ctx, t, startOf(*tk.Start, mine)); err != nil {
				return err
			}
		}
		if r.Bucket < 0 || r.Bucket >= len(starts) {
			return fmt.Errorf("%w: ticket bucket %d out of range", errInvalid, r.Bucket)
		}
		tk.Ranges[i].From = starts[r.Bucket].From
	}
	return nil
}

// startOf is start for the buckets of a plan that one node resolves: its
// explicit offsets of other buckets are that node's to check.
func startOf(start tables.Start, buckets []int) tables.Start {
	if start.At != tables.StartOffsets {
		return start
	}
	mine := map[int]int64{}
	for _, b := range buckets {
		if o, ok := start.Offsets[b]; ok {
			mine[b] = o
		}
	}
	start.Offsets = mine
	return start
}

// sendChanges writes rec, which it releases, or the rows of it that meet
// filter; a record of which no row does is not sent.
func (s *Server) sendChanges(w *ipc.Writer, sent *arrow.Schema, rec arrow.RecordBatch, filter *planner.Filter) error {
	if filter != nil {
		var err error
		if rec, err = filter.Apply(rec, s.opts.Mem); err != nil || rec == nil {
			return err
		}
	}
	defer rec.Release()
	out := array.NewRecordBatch(sent, rec.Columns(), rec.NumRows()) // with the announced column metadata
	defer out.Release()
	return w.Write(out)
}

// drain stops the followers and releases what they sent that was not
// written: once they are gone, nothing more arrives.
func drain(out chan arrow.RecordBatch, cancel context.CancelFunc, followers *sync.WaitGroup) {
	cancel()
	followers.Wait()
	for {
		select {
		case rec := <-out:
			rec.Release()
		default:
			return
		}
	}
}

// emptyRecord is a zero-row record of schema.
func emptyRecord(schema *arrow.Schema, s *Server) arrow.RecordBatch {
	b := array.NewRecordBuilder(s.opts.Mem, schema)
	defer b.Release()
	return b.NewRecordBatch()
}
