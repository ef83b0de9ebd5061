package flightsrv_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"google.golang.org/grpc/codes"

	"github.com/lakestream/lakestream/columnarlog"
	"github.com/lakestream/lakestream/internal/arrowmsg"
)

// sentBodies records the record batch bodies a DoPut client sends.
type sentBodies struct {
	flight.FlightService_DoPutClient
	bodies [][]byte
	mutate func(*flight.FlightData) // changes a message before it goes out; nil: none
}

func (s *sentBodies) Send(fd *flight.FlightData) error {
	if len(fd.GetDataBody()) > 0 {
		if s.mutate != nil {
			s.mutate(fd)
		}
		s.bodies = append(s.bodies, slices.Clone(fd.GetDataBody()))
	}
	return s.FlightService_DoPutClient.Send(fd)
}

// putCompressed appends recs by a DoPut under desc (a plain PATH or a
// Flight SQL ingest) whose bodies are compressed with codec, and returns the
// bodies sent and the call's error.
func putCompressed(t *testing.T, ts *testServer, desc *flight.FlightDescriptor, codec ipc.Option, mutate func(*flight.FlightData), recs ...arrow.RecordBatch) ([][]byte, error) {
	t.Helper()
	stream, err := ts.cl.Client.DoPut(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	sb := &sentBodies{FlightService_DoPutClient: stream, mutate: mutate}
	w := flight.NewRecordWriter(sb, ipc.WithSchema(recs[0].Schema()), codec)
	w.SetFlightDescriptor(desc)
	for _, r := range recs {
		if err := w.Write(r); err != nil {
			w.Close()
			return sb.bodies, err
		}
	}
	if err := w.Close(); err != nil {
		return sb.bodies, err
	}
	if err := stream.CloseSend(); err != nil {
		return sb.bodies, err
	}
	for {
		if _, err := stream.Recv(); errors.Is(err, io.EOF) {
			return sb.bodies, nil
		} else if err != nil {
			return sb.bodies, err
		}
	}
}

// storedMessages are the Arrow messages of every batch of table's log.
func storedMessages(t *testing.T, ts *testServer, table string) (bodies [][]byte, codecs []columnarlog.Codec) {
	t.Helper()
	tbl, err := ts.store.Get(context.Background(), "default", table)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range tbl.LogRanges() {
		err := tbl.ReadBatches(context.Background(), r, func(b columnarlog.Batch) error {
			msg, err := b.ArrowMessage()
			if err != nil {
				return err
			}
			_, body, err := arrowmsg.SplitMessage(msg)
			bodies, codecs = append(bodies, slices.Clone(body)), append(codecs, b.Codec())
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return bodies, codecs
}

// A compressed batch that goes whole to one bucket is stored as the client
// sent it, byte for byte, whatever the table's own codec; one that must be
// split by bucket, or sent to a table that stores its log uncompressed, is
// encoded by the node. Every table reads back the rows sent.
func TestCompressedInputStoredAsSent(t *testing.T) {
	ts := startServer(t, serverConfig{})
	for _, tc := range []struct {
		name, with string
		codec      ipc.Option
		rows       int
		asSent     bool
	}{
		{"one bucket, lz4", "'bucket.num'='1'", ipc.WithLZ4(), 500, true},
		{"one bucket, zstd into an lz4 table", "'bucket.num'='1', 'log.compression'='lz4'", ipc.WithZstd(), 500, true},
		{"no bucket key, 4 buckets", "'bucket.num'='4'", ipc.WithZstd(), 500, true},
		{"bucket-aligned: one row", "'bucket.num'='4', 'bucket.key'='id'", ipc.WithLZ4(), 1, true},
		{"split over 4 buckets", "'bucket.num'='4', 'bucket.key'='id'", ipc.WithLZ4(), 500, false},
		{"table stores uncompressed", "'bucket.num'='1', 'log.compression'='none'", ipc.WithLZ4(), 500, false},
	} {
		for _, api := range []string{"plain DoPut", "Flight SQL ingest"} {
			t.Run(tc.name+", "+api, func(t *testing.T) {
				name := fmt.Sprintf("sent%d", ts.tables.Add(1))
				ts.mustExec("CREATE TABLE " + name + " " + eventsCols + " WITH (" + tc.with + ")")
				recs := []arrow.RecordBatch{events(t, 0, tc.rows), events(t, tc.rows, tc.rows)}
				desc := pathDesc(name)
				if api == "Flight SQL ingest" {
					desc = ingestDesc(t, name)
				}
				sent, err := putCompressed(t, ts, desc, tc.codec, nil, recs...)
				if err != nil {
					t.Fatal(err)
				}
				stored, codecs := storedMessages(t, ts, name)
				for _, s := range sent {
					got := slices.ContainsFunc(stored, func(b []byte) bool { return bytes.Equal(b, s) })
					if got != tc.asSent {
						t.Errorf("a sent body is stored as sent: %v, want %v (stored codecs %v)", got, tc.asSent, codecs)
					}
				}
				sameRows(t, "SELECT *", ts.fetch(ts.mustExec("SELECT * FROM "+name)), eventRows(t, 0, 2*tc.rows))
				sameRows(t, "SELECT kind, id", ts.fetch(ts.mustExec("SELECT kind, id FROM "+name)), eventRows(t, 0, 2*tc.rows, 2, 0))
			})
		}
	}
}

// Compressed input is checked as any input before anything is stored: a
// body that does not decompress, or whose buffers claim more than the
// limit once decompressed (a compression bomb), is refused
// (InvalidArgument; ResourceExhausted for what is over a limit) and
// nothing of the call is stored.
func TestCompressedInputRefused(t *testing.T) {
	// Go's allocator: arrow-go's IPC reader does not release the buffer
	// it was decompressing into when a frame fails to decompress, which
	// the checked allocator would report (the collector takes it).
	ts := startServer(t, serverConfig{goMem: true})
	ts.mustExec("CREATE TABLE ev " + eventsCols + " WITH ('bucket.num'='1')")
	for _, tc := range []struct {
		name   string
		code   codes.Code
		mutate func(*flight.FlightData)
	}{
		{"corrupt frame", codes.InvalidArgument, func(fd *flight.FlightData) {
			// Every frame's magic number after its 8-byte length.
			for _, b := range compressedBuffers(fd) {
				fd.DataBody[b.Offset+8] ^= 0xff
			}
		}},
		{"bomb", codes.ResourceExhausted, func(fd *flight.FlightData) {
			// A buffer's uncompressed length claims 1 TiB.
			b := compressedBuffers(fd)[0]
			copy(fd.DataBody[b.Offset:], []byte{0, 0, 0, 0, 0, 1, 0, 0})
		}},
		{"truncated body", codes.InvalidArgument, func(fd *flight.FlightData) { fd.DataBody = fd.DataBody[:len(fd.DataBody)/2] }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := putCompressed(t, ts, ingestDesc(t, "ev"), ipc.WithLZ4(), tc.mutate, events(t, 0, 300))
			expectCode(t, err, tc.code)
			if n := ts.count("ev"); n != 0 {
				t.Errorf("%d rows stored after a refused call", n)
			}
		})
	}
}

// compressedBuffers are the buffers of fd's record batch that hold a
// compressed frame (an uncompressed length, not -1, then the frame).
func compressedBuffers(fd *flight.FlightData) []arrowmsg.Buffer {
	hdr, err := arrowmsg.ParseRecordBatch(fd.DataHeader)
	if err != nil {
		panic(err)
	}
	var out []arrowmsg.Buffer
	for _, b := range hdr.Buffers {
		if b.Length > 12 && int64(binary.LittleEndian.Uint64(fd.DataBody[b.Offset:])) >= 0 {
			out = append(out, b)
		}
	}
	return out
}
