package flightsrv

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lakestream/lakestream/internal/arrowmsg"
	"github.com/lakestream/lakestream/tables"
)

// checkedStream wraps an incoming DoPut stream and checks every Arrow
// message before the IPC reader decodes it: a record batch must fit the
// stream's schema, keep its buffers inside its body and claim no more than
// the limit when decompressed; dictionary batches are checked the same way
// against their value type. A bad
// message ends the stream with an error; nothing of it is decoded.
type checkedStream struct {
	flight.FlightService_DoPutServer
	limits arrowmsg.Limits
	mem    memory.Allocator
	schema *arrow.Schema
	peeked *flight.FlightData
	err    error
	ctx    context.Context // the stream's, which leads to this stream (sentOf)
	// lastRecord is the last record batch message checked, when it was
	// compressed, for the record the IPC reader decodes from it (sentOf),
	// and lastRows its rows; nil once taken.
	lastRecord *flight.FlightData
	lastRows   int64
}

func newCheckedStream(s flight.FlightService_DoPutServer, o Options) *checkedStream {
	c := &checkedStream{
		FlightService_DoPutServer: s,
		mem:                       o.Mem,
		limits: arrowmsg.Limits{
			MaxBodyBytes:         int64(o.MaxMessageBytes),
			MaxUncompressedBytes: o.MaxBatchUncompressedBytes,
			MaxRows:              1 << 31,
		},
	}
	c.ctx = context.WithValue(s.Context(), checkedStreamKey{}, c)
	return c
}

type checkedStreamKey struct{}

// Context is the stream's context, from which the ingest that reads the
// stream through the Flight SQL router finds it again (sentOf).
func (c *checkedStream) Context() context.Context { return c.ctx }

// sentOf returns the message that the record just read from the DoPut
// stream of ctx was decoded from, when it was sent compressed: the IPC
// reader reads one message after another, no further than the record it
// returns, so the last record batch message checked is that record's.
// Each message is returned once.
func sentOf(ctx context.Context, rec arrow.RecordBatch) (tables.Sent, bool) {
	c, ok := ctx.Value(checkedStreamKey{}).(*checkedStream)
	if !ok || c.lastRecord == nil {
		return tables.Sent{}, false
	}
	fd := c.lastRecord
	c.lastRecord = nil
	if c.lastRows != rec.NumRows() {
		return tables.Sent{}, false
	}
	return tables.Sent{Meta: fd.GetDataHeader(), Body: fd.GetDataBody()}, true
}

// peek returns the first message without consuming it.
func (c *checkedStream) peek() (*flight.FlightData, error) {
	if c.peeked == nil {
		fd, err := c.recvChecked()
		if err != nil {
			return nil, err
		}
		c.peeked = fd
	}
	return c.peeked, nil
}

func (c *checkedStream) Recv() (*flight.FlightData, error) {
	if fd := c.peeked; fd != nil {
		c.peeked = nil
		return fd, nil
	}
	return c.recvChecked()
}

func (c *checkedStream) recvChecked() (*flight.FlightData, error) {
	if c.err != nil {
		return nil, c.err
	}
	fd, err := c.FlightService_DoPutServer.Recv()
	if err != nil {
		return nil, err
	}
	if err := c.check(fd); err != nil {
		c.err = toStatus(err)
		return nil, c.err
	}
	return fd, nil
}

func (c *checkedStream) check(fd *flight.FlightData) error {
	meta := fd.GetDataHeader()
	if len(meta) == 0 {
		return nil // app metadata or descriptor only
	}
	kind, err := arrowmsg.MessageKind(meta)
	if err != nil {
		return err
	}
	switch kind {
	case arrowmsg.KindSchema:
		s, err := flight.DeserializeSchema(frame(meta), c.mem)
		if err != nil {
			return fmt.Errorf("%w: schema message: %v", arrowmsg.ErrMalformed, err)
		}
		c.schema = s
		return nil
	case arrowmsg.KindRecordBatch:
		if c.schema == nil {
			return fmt.Errorf("%w: record batch before the schema", arrowmsg.ErrMalformed)
		}
		hdr, err := arrowmsg.Validate(c.schema, meta, fd.GetDataBody(), c.limits)
		if err != nil {
			return err
		}
		c.lastRecord, c.lastRows = nil, 0
		if hdr.Codec != arrowmsg.CodecNone { // sentOf wants compressed messages only
			c.lastRecord, c.lastRows = fd, hdr.Length
		}
		return nil
	case arrowmsg.KindDictionaryBatch:
		_, err := arrowmsg.ValidateDictionary(c.schema, meta, fd.GetDataBody(), c.limits)
		return err
	}
	return fmt.Errorf("%w: unexpected %s message", arrowmsg.ErrMalformed, kind)
}

// frame encapsulates a bare flatbuffer message as IPC stream bytes.
func frame(meta []byte) []byte {
	out := make([]byte, 8, 8+len(meta))
	binary.LittleEndian.PutUint32(out, 0xFFFFFFFF)
	binary.LittleEndian.PutUint32(out[4:], uint32(len(meta)))
	return append(out, meta...)
}
