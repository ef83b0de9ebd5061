package bench

import (
	"context"
	"fmt"
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

// setScan makes streams the records DoGet serves, and encodes them with
// codec for the "encoded" tickets. It takes over the records.
func (c *ceiling) setScan(schema *arrow.Schema, streams [][]arrow.RecordBatch, codec arrowmsg.Codec) error {
	encoded := make([][]*flight.FlightData, len(streams))
	for i, recs := range streams {
		for _, r := range recs {
			msg, err := arrowmsg.AppendRecordBatch(nil, r, codec, memory.DefaultAllocator)
			if err != nil {
				return fmt.Errorf("ceiling: encode: %w", err)
			}
			meta, body, err := arrowmsg.SplitMessage(msg)
			if err != nil {
				return fmt.Errorf("ceiling: encode: %w", err)
			}
			encoded[i] = append(encoded[i], &flight.FlightData{DataHeader: meta, DataBody: body})
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.releaseLocked()
	c.mu.schema, c.mu.plain, c.mu.encoded = schema, streams, encoded
	return nil
}

func (c *ceiling) releaseLocked() {
	for _, recs := range c.mu.plain {
		release(recs)
	}
	c.mu.plain, c.mu.encoded = nil, nil
}

// tickets are the ceiling's tickets of kind "plain" or "encoded".
func (c *ceiling) tickets(kind string) []*flight.Ticket {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*flight.Ticket, len(c.mu.plain))
	for i := range out {
		out[i] = &flight.Ticket{Ticket: []byte(kind + ":" + strconv.Itoa(i))}
	}
	return out
}

// startCeiling serves a ceiling on 127.0.0.1:0 until ctx ends; stop waits
// for it to end.
func startCeiling(ctx context.Context) (c *ceiling, addr string, stop func(), err error) {
	c = &ceiling{}
	g := grpc.NewServer(grpc.MaxRecvMsgSize(maxMsg), grpc.MaxSendMsgSize(maxMsg))
	flight.RegisterFlightServiceServer(g, c)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
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
