package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/ipc"
)

// Plain Flight DoPut, the ingest path of pyarrow.flight users: a PATH
// descriptor naming the table, the batches, and one PutResult whose
// app_metadata is the row count as a decimal string (docs/flight.md). The
// ingest workload measures it beside ADBC's bulk ingest, against the
// ceiling answering the same call.

// doPutAll sends recs to table with one DoPut per batch over the writers'
// connections, and returns the wall time of the sends.
func doPutAll(ctx context.Context, cls []*flightsql.Client, table string, recs []arrow.RecordBatch, prog *progress) (time.Duration, error) {
	return sendAll(ctx, cls, recs, prog, func(ctx context.Context, cl *flightsql.Client, rec arrow.RecordBatch) error {
		return doPutOne(ctx, cl, table, rec)
	})
}

// doPutOne appends one batch with a plain DoPut and checks the row count
// the reply acknowledges.
func doPutOne(ctx context.Context, cl *flightsql.Client, table string, rec arrow.RecordBatch) error {
	stream, err := cl.Client.DoPut(ctx)
	if err != nil {
		return err
	}
	w := flight.NewRecordWriter(stream, ipc.WithSchema(rec.Schema()))
	w.SetFlightDescriptor(&flight.FlightDescriptor{Type: flight.DescriptorPATH, Path: []string{table}})
	if err := w.Write(rec); err != nil {
		w.Close()
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	if err := stream.CloseSend(); err != nil {
		return err
	}
	var acked int64 = -1
	for {
		res, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		if acked, err = strconv.ParseInt(string(res.GetAppMetadata()), 10, 64); err != nil {
			return fmt.Errorf("doput reply %q: not a row count", res.GetAppMetadata())
		}
	}
	if acked != rec.NumRows() {
		return fmt.Errorf("doput of %d rows acknowledged %d", rec.NumRows(), acked)
	}
	return nil
}
