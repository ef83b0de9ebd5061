package flightsrv

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"

	"github.com/lakestream/lakestream/catalog"
	"github.com/lakestream/lakestream/internal/scan"
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

// execUpdate runs a statement that returns a row count: DDL, INSERT,
// DELETE or UPDATE.
// argRows are bound parameter rows (nil: none).
func (s *Server) execUpdate(ctx context.Context, st *planner.Statement, argRows [][]any) (int64, error) {
	switch st.Kind {
	case planner.KindDDL:
		return s.execDDL(ctx, st) // audit.go
	case planner.KindInsert:
		return s.execInsert(ctx, st.Insert, argRows)
	case planner.KindDelete, planner.KindUpdate:
		if n, ok, err := s.dmlInCluster(ctx, st, argRows); ok { // dml_cluster.go
			return n, err
		}
		if st.Kind == planner.KindDelete {
			return s.execDelete(ctx, st.Delete, argRows)
		}
		return s.execUpdateRows(ctx, st.Update, argRows)
	}
	return 0, fmt.Errorf("%w: %s statements return rows; execute them as queries", errInvalid, st.Kind)
}

// flightInfo plans st: DDL is applied now; a scan captures each bucket's
// committed offsets; a query is described, its tables pinned, and it runs
// at DoGet.
func (s *Server) flightInfo(ctx context.Context, st *planner.Statement, handle string, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	if ck, ok := st.DDL.(*catalog.CreateAPIKey); ok {
		return s.apiKeyInfo(ctx, st, ck, desc) // apikeys.go: a DDL statement with a result
	}
	switch st.Kind {
	case planner.KindDDL, planner.KindInsert, planner.KindDelete, planner.KindUpdate:
		// Executed as a query (ADBC's execute does that): run it now and
		// report the row count as the result's total records.
		var args [][]any
		if handle != "" {
			p, err := s.preparedOf(ctx, handle)
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
	case planner.KindShow:
		return s.showInfo(ctx, st, desc) // show.go
	}
	if lp := s.planLookup(ctx, st); lp != nil {
		return s.lookupInfo(ctx, lp, st.SQL, handle, desc)
	}
	return s.queryInfo(ctx, st, handle, desc) // queryplan.go
}

// describe returns a statement's result and parameter schemas.
func (s *Server) describe(ctx context.Context, st *planner.Statement) (*arrow.Schema, *arrow.Schema, error) {
	switch st.Kind {
	case planner.KindDDL:
		if _, ok := st.DDL.(*catalog.CreateAPIKey); ok {
			return apiKeySchema, emptySchema, nil
		}
		return emptySchema, emptySchema, nil
	case planner.KindShow:
		return showSchema(st.Show), emptySchema, nil
	case planner.KindInsert:
		return s.describeInsert(ctx, st.Insert)
	case planner.KindDelete, planner.KindUpdate:
		return s.describeDML(ctx, st)
	case planner.KindChanges:
		_, _, schema, err := s.resolveChanges(ctx, st.Changes)
		return schema, emptySchema, err
	case planner.KindScan:
		if s.servesPlain(ctx, st.Scan) {
			r, err := s.resolveScan(ctx, st.Scan)
			if err != nil {
				return nil, nil, err
			}
			return r.schema, emptySchema, nil
		}
	}
	if lp := s.planLookup(ctx, st); lp != nil {
		return lp.schema, lp.paramSchema(), nil
	}
	if s.engine == nil {
		return nil, nil, fmt.Errorf("%w: only plain scans (SELECT * or columns FROM a table) and DDL are served by this node", errUnsupported)
	}
	schema, params, err := s.engine.Describe(ctx, st.SQL)
	if err != nil {
		return nil, nil, err
	}
	return withColumnMetadata(s.keepNotNull(ctx, st, schema), nil), withColumnMetadata(parameterSchema(params), nil), nil
}

// keepNotNull gives the engine's result schema of a plain scan the NOT NULL
// of the table's columns, which DuckDB does not carry: a plain scan answers
// with the table's schema whichever path serves it. Other statements keep
// the engine's schema.
func (s *Server) keepNotNull(ctx context.Context, st *planner.Statement, schema *arrow.Schema) *arrow.Schema {
	if st.Kind != planner.KindScan {
		return schema
	}
	r, err := s.resolveScan(ctx, st.Scan)
	if err != nil || r.schema.NumFields() != schema.NumFields() {
		return schema
	}
	want := r.schema
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

// plainScan is a plain scan resolved: the table, the layer it reads and
// the columns, with their schema.
type plainScan struct {
	t      *tables.Table
	layer  tables.Layer
	def    *catalog.Table
	cols   []int
	schema *arrow.Schema
}

// resolveScan finds what a plain scan reads: a layer of a table of the
// store ("t" or "t$lake") and columns of it.
func (s *Server) resolveScan(ctx context.Context, ps *planner.PlainScan) (*plainScan, error) {
	if err := s.authorize(ctx, catalog.PrivSelect, ps.DB, ps.Table); err != nil {
		return nil, err
	}
	t, layer, err := s.store.Resolve(ctx, ps.DB, ps.Table)
	if err != nil {
		return nil, err
	}
	r := &plainScan{t: t, layer: layer, def: t.Def()}
	r.cols = scan.Columns(nil, len(r.def.Columns))
	if ps.Columns != nil {
		r.cols = make([]int, len(ps.Columns))
		for i, name := range ps.Columns {
			if r.cols[i] = r.def.ColumnIndexFold(name); r.cols[i] < 0 {
				return nil, fmt.Errorf("%w: column %q not found in table %s", errInvalid, name, r.def.FullName())
			}
		}
	}
	r.schema, err = scan.ProjectSchema(r.def.ArrowSchema(), r.cols)
	r.schema = withColumnMetadata(r.schema, &columnOrigin{db: r.def.DB, table: r.def.Name})
	return r, err
}

// servesPlain reports whether a plain scan is served from the stored
// batches and the lake's files as they are (scanInfo) rather than by the
// query engine: it is when the name is a table of the store or its lake
// layer. Other names (system tables such as lakestream.tiering, unknown
// names, which the engine reports) go to the engine.
func (s *Server) servesPlain(ctx context.Context, ps *planner.PlainScan) bool {
	if s.engine == nil {
		return true
	}
	_, layer, err := s.store.Resolve(ctx, ps.DB, ps.Table)
	return err == nil && layer != tables.LayerChangelog
}

// scanInfo captures what a scan reads (tables.View: the lake snapshot's
// data files and the log ranges above its offsets) and returns one
// endpoint per group of parts, so clients fetch in parallel. The tickets
// pin the parts: together they read every row of the capture once.
func (s *Server) scanInfo(ctx context.Context, ps *planner.PlainScan, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	r, err := s.resolveScan(ctx, ps)
	if err != nil {
		return nil, err
	}
	v, err := r.t.Capture(ctx, r.layer)
	if err != nil {
		return nil, err
	}
	if r.layer == tables.LayerTable && r.t.HasPrimaryKey() && r.t.Lake() != nil {
		return s.stateScanInfo(ctx, r, v, desc)
	}
	files, err := v.Files(ctx)
	if err != nil {
		return nil, err
	}
	var rows int64
	for _, f := range files {
		if f.Rows < 0 || rows < 0 {
			rows = -1 // deletes: known once read
		} else {
			rows += f.Rows
		}
	}
	for _, rg := range v.Ranges {
		if rows >= 0 {
			rows += rg.To - rg.From
		}
	}
	info := &flight.FlightInfo{
		Schema:           flight.SerializeSchema(r.schema, s.opts.Mem),
		FlightDescriptor: desc,
		TotalRecords:     scanRows(r, rows),
		TotalBytes:       -1,
	}
	if s.opts.Placement != nil && r.layer == tables.LayerTable {
		if spread, err := s.clusterScanInfo(ctx, r, v, files, info); err != nil || spread { // placement.go
			return info, err
		}
	}
	for _, g := range endpointGroups(files, v.Ranges, s.opts.MaxEndpoints) { // queryplan.go
		tk := &ticket{Kind: "scan", Table: r.def.ID, Schema: r.def.SchemaID, Cols: r.cols, Files: g.files, Ranges: g.ranges}
		if len(g.files) > 0 {
			tk.Snapshot = v.Lake.ID
		}
		ep, err := s.endpoint(ctx, tk)
		if err != nil {
			return nil, err
		}
		info.Endpoint = append(info.Endpoint, s.locateHere(ep))
	}
	return info, nil
}

// stateScanInfo is the scan of a primary-key table with a lake: one
// endpoint, whose DoGet captures the table again and reads its lake rows
// and log records under the one state it captured. A ticket per file or
// range, read each under the state of its own DoGet, would let a key
// updated in between appear in the lake part and the log part, or in
// neither (docs/flight.md, "Plain scans").
func (s *Server) stateScanInfo(ctx context.Context, r *plainScan, v *tables.View, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	tk := &ticket{Kind: "scan", Table: r.def.ID, Schema: r.def.SchemaID, Cols: r.cols, State: true}
	ep, err := s.endpoint(ctx, tk)
	if err != nil {
		return nil, err
	}
	return &flight.FlightInfo{
		Schema:           flight.SerializeSchema(r.schema, s.opts.Mem),
		FlightDescriptor: desc,
		TotalRecords:     scanRows(r, v.Rows()),
		TotalBytes:       -1,
		Endpoint:         []*flight.FlightEndpoint{s.locateHere(ep)},
	}, nil
}

// CreatePreparedStatement classifies and describes a statement; nothing
// runs until it is executed.
func (s *Server) CreatePreparedStatement(ctx context.Context, req flightsql.ActionCreatePreparedStatementRequest) (flightsql.ActionCreatePreparedStatementResult, error) {
	var res flightsql.ActionCreatePreparedStatementResult
	st, err := planner.Classify(req.GetQuery())
	if err != nil {
		return res, err
	}
	p := &prepared{sql: req.GetQuery(), stmt: st, dataset: emptySchema, paramsSchema: emptySchema, user: callerID(ctx)}
	_, createsKey := st.DDL.(*catalog.CreateAPIKey) // a DDL statement with a result
	if (st.Kind != planner.KindDDL || createsKey) && !(st.Kind == planner.KindInsert && s.engine == nil) {
		if p.dataset, p.paramsSchema, err = s.describe(ctx, st); err != nil {
			return res, err
		}
	}
	isUpdate := (st.Kind == planner.KindDDL && !createsKey) || st.Kind == planner.KindInsert || st.Kind == planner.KindDelete || st.Kind == planner.KindUpdate
	res.IsUpdate = &isUpdate
	if p.release, err = s.limits.acquire(ctx, limitPrepared); err != nil { // limits.go
		return res, err
	}
	res.Handle = []byte(s.prepared.add(p))
	res.DatasetSchema = p.dataset
	res.ParameterSchema = p.paramsSchema
	return res, nil
}

func (s *Server) ClosePreparedStatement(ctx context.Context, req flightsql.ActionClosePreparedStatementRequest) error {
	if _, err := s.preparedOf(ctx, string(req.GetPreparedStatementHandle())); err != nil {
		return nil // closing what one does not hold is a no-op, as closing what is gone
	}
	s.prepared.remove(string(req.GetPreparedStatementHandle()))
	return nil
}

func (s *Server) GetFlightInfoPreparedStatement(ctx context.Context, cmd flightsql.PreparedStatementQuery, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	h := string(cmd.GetPreparedStatementHandle())
	p, err := s.preparedOf(ctx, h)
	if err != nil {
		return nil, err
	}
	if pl := s.preparedPlan(ctx, p, h); pl != nil {
		return s.preparedLookupInfo(ctx, pl, p, h, desc) // lookup_prepared.go
	}
	return s.flightInfo(ctx, p.stmt, h, desc)
}

func (s *Server) GetSchemaPreparedStatement(ctx context.Context, cmd flightsql.PreparedStatementQuery, _ *flight.FlightDescriptor) (*flight.SchemaResult, error) {
	h := string(cmd.GetPreparedStatementHandle())
	p, err := s.preparedOf(ctx, h)
	if err != nil {
		return nil, err
	}
	schema, err := s.preparedSchema(ctx, h, p.dataset)
	if err != nil {
		return nil, err
	}
	return &flight.SchemaResult{Schema: flight.SerializeSchema(schema, s.opts.Mem)}, nil
}

// DoPutPreparedStatementQuery binds parameters.
func (s *Server) DoPutPreparedStatementQuery(ctx context.Context, cmd flightsql.PreparedStatementQuery, rdr flight.MessageReader, _ flight.MetadataWriter) ([]byte, error) {
	h := cmd.GetPreparedStatementHandle()
	p, err := s.preparedOf(ctx, string(h))
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
	if pl := s.preparedPlan(ctx, p, string(h)); pl != nil && p.bindLookup(pl, recs) {
		return h, nil // lookup_prepared.go
	}
	if err := p.bind(recs); err != nil {
		return nil, err
	}
	return h, nil
}

func (s *Server) DoPutPreparedStatementUpdate(ctx context.Context, cmd flightsql.PreparedStatementUpdate, rdr flight.MessageReader) (int64, error) {
	p, err := s.preparedOf(ctx, string(cmd.GetPreparedStatementHandle()))
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

// describeInsert returns no result columns and the parameters of the
// INSERT's source.
func (s *Server) describeInsert(ctx context.Context, ins *planner.Insert) (*arrow.Schema, *arrow.Schema, error) {
	if s.engine == nil {
		return nil, nil, fmt.Errorf("%w: INSERT needs the query engine", errUnsupported)
	}
	t, err := s.table(ctx, catalog.PrivInsert, ins.DB, ins.Table)
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
	return emptySchema, withColumnMetadata(parameterSchema(params), nil), err
}
