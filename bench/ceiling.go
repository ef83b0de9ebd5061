package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	pb "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/lakestream/lakestream/internal/arrowmsg"
)

// ceiling is the reference server: the least any Flight server built on
// arrow-go must do, so the fastest a Lakestream node could be over the
// same client, transport and machine.
//
//   - DoPut decodes the stream with flight.NewRecordReader, counts the rows,
//     throws them away and answers as a Flight SQL server answers bulk
//     ingest (one PutResult holding a DoPutUpdateResult), so the client's
//     ExecuteIngest runs unchanged against it; a plain DoPut (a PATH
//     descriptor) gets the row count in decimal, as from a node.
//   - DoGet "plain:i" writes stream i of the scan records from memory with
//     flight.NewRecordWriter, uncompressed; "encoded:i" sends the same
//     records encoded once, up front, with the table's codec (what the log
//     stores), so the client pays the same decompression as with
//     Lakestream.
//   - GetSchema answers every descriptor with an empty SchemaResult: the
//     bare unary RPC, the floor under any Flight call (the pk workload's
//     no-op round trip).
type ceiling struct {
	flight.BaseFlightServer

	mu struct {
		sync.Mutex
		schema  *arrow.Schema
		plain   [][]arrow.RecordBatch
		encoded [][]*flight.FlightData
	}
}

func (c *ceiling) DoPut(stream flight.FlightService_DoPutServer) error {
	rdr, err := flight.NewRecordReader(stream)
	if err != nil {
		return err
	}
	defer rdr.Release()
	desc := rdr.LatestFlightDescriptor() // the schema message's
	if desc.GetType() == flight.DescriptorCMD && strings.HasPrefix(string(desc.GetCmd()), scanCmd) {
		return c.putScan(string(desc.GetCmd()), rdr, stream)
	}
	var n int64
	for rdr.Next() {
		n += rdr.RecordBatch().NumRows()
	}
	if err := rdr.Err(); err != nil {
		return err
	}
	if desc.GetType() == flight.DescriptorPATH {
		// A plain DoPut: answered as a Lakestream node answers it.
		return stream.Send(&flight.PutResult{AppMetadata: strconv.AppendInt(nil, n, 10)})
	}
	meta, err := proto.Marshal(&pb.DoPutUpdateResult{RecordCount: n})
	if err != nil {
		return err
	}
	return stream.Send(&flight.PutResult{AppMetadata: meta})
}

// scanCmd starts the command of a DoPut that gives the ceiling a scan
// stream to serve: "ceiling-scan:<i>/<n>:<codec>", stream i of n (stream
// 0 replaces the streams held), to be encoded with codec (none, lz4,
// zstd) for the "encoded" tickets. Outside the clock: the scan workload
// hands the ceiling the records the node's scan returned, over the wire,
// since the ceiling may run in a process of its own (server.go).
const scanCmd = "ceiling-scan:"

func (c *ceiling) putScan(cmd string, rdr *flight.Reader, stream flight.FlightService_DoPutServer) error {
	var i, n int
	var codecName string
	if _, err := fmt.Sscanf(strings.ReplaceAll(strings.TrimPrefix(cmd, scanCmd), ":", " "), "%d/%d %s", &i, &n, &codecName); err != nil || i < 0 || i >= n {
		return fmt.Errorf("ceiling: bad scan command %q", cmd)
	}
	codec, ok := codecs[codecName]
	if !ok {
		return fmt.Errorf("ceiling: bad codec in %q", cmd)
	}
	var recs []arrow.RecordBatch
	var encoded []*flight.FlightData
	for rdr.Next() {
		r := rdr.RecordBatch()
		r.Retain()
		recs = append(recs, r)
		fd, err := encodeFlightData(r, codec)
		if err != nil {
			release(recs)
			return err
		}
		encoded = append(encoded, fd)
	}
	if err := rdr.Err(); err != nil {
		release(recs)
		return err
	}
	c.mu.Lock()
	if i == 0 {
		c.releaseLocked()
		c.mu.plain, c.mu.encoded = make([][]arrow.RecordBatch, n), make([][]*flight.FlightData, n)
	}
	if len(c.mu.plain) != n {
		c.mu.Unlock()
		release(recs)
		return fmt.Errorf("ceiling: scan stream %d of %d, but %d streams were announced", i, n, len(c.mu.plain))
	}
	c.mu.schema, c.mu.plain[i], c.mu.encoded[i] = rdr.Schema(), recs, encoded
	c.mu.Unlock()
	return stream.Send(&flight.PutResult{})
}

// codecs map the benchmark's codec names to the log's.
var codecs = map[string]arrowmsg.Codec{"none": arrowmsg.CodecNone, "lz4": arrowmsg.CodecLZ4, "zstd": arrowmsg.CodecZstd}

func encodeFlightData(r arrow.RecordBatch, codec arrowmsg.Codec) (*flight.FlightData, error) {
	msg, err := arrowmsg.AppendRecordBatch(nil, r, codec, memory.DefaultAllocator)
	if err != nil {
		return nil, fmt.Errorf("ceiling: encode: %w", err)
	}
	meta, body, err := arrowmsg.SplitMessage(msg)
	if err != nil {
		return nil, fmt.Errorf("ceiling: encode: %w", err)
	}
	return &flight.FlightData{DataHeader: meta, DataBody: body}, nil
}

func (c *ceiling) GetSchema(context.Context, *flight.FlightDescriptor) (*flight.SchemaResult, error) {
	return &flight.SchemaResult{}, nil
}

func (c *ceiling) DoGet(tk *flight.Ticket, stream flight.FlightService_DoGetServer) error {
	kind, idx, _ := strings.Cut(string(tk.GetTicket()), ":")
	i, err := strconv.Atoi(idx)
	c.mu.Lock()
	schema, plain, encoded := c.mu.schema, c.mu.plain, c.mu.encoded
	c.mu.Unlock()
	if err != nil || i < 0 || i >= len(plain) {
		return fmt.Errorf("ceiling: bad ticket %q", tk.GetTicket())
	}
	switch kind {
	case "plain":
		w := flight.NewRecordWriter(stream, ipc.WithSchema(schema))
		for _, rec := range plain[i] {
			if err := w.Write(rec); err != nil {
				w.Close()
				return err
			}
		}
		return w.Close()
	case "encoded":
		p := ipc.GetSchemaPayload(schema, memory.DefaultAllocator)
		meta := p.Meta()
		err := stream.Send(&flight.FlightData{DataHeader: meta.Bytes()})
		meta.Release()
		p.Release()
		if err != nil {
			return err
		}
		for _, fd := range encoded[i] {
			if err := stream.Send(fd); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("ceiling: bad ticket %q", tk.GetTicket())
}

func (c *ceiling) releaseLocked() {
	for _, recs := range c.mu.plain {
		release(recs)
	}
	c.mu.plain, c.mu.encoded = nil, nil
}

// setCeilingScan makes the ceiling at cl serve streams: one DoPut per
// stream (scanCmd), the records encoded with codec there.
func setCeilingScan(ctx context.Context, cl flight.Client, schema *arrow.Schema, streams [][]arrow.RecordBatch, codec string) error {
	for i, recs := range streams {
		if err := putScanStream(ctx, cl, schema, recs, fmt.Sprintf("%s%d/%d:%s", scanCmd, i, len(streams), codec)); err != nil {
			return fmt.Errorf("ceiling: scan stream %d: %w", i, err)
		}
	}
	return nil
}

func putScanStream(ctx context.Context, cl flight.Client, schema *arrow.Schema, recs []arrow.RecordBatch, cmd string) error {
	stream, err := cl.DoPut(ctx)
	if err != nil {
		return err
	}
	w := flight.NewRecordWriter(stream, ipc.WithSchema(schema))
	w.SetFlightDescriptor(&flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: []byte(cmd)})
	for _, r := range recs {
		if err := w.Write(r); err != nil {
			w.Close()
			return err
		}
	}
	if err := w.Close(); err != nil {
		return err
	}
	if err := stream.CloseSend(); err != nil {
		return err
	}
	for {
		if _, err := stream.Recv(); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return err
		}
	}
}

// ceilingTickets are the tickets of the ceiling's n scan streams, of kind
// "plain" or "encoded".
func ceilingTickets(kind string, n int) []*flight.Ticket {
	out := make([]*flight.Ticket, n)
	for i := range out {
		out[i] = &flight.Ticket{Ticket: []byte(kind + ":" + strconv.Itoa(i))}
	}
	return out
}

// startCeiling serves a ceiling on listen (127.0.0.1:0: any free port) until ctx ends; stop waits
// for it to end.
func startCeiling(ctx context.Context, listen string) (c *ceiling, addr string, stop func(), err error) {
	c = &ceiling{}
	g := grpc.NewServer(grpc.MaxRecvMsgSize(maxMsg), grpc.MaxSendMsgSize(maxMsg))
	flight.RegisterFlightServiceServer(g, c)
	lis, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, "", nil, fmt.Errorf("ceiling: %w", err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		g.Serve(lis)
	}()
	go func() {
		select {
		case <-ctx.Done():
			g.Stop()
		case <-done:
		}
	}()
	stop = func() {
		g.Stop()
		<-done
		c.mu.Lock()
		c.releaseLocked()
		c.mu.Unlock()
	}
	return c, lis.Addr().String(), stop, nil
}

// maxMsg is the gRPC message limit of every client and server here, as the
// node's (docs/flight.md).
const maxMsg = 256 << 20
