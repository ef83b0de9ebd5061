package flightsrv

import (
	"context"
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"

	"github.com/lakestream/lakestream/columnarlog"
	"github.com/lakestream/lakestream/internal/arrowmsg"
	"github.com/lakestream/lakestream/internal/scan"
	"github.com/lakestream/lakestream/planner"
	"github.com/lakestream/lakestream/tables"
)

func (s *Server) doGet(raw []byte, stream flight.FlightService_DoGetServer) error {
	tk, err := decodeTicket(s.ticketKey, raw)
	if err != nil {
		return err
	}
	if err := tk.checkExpiry(time.Now()); err != nil {
		return err
	}
	ctx := stream.Context()
	if err := s.authorizeTicket(ctx, tk); err != nil { // authorize.go
		return err
	}
	// Checked for every ticket so that a bad header fails the same way
	// everywhere; only scans forward stored, compressed batches (query and
	// change streams are written uncompressed).
	plain, why, err := plainRequested(ctx)
	if err != nil {
		return err
	}
	switch tk.Kind {
	case "scan":
		if plain {
			s.opts.Logger.Debug("scan sent uncompressed", "table", tk.Table, "because", why)
		}
		return s.pipe(ctx, stream, scanReadAhead, nil, true, func(ctx context.Context, out flight.DataStreamWriter) error {
			return s.streamScan(ctx, tk, plain, out)
		})
	case "query":
		qctx, args, err := s.queryTicket(ctx, tk) // queryplan.go
		if err != nil {
			return err
		}
		return s.pipe(qctx, stream, queryReadAhead(), nil, false, func(ctx context.Context, out flight.DataStreamWriter) error {
			return s.streamQuery(ctx, tk.SQL, args, out)
		})
	case "show":
		return s.pipe(ctx, stream, queryReadAhead(), nil, false, func(ctx context.Context, out flight.DataStreamWriter) error {
			return s.streamShow(ctx, tk.SQL, out)
		})
	case "changes":
		release, err := s.limits.acquire(ctx, limitSubscriptions) // limits.go
		if err != nil {
			return err
		}
		defer release()
		return s.pipe(ctx, stream, followReadAhead*int64(max(1, len(tk.Ranges))), s.stopping, false, func(ctx context.Context, out flight.DataStreamWriter) error {
			return s.streamChanges(ctx, tk, out)
		})
	case "lookup":
		return s.doGetLookup(ctx, tk, stream) // lookup.go
	case "apikey":
		return s.streamAPIKey(tk, stream) // apikeys.go
	}
	return fmt.Errorf("%w: ticket kind %q", errInvalid, tk.Kind)
}

// streamScan forwards the stored batches of the ticket's ranges as
// FlightData without decoding them. A projection rewrites each message on
// its encoded bytes; only batches written under an older schema version
// (before an ADD COLUMN) are decoded, to add the new columns as nulls, and
// with plain every compressed batch is decoded and sent uncompressed.
func (s *Server) streamScan(ctx context.Context, tk *ticket, plain bool, stream flight.DataStreamWriter) error {
	t, err := s.store.ByID(ctx, tk.Table)
	if err != nil {
		return err
	}
	if err := s.checkHere(ctx, t, ticketBuckets(t, tk)); err != nil { // placement.go
		return err
	}
	def := t.Def()
	cur := def.ArrowSchema()
	out, err := scan.ProjectSchema(cur, tk.Cols)
	if err != nil {
		return fmt.Errorf("%w: ticket: %v", errInvalid, err)
	}
	out = withColumnMetadata(out, &columnOrigin{db: def.DB, table: def.Name})
	schemaMsg := ipc.GetSchemaPayload(out, s.opts.Mem)
	meta := schemaMsg.Meta()
	err = stream.Send(&flight.FlightData{DataHeader: meta.Bytes()})
	meta.Release()
	schemaMsg.Release()
	if err != nil {
		return err
	}
	// Decoded (or cached) lake records go out uncompressed: the ticket's
	// lake files, and the rows that retention moved to the lake since the
	// scan was planned (from the lake's history).
	sendRecord := func(rec arrow.RecordBatch) error {
		fd, err := s.recordFlightData(rec, arrowmsg.CodecNone)
		if err != nil {
			return err
		}
		return stream.Send(fd)
	}
	if tk.State {
		v, err := t.Capture(ctx, tables.LayerTable)
		if err != nil {
			return err
		}
		return v.Read(ctx, tk.Cols, sendRecord)
	}
	snapshot, files, ranges := tk.Snapshot, tk.Files, tk.Ranges
	if len(tk.Buckets) > 0 {
		c, err := captureBuckets(ctx, t, tk) // placement.go
		if err != nil {
			return err
		}
		snapshot, files, ranges = c.snapshot, c.files, c.ranges
	}
	if len(files) > 0 {
		if err := t.ReadLakeFiles(ctx, snapshot, files, tk.Cols, sendRecord); err != nil {
			return err
		}
	}
	identity := isIdentity(tk.Cols, cur.NumFields())
	for _, r := range ranges {
		if r.Bucket < 0 || r.Bucket >= t.Log().Buckets() {
			return fmt.Errorf("%w: ticket bucket %d out of range", errInvalid, r.Bucket)
		}
		err := t.ReadRange(ctx, r, tk.Cols, sendRecord, func(b columnarlog.Batch) error {
			fd, err := s.batchFlightData(t, b, tk.Cols, identity, plain)
			if err != nil {
				return err
			}
			return stream.Send(fd)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// batchFlightData turns one stored batch into the FlightData of the
// projected current schema; plain asks for no body compression (plain.go).
func (s *Server) batchFlightData(t *tables.Table, b columnarlog.Batch, cols []int, identity, plain bool) (*flight.FlightData, error) {
	def := t.Def()
	codec := wireCodec(b.Codec(), plain)
	if b.SchemaID() != def.SchemaID || codec != arrowmsg.Codec(b.Codec()) {
		return s.reencode(t, b, cols, codec)
	}
	msg, err := b.ArrowMessage()
	if err != nil {
		return nil, err
	}
	meta, body, err := arrowmsg.SplitMessage(msg)
	if err != nil {
		return nil, err
	}
	if !identity {
		meta, body, err = arrowmsg.Project(def.ArrowSchema(), cols, meta, body)
		if err != nil {
			return nil, err
		}
	}
	return &flight.FlightData{DataHeader: meta, DataBody: body}, nil
}

// reencode decodes a batch, adds the columns missing from an older schema
// version and encodes it again with codec.
func (s *Server) reencode(t *tables.Table, b columnarlog.Batch, cols []int, codec arrowmsg.Codec) (*flight.FlightData, error) {
	rec, err := t.DecodeBatch(b, cols)
	if err != nil {
		return nil, err
	}
	defer rec.Release()
	return s.recordFlightData(rec, codec)
}

// recordFlightData encodes rec as the FlightData of one record batch
// message, its body compressed with codec.
func (s *Server) recordFlightData(rec arrow.RecordBatch, codec arrowmsg.Codec) (*flight.FlightData, error) {
	buf, err := arrowmsg.AppendRecordBatch(nil, rec, codec, s.opts.Mem)
	if err != nil {
		return nil, err
	}
	meta, body, err := arrowmsg.SplitMessage(buf)
	if err != nil {
		return nil, err
	}
	return &flight.FlightData{DataHeader: meta, DataBody: body}, nil
}

func isIdentity(cols []int, n int) bool {
	if len(cols) != n {
		return false
	}
	for i, c := range cols {
		if c != i {
			return false
		}
	}
	return true
}

// streamQuery runs a query in the engine and streams its records.
func (s *Server) streamQuery(ctx context.Context, sql string, args []any, stream flight.DataStreamWriter) error {
	if s.engine == nil {
		return fmt.Errorf("%w: only plain scans (SELECT * or columns FROM a table) are served by this node", errUnsupported)
	}
	rs, schema, err := s.engine.Query(ctx, sql, args...)
	if err != nil {
		return err
	}
	defer rs.Close()
	declared := schema
	if st, err := planner.Classify(sql); err == nil && st.Kind == planner.KindScan {
		// A plain scan served by the engine answers with the schema its
		// FlightInfo announced: the table's, NOT NULL included.
		declared = s.keepNotNull(ctx, st, schema)
	}
	declared = withColumnMetadata(declared, nil) // as describe announced it
	return writeStream(stream, declared, relabeled{rs, declared}, s)
}

// relabeled gives each record of a stream a schema that differs from the
// records' own only in nullability and field metadata.
type relabeled struct {
	scan.RecordStream
	schema *arrow.Schema
}

func (r relabeled) Next() (arrow.RecordBatch, error) {
	rec, err := r.RecordStream.Next()
	if err != nil || rec == nil {
		return rec, err
	}
	defer rec.Release()
	return array.NewRecordBatch(r.schema, rec.Columns(), rec.NumRows()), nil
}

// writeStream writes schema and the records of rs to stream.
func writeStream(stream flight.DataStreamWriter, schema *arrow.Schema, rs scan.RecordStream, s *Server) error {
	w := newRecordWriter(stream, ipc.WithSchema(schema), ipc.WithAllocator(s.opts.Mem))
	defer w.Close()
	for {
		rec, err := rs.Next()
		if err != nil {
			if err == errEOF {
				return w.Close() // sends the schema of an empty result
			}
			return err
		}
		err = w.Write(rec)
		rec.Release()
		if err != nil {
			return err
		}
	}
}
