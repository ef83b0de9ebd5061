package flightsrv

import (
	"encoding/binary"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lakestream/lakestream/internal/arrowmsg"
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
}

func newCheckedStream(s flight.FlightService_DoPutServer, o Options) *checkedStream {
	return &checkedStream{
		FlightService_DoPutServer: s,
		mem:                       o.Mem,
		limits: arrowmsg.Limits{
			MaxBodyBytes:         int64(o.MaxMessageBytes),
			MaxUncompressedBytes: o.MaxBatchUncompressedBytes,
			MaxRows:              1 << 31,
		},
	}
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
		_, err := arrowmsg.Validate(c.schema, meta, fd.GetDataBody(), c.limits)
		return err
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
