package flightsrv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"

	"github.com/lakestream/lakestream/catalog"
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
	return s.execUpdate(ctx, st, nil)
}

// execUpdate runs a statement that returns a row count: DDL or INSERT.
// argRows are bound parameter rows (nil: none).
func (s *Server) execUpdate(ctx context.Context, st *planner.Statement, argRows [][]any) (int64, error) {
	switch st.Kind {
	case planner.KindDDL:
		return 0, s.store.Exec(ctx, st.DDL)
	case planner.KindInsert:
		return s.execInsert(ctx, st.Insert, argRows)
	}
	return 0, fmt.Errorf("%w: %s statements return rows; execute them as queries", errInvalid, st.Kind)
}

// flightInfo plans st: DDL is applied now; a scan captures each bucket's
// committed offsets; a query is described and runs at DoGet.
func (s *Server) flightInfo(ctx context.Context, st *planner.Statement, handle string, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	switch st.Kind {
	case planner.KindDDL, planner.KindInsert:
		// Executed as a query (ADBC's execute does that): run it now and
		// report the row count as the result's total records.
		var args [][]any
		if handle != "" {
			p, err := s.prepared.get(handle)
			if err != nil {
				return nil, err
			}
			args = p.argRows()
		}
		n, err := s.execUpdate(ctx, st, args)
		if err != nil {
			return nil, err
		}
		return &flight.FlightInfo{Schema: flight.SerializeSchema(emptySchema, s.opts.Mem), FlightDescriptor: desc, TotalRecords: n, TotalBytes: -1}, nil
	case planner.KindScan:
		if s.servesPlain(ctx, st.Scan) {
			return s.scanInfo(ctx, st.Scan, desc)
		}
	case planner.KindChanges:
		return s.changesInfo(ctx, st.Changes, desc)
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
	case planner.KindInsert:
		return s.describeInsert(ctx, st.Insert)
	case planner.KindChanges:
		t, cols, err := s.resolveChanges(ctx, st.Changes)
		if err != nil {
			return nil, nil, err
		}
		return projectSchema(t.ChangelogSchema(), cols), emptySchema, nil
	case planner.KindScan:
		if s.servesPlain(ctx, st.Scan) {
			t, cols, _, err := s.resolveScan(ctx, st.Scan)
			if err != nil {
				return nil, nil, err
			}
			return projectSchema(t.Def().ArrowSchema(), cols), emptySchema, nil
		}
	}
	if s.engine == nil {
		return nil, nil, fmt.Errorf("%w: only plain scans (SELECT * or columns FROM a table) and DDL are served by this node", errUnsupported)
	}
	schema, params, err := s.engine.Describe(ctx, st.SQL)
	if err != nil {
		return nil, nil, err
	}
	return s.keepNotNull(ctx, st, schema), params, nil
}

// keepNotNull gives the engine's result schema of a plain scan the NOT NULL
// of the table's columns, which DuckDB does not carry: a plain scan answers
// with the table's schema whichever path serves it. Other statements keep
// the engine's schema.
func (s *Server) keepNotNull(ctx context.Context, st *planner.Statement, schema *arrow.Schema) *arrow.Schema {
	if st.Kind != planner.KindScan {
		return schema
	}
	t, cols, _, err := s.resolveScan(ctx, st.Scan)
	if err != nil || len(cols) != schema.NumFields() {
		return schema
	}
	want := projectSchema(t.Def().ArrowSchema(), cols)
	fields := schema.Fields()
	for i, f := range fields {
		w := want.Field(i)
		if !w.Nullable && strings.EqualFold(f.Name, w.Name) && arrow.TypeEqual(f.Type, w.Type) {
			fields[i].Nullable = false
		}
	}
	md := schema.Metadata()
	return arrow.NewSchema(fields, &md)
}

func (s *Server) resolveScan(ctx context.Context, ps *planner.PlainScan) (t *tables.Table, cols []int, lakeOnly bool, err error) {
	if t, lakeOnly, err = s.scanTable(ctx, ps); err != nil {
		return nil, nil, false, err
	}
	def := t.Def()
	if ps.Columns == nil {
		cols := make([]int, len(def.Columns))
		for i := range cols {
			cols[i] = i
		}
		return t, cols, lakeOnly, nil
	}
	cols = make([]int, len(ps.Columns))
	for i, name := range ps.Columns {
		c := columnIndexFold(def, name)
		if c < 0 {
			return nil, nil, false, fmt.Errorf("%w: column %q not found in table %s", errInvalid, name, def.FullName())
		}
		cols[i] = c
	}
	return t, cols, lakeOnly, nil
}

// scanTable finds the table a plain scan names: a table of the store, or
// "t$lake", the lake layer of a tiered table t (lakeOnly).
func (s *Server) scanTable(ctx context.Context, ps *planner.PlainScan) (t *tables.Table, lakeOnly bool, err error) {
	t, err = s.store.Get(ctx, ps.DB, ps.Table)
	if err == nil || !errors.Is(err, catalog.ErrTableNotFound) {
		return t, false, err
	}
	n := len(ps.Table) - len(tables.LakeSuffix)
	if n <= 0 || !strings.EqualFold(ps.Table[n:], tables.LakeSuffix) {
		return nil, false, err
	}
	base, berr := s.store.Get(ctx, ps.DB, ps.Table[:n])
	if berr != nil || base.LakeFiles() == nil {
		return nil, false, err
	}
	return base, true, nil
}

// servesPlain reports whether a plain scan is served from the stored
// batches and, for a tiered table, the lake's files as they are (scanInfo)
// rather than by the query engine: the engine serves it when the name is
// not a table of the store (a system table such as lakestream.tiering, or
// an unknown name, which the engine reports), and when some of a table's
// rows are in a lake that has no file reader.
func (s *Server) servesPlain(ctx context.Context, ps *planner.PlainScan) bool {
	if s.engine == nil {
		return true
	}
	t, lakeOnly, err := s.scanTable(ctx, ps)
	if err != nil {
		return false
	}
	return lakeOnly || !tiered(t) || t.LakeFiles() != nil
}

// tiered reports whether some of t's rows are in the lake.
func tiered(t *tables.Table) bool {
	for _, o := range t.Tiered() {
		if o > 0 {
			return true
		}
	}
	return false
}

// scanSplit captures what a scan of t reads: for a tiered table the lake
// split, then the log ranges from its offsets to the committed ends (none
// for lakeOnly). Should retention have deleted log above the split's
// offsets in between (a round committed and retention ran), the split is
// stale and is captured again.
func scanSplit(ctx context.Context, t *tables.Table, lakeOnly bool) (tables.LakeSplit, []tables.Range, error) {
	lake := t.LakeFiles()
	for attempt := 0; ; attempt++ {
		var split tables.LakeSplit
		var err error
		if lake != nil && (tiered(t) || lakeOnly) {
			if split, err = lake.Split(ctx); err != nil {
				return split, nil, err
			}
		}
		if lakeOnly {
			return split, nil, nil
		}
		var live []tables.Range
		stale := false
		for _, r := range t.Snapshot() {
			if split.Offsets != nil {
				stale = stale || r.From > split.Offsets[r.Bucket]
				r.From = max(r.From, split.Offsets[r.Bucket])
			}
			if r.To > r.From {
				live = append(live, r)
			}
		}
		if !stale {
			return split, live, nil
		}
		if attempt == 2 {
			return split, nil, fmt.Errorf("scan %s: the log moved past the lake's offsets three times while planning: try again", t.Name())
		}
	}
}

// ticketFileBytes bounds the file paths of one scan ticket: a lake of many
// files gets more endpoints.
const ticketFileBytes = 32 << 10

// scanInfo captures what a scan reads and returns one endpoint per group
// of parts, so clients fetch in parallel. A log table's parts are its
// buckets' committed ranges. A tiered table's are a lake split (the
// snapshot's data files, and each bucket's tiered offset) and then the log
// ranges from those offsets to the committed ends: captured in that order,
// they hold every row once, and the tickets pin them. "t$lake" reads the
// split's files alone.
func (s *Server) scanInfo(ctx context.Context, ps *planner.PlainScan, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	t, cols, lakeOnly, err := s.resolveScan(ctx, ps)
	if err != nil {
		return nil, err
	}
	def := t.Def()
	split, live, err := scanSplit(ctx, t, lakeOnly)
	if err != nil {
		return nil, err
	}
	rows := split.Rows
	for _, r := range live {
		rows += r.To - r.From
	}
	info := &flight.FlightInfo{
		Schema:           flight.SerializeSchema(projectSchema(def.ArrowSchema(), cols), s.opts.Mem),
		FlightDescriptor: desc,
		TotalRecords:     rows,
		TotalBytes:       -1,
	}
	var pathBytes int
	for _, f := range split.Files {
		pathBytes += len(f)
	}
	parts := len(split.Files) + len(live)
	groups := min(parts, max(s.opts.MaxEndpoints, pathBytes/ticketFileBytes+1))
	for g := 0; g < groups; g++ {
		tk := &ticket{Kind: "scan", Table: def.ID, Schema: def.SchemaID, Cols: cols}
		for i := g; i < parts; i += groups {
			if i < len(split.Files) {
				tk.Snapshot = split.Snapshot
				tk.Files = append(tk.Files, split.Files[i])
				continue
			}
			tk.Ranges = append(tk.Ranges, live[i-len(split.Files)])
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
	if st.Kind != planner.KindDDL && !(st.Kind == planner.KindInsert && s.engine == nil) {
		if p.dataset, p.paramsSchema, err = s.describe(ctx, st); err != nil {
			return res, err
		}
	}
	isUpdate := st.Kind == planner.KindDDL || st.Kind == planner.KindInsert
	res.IsUpdate = &isUpdate
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
	var recs []arrow.RecordBatch
	for rdr.Next() {
		rec := rdr.RecordBatch()
		rec.Retain()
		defer rec.Release()
		recs = append(recs, rec)
	}
	if err := rdr.Err(); err != nil {
		return nil, err
	}
	if err := p.bind(recs); err != nil {
		return nil, err
	}
	return h, nil
}

func (s *Server) DoPutPreparedStatementUpdate(ctx context.Context, cmd flightsql.PreparedStatementUpdate, rdr flight.MessageReader) (int64, error) {
	p, err := s.prepared.get(string(cmd.GetPreparedStatementHandle()))
	if err != nil {
		return 0, err
	}
	var rows [][]any
	for rdr.Next() {
		r, err := paramRows(rdr.RecordBatch())
		if err != nil {
			return 0, err
		}
		rows = append(rows, r...)
	}
	if err := rdr.Err(); err != nil {
		return 0, err
	}
	if rows == nil {
		rows = p.argRows()
	}
	return s.execUpdate(ctx, p.stmt, rows)
}

// columnIndexFold finds a column by name, exactly or else ignoring case, as
// DuckDB resolves unquoted names.
func columnIndexFold(def *catalog.Table, name string) int {
	if c := def.ColumnIndex(name); c >= 0 {
		return c
	}
	for j, col := range def.Columns {
		if strings.EqualFold(col.Name, name) {
			return j
		}
	}
	return -1
}

// describeInsert returns no result columns and the parameters of the
// INSERT's source.
func (s *Server) describeInsert(ctx context.Context, ins *planner.Insert) (*arrow.Schema, *arrow.Schema, error) {
	if s.engine == nil {
		return nil, nil, fmt.Errorf("%w: INSERT needs the query engine", errUnsupported)
	}
	t, err := s.store.Get(ctx, ins.DB, ins.Table)
	if err != nil {
		return nil, nil, err
	}
	target, err := insertTarget(t.Def(), ins.Columns)
	if err != nil {
		return nil, nil, err
	}
	q, err := ins.SourceQuery(target)
	if err != nil {
		return nil, nil, err
	}
	_, params, err := s.engine.Describe(ctx, q)
	if params == nil {
		params = emptySchema
	}
	return emptySchema, params, err
}
