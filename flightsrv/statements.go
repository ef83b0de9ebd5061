package flightsrv

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"

	"github.com/lakestream/lakestream/planner"
	"github.com/lakestream/lakestream/tables"
)

var errEOF = io.EOF

var emptySchema = arrow.NewSchema(nil, nil)

// GetFlightInfoStatement plans a statement. DDL runs here, at once.
func (s *Server) GetFlightInfoStatement(ctx context.Context, cmd flightsql.StatementQuery, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	st, err := planner.Classify(cmd.GetQuery())
	if err != nil {
		return nil, err
	}
	return s.flightInfo(ctx, st, "", desc)
}

// GetSchemaStatement describes a statement's result without running it.
func (s *Server) GetSchemaStatement(ctx context.Context, cmd flightsql.StatementQuery, _ *flight.FlightDescriptor) (*flight.SchemaResult, error) {
	st, err := planner.Classify(cmd.GetQuery())
	if err != nil {
		return nil, err
	}
	schema, _, err := s.describe(ctx, st)
	if err != nil {
		return nil, err
	}
	return &flight.SchemaResult{Schema: flight.SerializeSchema(schema, s.opts.Mem)}, nil
}

// DoPutCommandStatementUpdate runs a statement that returns no rows.
func (s *Server) DoPutCommandStatementUpdate(ctx context.Context, cmd flightsql.StatementUpdate) (int64, error) {
	st, err := planner.Classify(cmd.GetQuery())
	if err != nil {
		return 0, err
	}
	return s.execUpdate(ctx, st)
}

func (s *Server) execUpdate(ctx context.Context, st *planner.Statement) (int64, error) {
	if st.Kind != planner.KindDDL {
		return 0, fmt.Errorf("%w: %s statements return rows; execute them as queries", errInvalid, st.Kind)
	}
	return 0, s.store.Exec(ctx, st.DDL)
}

// flightInfo plans st: DDL is applied now; a scan captures each bucket's
// committed offsets; a query is described and runs at DoGet.
func (s *Server) flightInfo(ctx context.Context, st *planner.Statement, handle string, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	switch st.Kind {
	case planner.KindDDL:
		if err := s.store.Exec(ctx, st.DDL); err != nil {
			return nil, err
		}
		return &flight.FlightInfo{Schema: flight.SerializeSchema(emptySchema, s.opts.Mem), FlightDescriptor: desc, TotalRecords: 0, TotalBytes: -1}, nil
	case planner.KindScan:
		return s.scanInfo(ctx, st.Scan, desc)
	}
	schema, _, err := s.describe(ctx, st)
	if err != nil {
		return nil, err
	}
	tk := &ticket{Kind: "query", SQL: st.SQL}
	if handle != "" {
		tk = &ticket{Kind: "prepared", Handle: handle}
	}
	raw, err := tk.encode()
	if err != nil {
		return nil, err
	}
	return &flight.FlightInfo{
		Schema:           flight.SerializeSchema(schema, s.opts.Mem),
		FlightDescriptor: desc,
		Endpoint:         []*flight.FlightEndpoint{{Ticket: &flight.Ticket{Ticket: raw}}},
		TotalRecords:     -1,
		TotalBytes:       -1,
	}, nil
}

// describe returns a statement's result and parameter schemas.
func (s *Server) describe(ctx context.Context, st *planner.Statement) (*arrow.Schema, *arrow.Schema, error) {
	switch st.Kind {
	case planner.KindDDL:
		return emptySchema, emptySchema, nil
	case planner.KindScan:
		t, cols, err := s.resolveScan(ctx, st.Scan)
		if err != nil {
			return nil, nil, err
		}
		return projectSchema(t.Def().ArrowSchema(), cols), emptySchema, nil
	}
	if s.engine == nil {
		return nil, nil, fmt.Errorf("%w: only plain scans (SELECT * or columns FROM a table) and DDL are served by this node", errUnsupported)
	}
	return s.engine.Describe(ctx, st.SQL)
}

func (s *Server) resolveScan(ctx context.Context, ps *planner.PlainScan) (*tables.Table, []int, error) {
	t, err := s.store.Get(ctx, ps.DB, ps.Table)
	if err != nil {
		return nil, nil, err
	}
	def := t.Def()
	if ps.Columns == nil {
		cols := make([]int, len(def.Columns))
		for i := range cols {
			cols[i] = i
		}
		return t, cols, nil
	}
	cols := make([]int, len(ps.Columns))
	for i, name := range ps.Columns {
		c := def.ColumnIndex(name)
		if c < 0 {
			for j, col := range def.Columns {
				if strings.EqualFold(col.Name, name) {
					c = j
					break
				}
			}
		}
		if c < 0 {
			return nil, nil, fmt.Errorf("%w: column %q not found in table %s", errInvalid, name, def.FullName())
		}
		cols[i] = c
	}
	return t, cols, nil
}

// scanInfo captures the committed offsets of every bucket and returns one
// endpoint per group of buckets, so clients fetch in parallel.
func (s *Server) scanInfo(ctx context.Context, ps *planner.PlainScan, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	t, cols, err := s.resolveScan(ctx, ps)
	if err != nil {
		return nil, err
	}
	def := t.Def()
	var rows int64
	var live []tables.Range
	for _, r := range t.Snapshot() {
		if r.To > r.From {
			live = append(live, r)
			rows += r.To - r.From
		}
	}
	info := &flight.FlightInfo{
		Schema:           flight.SerializeSchema(projectSchema(def.ArrowSchema(), cols), s.opts.Mem),
		FlightDescriptor: desc,
		TotalRecords:     rows,
		TotalBytes:       -1,
	}
	groups := min(len(live), s.opts.MaxEndpoints)
	for g := 0; g < groups; g++ {
		tk := &ticket{Kind: "scan", Table: def.ID, Schema: def.SchemaID, Cols: cols}
		for i := g; i < len(live); i += groups {
			tk.Ranges = append(tk.Ranges, live[i])
		}
		raw, err := tk.encode()
		if err != nil {
			return nil, err
		}
		info.Endpoint = append(info.Endpoint, &flight.FlightEndpoint{Ticket: &flight.Ticket{Ticket: raw}})
	}
	return info, nil
}

// CreatePreparedStatement classifies and describes a statement; nothing
// runs until it is executed.
func (s *Server) CreatePreparedStatement(ctx context.Context, req flightsql.ActionCreatePreparedStatementRequest) (flightsql.ActionCreatePreparedStatementResult, error) {
	var res flightsql.ActionCreatePreparedStatementResult
	st, err := planner.Classify(req.GetQuery())
	if err != nil {
		return res, err
	}
	p := &prepared{sql: req.GetQuery(), stmt: st, dataset: emptySchema, paramsSchema: emptySchema}
	if st.Kind != planner.KindDDL {
		if p.dataset, p.paramsSchema, err = s.describe(ctx, st); err != nil {
			return res, err
		}
	}
	res.Handle = []byte(s.prepared.add(p))
	res.DatasetSchema = p.dataset
	res.ParameterSchema = p.paramsSchema
	return res, nil
}

func (s *Server) ClosePreparedStatement(_ context.Context, req flightsql.ActionClosePreparedStatementRequest) error {
	s.prepared.remove(string(req.GetPreparedStatementHandle()))
	return nil
}

func (s *Server) GetFlightInfoPreparedStatement(ctx context.Context, cmd flightsql.PreparedStatementQuery, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	h := string(cmd.GetPreparedStatementHandle())
	p, err := s.prepared.get(h)
	if err != nil {
		return nil, err
	}
	return s.flightInfo(ctx, p.stmt, h, desc)
}

func (s *Server) GetSchemaPreparedStatement(_ context.Context, cmd flightsql.PreparedStatementQuery, _ *flight.FlightDescriptor) (*flight.SchemaResult, error) {
	p, err := s.prepared.get(string(cmd.GetPreparedStatementHandle()))
	if err != nil {
		return nil, err
	}
	return &flight.SchemaResult{Schema: flight.SerializeSchema(p.dataset, s.opts.Mem)}, nil
}

// DoPutPreparedStatementQuery binds parameters.
func (s *Server) DoPutPreparedStatementQuery(_ context.Context, cmd flightsql.PreparedStatementQuery, rdr flight.MessageReader, _ flight.MetadataWriter) ([]byte, error) {
	h := cmd.GetPreparedStatementHandle()
	p, err := s.prepared.get(string(h))
	if err != nil {
		return nil, err
	}
	for rdr.Next() {
		if err := p.bind(rdr.RecordBatch()); err != nil {
			return nil, err
		}
	}
	if err := rdr.Err(); err != nil {
		return nil, err
	}
	return h, nil
}

func (s *Server) DoPutPreparedStatementUpdate(ctx context.Context, cmd flightsql.PreparedStatementUpdate, rdr flight.MessageReader) (int64, error) {
	p, err := s.prepared.get(string(cmd.GetPreparedStatementHandle()))
	if err != nil {
		return 0, err
	}
	for rdr.Next() {
	}
	return s.execUpdate(ctx, p.stmt)
}

// quoteList is for error messages.
func quoteList(names []string) string { return "\"" + strings.Join(names, "\", \"") + "\"" }
