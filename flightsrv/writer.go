package flightsrv

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"google.golang.org/grpc/metadata"

	"github.com/lakestream/lakestream/tables"
)

// The request headers of an idempotent write (docs/flight.md, "Idempotent
// writes"): a call that ingests rows (bulk ingest, a plain DoPut, INSERT)
// and carries both is one call of an idempotent writer, stored once
// however often it is sent. Other calls ignore them.
//
//	lakestream-writer-id:  the writer, a non-zero int64 the client chooses (random)
//	lakestream-writer-seq: the call's sequence number, an int32 from 0, +1 per call
const (
	WriterIDHeader  = "lakestream-writer-id"
	WriterSeqHeader = "lakestream-writer-seq"
)

// writerOf reads the idempotent writer of ctx's call; ok is false when the
// call carries neither header. One header without the other, a value that
// is not a number in range, or two different values are refused
// (InvalidArgument) rather than ignored, so that a client that means to
// write idempotently never writes otherwise.
func writerOf(ctx context.Context) (w tables.Writer, ok bool, err error) {
	md, _ := metadata.FromIncomingContext(ctx)
	ids, seqs := md.Get(WriterIDHeader), md.Get(WriterSeqHeader)
	if len(ids) == 0 && len(seqs) == 0 {
		return tables.Writer{}, false, nil
	}
	if len(ids) == 0 || len(seqs) == 0 {
		return tables.Writer{}, false, fmt.Errorf("%w: %s and %s go together; the call has only one of them", errInvalid, WriterIDHeader, WriterSeqHeader)
	}
	id, err := headerInt(WriterIDHeader, ids, 64)
	if err != nil {
		return tables.Writer{}, false, err
	}
	if id == 0 {
		return tables.Writer{}, false, fmt.Errorf("%w: %s 0: a writer id is a non-zero int64", errInvalid, WriterIDHeader)
	}
	seq, err := headerInt(WriterSeqHeader, seqs, 32)
	if err != nil {
		return tables.Writer{}, false, err
	}
	if seq < 0 {
		return tables.Writer{}, false, fmt.Errorf("%w: %s %d: a sequence number is from 0 to 2147483647", errInvalid, WriterSeqHeader, seq)
	}
	return tables.Writer{ID: id, Seq: int32(seq)}, true, nil
}

// headerInt parses a header's values, which must all be the same decimal
// integer of the given bit size.
func headerInt(name string, vals []string, bits int) (int64, error) {
	v := strings.TrimSpace(vals[0])
	for _, o := range vals[1:] {
		if strings.TrimSpace(o) != v {
			return 0, fmt.Errorf("%w: conflicting %s headers %q", errInvalid, name, vals)
		}
	}
	n, err := strconv.ParseInt(v, 10, bits)
	if err != nil {
		return 0, fmt.Errorf("%w: %s %q: want a decimal int%d", errInvalid, name, v, bits)
	}
	return n, nil
}

// newAppender returns an appender of t for ctx's call: one call of an
// idempotent writer when the call carries the writer headers.
func newAppender(ctx context.Context, t *tables.Table) (*tables.Appender, error) {
	w, ok, err := writerOf(ctx)
	if err != nil {
		return nil, err
	}
	a := t.NewAppender()
	if ok {
		a.SetWriter(w)
	}
	return a, nil
}
