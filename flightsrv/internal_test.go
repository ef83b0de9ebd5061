package flightsrv

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lakestream/lakestream/catalog"
	"github.com/lakestream/lakestream/columnarlog"
	"github.com/lakestream/lakestream/internal/arrowmsg"
	"github.com/lakestream/lakestream/internal/scan"
	"github.com/lakestream/lakestream/tables"
)

// toStatus is the one place errors become gRPC codes; pin the mapping.
func TestToStatus(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("doing something: %w", err) }
	for _, tc := range []struct {
		err  error
		code codes.Code
	}{
		{context.Canceled, codes.Canceled},
		{wrap(context.DeadlineExceeded), codes.DeadlineExceeded},
		{wrap(catalog.ErrTableNotFound), codes.NotFound},
		{wrap(catalog.ErrDatabaseNotFound), codes.NotFound},
		{wrap(scan.ErrTableNotFound), codes.NotFound},
		{wrap(errUnknownHandle), codes.NotFound},
		{wrap(catalog.ErrTableExists), codes.AlreadyExists},
		{wrap(catalog.ErrDatabaseExists), codes.AlreadyExists},
		{wrap(catalog.ErrColumnExists), codes.AlreadyExists},
		{wrap(catalog.ErrDatabaseNotEmpty), codes.FailedPrecondition},
		{wrap(tables.ErrHistoryUnavailable), codes.FailedPrecondition},
		{wrap(tables.ErrLakeSnapshotGone), codes.Unavailable},
		{wrap(&tables.SchemaError{Table: "t", Column: "c", Msg: "bad"}), codes.InvalidArgument},
		{&catalog.SyntaxError{Pos: 1, Msg: "expected x"}, codes.InvalidArgument},
		{wrap(catalog.ErrInvalid), codes.InvalidArgument},
		{wrap(arrowmsg.ErrMalformed), codes.InvalidArgument},
		{wrap(errInvalid), codes.InvalidArgument},
		{wrap(arrowmsg.ErrTooLarge), codes.ResourceExhausted},
		{wrap(columnarlog.ErrBatchTooLarge), codes.ResourceExhausted},
		{wrap(stallError{timeout: time.Minute, waiting: 1 << 20}), codes.ResourceExhausted},
		{budgetError{limit: 1 << 30, waited: time.Minute}, codes.ResourceExhausted},
		{wrap(columnarlog.ErrOffsetOutOfRange), codes.OutOfRange},
		{wrap(errUnsupported), codes.Unimplemented},
		{errors.New("disk on fire"), codes.Internal},
		{wrap(fmt.Errorf("%w: commit round: %w", columnarlog.ErrNotStored, errors.New("sync: input/output error"))), codes.Unavailable},
		{status.Error(codes.PermissionDenied, "no"), codes.PermissionDenied},
	} {
		got := toStatus(tc.err)
		if c := status.Code(got); c != tc.code {
			t.Errorf("toStatus(%v) = %v, want %v", tc.err, c, tc.code)
		}
		if st, _ := status.FromError(got); st.Message() != tc.err.Error() && status.Code(tc.err) == codes.Unknown {
			t.Errorf("toStatus(%v) message %q, want the error's text", tc.err, st.Message())
		}
	}
	if toStatus(nil) != nil {
		t.Error("toStatus(nil) != nil")
	}
}

func TestTicketRoundTrip(t *testing.T) {
	in := &ticket{Kind: "scan", Table: 12, Schema: 3, Cols: []int{0, 2}, Ranges: []tables.Range{{Bucket: 1, From: 5, To: 4096}}}
	raw, err := in.encode(fuzzKey)
	if err != nil {
		t.Fatal(err)
	}
	if !isLakestreamTicket(raw) {
		t.Fatalf("encoded ticket %q lacks the magic", raw)
	}
	out, err := decodeTicket(fuzzKey, raw)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(out) != fmt.Sprint(in) {
		t.Errorf("round trip: %+v, want %+v", out, in)
	}
	if isLakestreamTicket([]byte("LSTK")) || isLakestreamTicket(nil) {
		t.Error("short tickets taken for Lakestream's")
	}
}

// Idle prepared statements expire after the TTL; used ones do not.
func TestPreparedStoreExpires(t *testing.T) {
	ps := newPreparedStore(time.Minute)
	idle := ps.add(&prepared{sql: "SELECT 1"})
	used := ps.add(&prepared{sql: "SELECT 2"})
	if idle == used || len(idle) < 16 {
		t.Fatalf("handles %q and %q", idle, used)
	}
	now := time.Now()
	if n := ps.expire(now); n != 0 {
		t.Errorf("expired %d fresh statements", n)
	}
	ps.m[idle].lastUsed = now.Add(-2 * time.Minute)
	if n := ps.expire(now); n != 1 {
		t.Errorf("expired %d statements, want 1", n)
	}
	if _, err := ps.get(idle); !errors.Is(err, errUnknownHandle) || status.Code(toStatus(err)) != codes.NotFound {
		t.Errorf("get of an expired handle: %v, want errUnknownHandle (NotFound)", err)
	}
	if _, err := ps.get(used); err != nil {
		t.Errorf("get of a live handle: %v", err)
	}
	ps.remove(used)
	if _, err := ps.get(used); !errors.Is(err, errUnknownHandle) {
		t.Errorf("get after remove: %v", err)
	}
}

func TestLike(t *testing.T) {
	p := func(s string) *string { return &s }
	for _, tc := range []struct {
		pattern *string
		s       string
		want    bool
	}{
		{nil, "anything", true},
		{p(""), "anything", true},
		{p("ev%"), "events", true},
		{p("ev%"), "levels", false},
		{p("e_ents"), "events", true},
		{p("e_ents"), "eents", false},
		{p("a.b"), "axb", false},
		{p("%"), "", true},
		{p("(x"), "(x", true},
	} {
		if got := like(tc.pattern, tc.s); got != tc.want {
			t.Errorf("like(%v, %q) = %v, want %v", tc.pattern, tc.s, got, tc.want)
		}
	}
}

func TestSameBinding(t *testing.T) {
	ts := func(u arrow.TimeUnit, tz string) arrow.DataType { return &arrow.TimestampType{Unit: u, TimeZone: tz} }
	for _, tc := range []struct {
		a, b arrow.DataType
		want bool
	}{
		{arrow.PrimitiveTypes.Int64, arrow.PrimitiveTypes.Int64, true},
		{arrow.PrimitiveTypes.Int32, arrow.PrimitiveTypes.Int64, false},
		{ts(arrow.Microsecond, "UTC"), ts(arrow.Millisecond, "UTC"), true},
		{ts(arrow.Microsecond, ""), ts(arrow.Millisecond, "UTC"), false},
		{ts(arrow.Nanosecond, ""), ts(arrow.Millisecond, ""), false},
		{arrow.FixedWidthTypes.Time64us, arrow.FixedWidthTypes.Time32ms, true},
		{arrow.FixedWidthTypes.Time64ns, arrow.FixedWidthTypes.Time32ms, false},
	} {
		if got := sameBinding(tc.a, tc.b); got != tc.want {
			t.Errorf("sameBinding(%s, %s) = %v", tc.a, tc.b, got)
		}
	}
}
