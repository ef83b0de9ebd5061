package flightsrv

import (
	"context"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow/flight"

	"github.com/lakestream/lakestream/catalog"
	"github.com/lakestream/lakestream/planner"
	"github.com/lakestream/lakestream/tables"
)

// Queries the engine runs are planned into self-contained tickets: the
// statement, its bound parameters and the reads of its tables pinned at
// GetFlightInfo (tables.Pin). DoGet runs the statement with the pins on
// its context, so any connection — a distributed reader's executors — can
// read any endpoint until the ticket expires, and sees the tables as they
// were planned, not as they are at DoGet.
//
// A row-wise query of one table (duck.RowWiseScan: a projection and a
// filter, no aggregate, order, limit, join or subquery) is split: its
// table's capture is spread over the endpoints as a plain scan's is (the
// lake snapshot's data files and each bucket's log range, grouped by
// endpointGroups), and each endpoint runs the statement over its group
// alone. Every row of the capture is in one group, and the statement's
// rows are each made from one table row, so the endpoints' results
// together are the statement's result over the one capture.
//
// Not pinned, so read as they are at DoGet: a primary-key table's table
// layer (its live keys cannot be found again later; tables.Pin), system
// tables, and anything the engine resolves otherwise. A query reading one
// is not split.

// rowWiser is the engine's RowWiseScan (planner/duck).
type rowWiser interface {
	RowWiseScan(ctx context.Context, sql string) (db, table string, ok bool, err error)
}

// queryInfo plans a statement the engine runs at DoGet: described now,
// with the tables it binds pinned, in one endpoint, or one per group of
// its table's parts when it is split.
func (s *Server) queryInfo(ctx context.Context, st *planner.Statement, handle string, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	rctx, resolved := tables.RecordResolved(ctx)
	schema, _, err := s.describe(rctx, st)
	if err != nil {
		return nil, err
	}
	var args []any
	if handle != "" {
		p, err := s.preparedOf(ctx, handle)
		if err != nil {
			return nil, err
		}
		if args, err = p.args(); err != nil {
			return nil, err
		}
		if schema, err = s.preparedSchema(ctx, handle, schema); err != nil {
			return nil, err
		}
	}
	params, err := encodeParams(args, s.opts.Mem) // params.go
	if err != nil {
		return nil, err
	}
	endpoints, err := s.queryPins(ctx, st.SQL, resolved.List())
	if err != nil {
		return nil, err
	}
	info := &flight.FlightInfo{
		Schema:           flight.SerializeSchema(schema, s.opts.Mem),
		FlightDescriptor: desc,
		TotalRecords:     -1,
		TotalBytes:       -1,
	}
	for _, pins := range endpoints {
		ep, err := s.endpoint(ctx, &ticket{Kind: "query", SQL: st.SQL, Params: params, Pins: pins})
		if err != nil {
			return nil, err
		}
		info.Endpoint = append(info.Endpoint, ep)
	}
	return info, nil
}

// queryPins captures the table layers a statement binds (resolved, as the
// engine bound them while describing it) and returns the pins of each
// endpoint: one per group of parts for a split query, else one endpoint
// pinning every pinnable table whole.
func (s *Server) queryPins(ctx context.Context, sql string, resolved []tables.Resolved) ([][]tables.Pin, error) {
	reads := distinctReads(resolved)
	if split, ok, err := s.splitPins(ctx, sql, reads); err != nil || ok {
		return split, err
	}
	var pins []tables.Pin
	for _, r := range reads {
		if !r.Table.Pinnable(r.Layer) {
			continue
		}
		v, err := r.Table.Capture(ctx, r.Layer)
		if err != nil {
			return nil, err
		}
		if p, ok := v.Pin(); ok {
			pins = append(pins, p)
		}
	}
	return [][]tables.Pin{pins}, nil
}

// splitPins splits a row-wise query of one pinnable table: ok is false
// for any other statement.
func (s *Server) splitPins(ctx context.Context, sql string, reads []tables.Resolved) ([][]tables.Pin, bool, error) {
	if s.rowwise == nil || len(reads) != 1 || !reads[0].Table.Pinnable(reads[0].Layer) {
		return nil, false, nil
	}
	db, name, ok, err := s.rowwise.RowWiseScan(ctx, sql)
	if err != nil || !ok {
		return nil, false, err
	}
	// The engine bound exactly this table layer, and nothing else.
	t, layer, err := s.store.Resolve(ctx, db, name)
	if err != nil || t.Def().ID != reads[0].Table.Def().ID || layer != reads[0].Layer {
		return nil, false, nil
	}
	v, err := t.Capture(ctx, layer)
	if err != nil {
		return nil, false, err
	}
	whole, ok := v.Pin()
	if !ok {
		return nil, false, nil
	}
	files, err := v.Files(ctx)
	if err != nil {
		return nil, false, err
	}
	groups := endpointGroups(files, v.Ranges, s.opts.MaxEndpoints)
	if len(groups) <= 1 {
		return [][]tables.Pin{{whole}}, true, nil // nothing to split: one endpoint reads it all
	}
	out := make([][]tables.Pin, len(groups))
	for i, g := range groups {
		p := whole
		p.Snapshot, p.Files, p.Ranges = 0, g.files, g.ranges
		if len(g.files) > 0 {
			p.Snapshot = whole.Snapshot
		}
		out[i] = []tables.Pin{p}
	}
	return out, true, nil
}

// distinctReads is resolved with each table layer once (DuckDB may bind a
// reference more than once).
func distinctReads(resolved []tables.Resolved) []tables.Resolved {
	type key struct {
		id    int64
		layer tables.Layer
	}
	seen := map[key]bool{}
	var out []tables.Resolved
	for _, r := range resolved {
		k := key{r.Table.Def().ID, r.Layer}
		if !seen[k] {
			seen[k] = true
			out = append(out, r)
		}
	}
	return out
}

// partGroup is what one endpoint of a scan or a split query reads: data
// files of the lake snapshot and log ranges.
type partGroup struct {
	files  []string
	ranges []tables.Range
}

// ticketFileBytes bounds the file paths of one ticket: a lake of many
// files gets more endpoints.
const ticketFileBytes = 32 << 10

// endpointGroups spreads a capture's data files and log ranges over
// endpoints, round robin: as many as there are parts, up to maxEndpoints,
// or more when the file paths would not fit in ticketFileBytes each.
// Every part is in exactly one group.
func endpointGroups(files []tables.LakeFile, ranges []tables.Range, maxEndpoints int) []partGroup {
	pathBytes := 0
	for _, f := range files {
		pathBytes += len(f.Path)
	}
	parts := len(files) + len(ranges)
	groups := make([]partGroup, min(parts, max(maxEndpoints, pathBytes/ticketFileBytes+1)))
	for i := range parts {
		g := &groups[i%len(groups)]
		if i < len(files) {
			g.files = append(g.files, files[i].Path)
			continue
		}
		g.ranges = append(g.ranges, ranges[i-len(files)])
	}
	return groups
}

// queryTicket is what DoGet of a query ticket runs with: ctx carrying the
// ticket's pins, and its parameters. A pinned table dropped since is
// ErrPinStale (FailedPrecondition): its name may now be another table's.
func (s *Server) queryTicket(ctx context.Context, tk *ticket) (context.Context, []any, error) {
	for _, p := range tk.Pins {
		if _, err := s.store.ByID(ctx, p.Table); err != nil {
			if errors.Is(err, catalog.ErrTableNotFound) {
				return nil, nil, fmt.Errorf("%w: table %d was dropped: plan the query again", tables.ErrPinStale, p.Table)
			}
			return nil, nil, err
		}
	}
	args, err := decodeParams(tk.Params, s.opts.Mem) // params.go
	if err != nil {
		return nil, nil, err
	}
	return tables.WithPins(ctx, tk.Pins), args, nil
}
