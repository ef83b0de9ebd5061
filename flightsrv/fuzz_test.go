package flightsrv

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lakestream/lakestream/columnarlog"
	"github.com/lakestream/lakestream/planner"
	"github.com/lakestream/lakestream/tables"
)

// fuzzKey signs the fuzzed tickets.
var fuzzKey = []byte("0123456789abcdef0123456789abcdef")

// FuzzDecodeTicket feeds arbitrary bytes to decodeTicket, which reads every
// Lakestream ticket a client hands to DoGet. Nothing may panic; an error is
// errForgedTicket (PermissionDenied) or errInvalid (InvalidArgument to the
// client); a ticket it accepts is of a
// known kind, and once encoded it decodes to a ticket that encodes the same
// (JSON drops empty lists, so the first decode may hold [] where the next
// holds nil).
func FuzzDecodeTicket(f *testing.F) {
	for _, tk := range []ticket{
		{Kind: "scan", Table: 12, Schema: 1, Cols: []int{0, 2}, Ranges: []tables.Range{{Bucket: 0, From: 0, To: 4096}}},
		{Kind: "scan", Table: 3, Snapshot: 99, Files: []string{"s3://b/t/data/a.parquet"}, Ranges: []tables.Range{{Bucket: 1, From: 7, To: 9}}},
		{Kind: "changes", Table: 5, Ranges: []tables.Range{{Bucket: 0, From: 3, To: -1}},
			Where: []planner.Condition{{Column: "a", Op: planner.OpGe, Value: planner.Literal{Kind: planner.LitNumber, Text: "10"}}}},
		{Kind: "query", SQL: "SELECT 1", Exp: 1796650000},
		{Kind: "query", SQL: "SELECT id FROM t WHERE v > ?", Params: []byte("\xff\xff\xff\xff\x00\x00\x00\x00"),
			Pins: []tables.Pin{{Table: 12, SchemaID: 1, Snapshot: 99, Files: []string{"s3://b/t/data/a.parquet"}}, {Table: 13, Layer: tables.LayerChangelog, Ranges: []tables.Range{{Bucket: 1, From: 7, To: 9}}}}},
		{Kind: "lookup", Handle: "h-1"},
	} {
		b, err := tk.encode(fuzzKey)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add(b[:len(b)/2])
	}
	f.Add([]byte(`LSTK1{"kind":"drop"}`))
	f.Add([]byte(`LSTK2{"kind":"prepared","handle":"h-1"}`))
	f.Add([]byte(`{"kind":"scan","ranges":[{"Bucket":-1,"From":9,"To":1}]}`))
	f.Add([]byte("LSTK1"))
	f.Fuzz(func(t *testing.T, data []byte) {
		tk, err := decodeTicket(fuzzKey, data)
		if err != nil {
			if err == errForgedTicket && status.Code(toStatus(err)) == codes.PermissionDenied {
				return
			}
			if !errors.Is(err, errInvalid) || status.Code(toStatus(err)) != codes.InvalidArgument {
				t.Fatalf("decodeTicket: %v, want errInvalid or errForgedTicket", err)
			}
			return
		}
		switch tk.Kind {
		case "scan", "query", "changes", "show", "lookup":
		default:
			t.Fatalf("decodeTicket accepted a ticket of kind %q", tk.Kind)
		}
		b, err := tk.encode(fuzzKey)
		if err != nil {
			t.Fatalf("encode a decoded ticket: %v", err)
		}
		if len(b) > maxTicketBytes {
			return // JSON escapes grow some strings: the limit is on what clients send
		}
		again, err := decodeTicket(fuzzKey, b)
		if err != nil {
			t.Fatalf("decode an encoded ticket: %v", err)
		}
		b2, err := again.encode(fuzzKey)
		if err != nil || !bytes.Equal(b2, b) {
			t.Fatalf("ticket changed through decode and encode (%v):\n got %s\nwant %s", err, b2, b)
		}
	})
}

// FuzzPathTable feeds descriptor paths (elements separated by NUL in the
// input) to pathTable: one or two elements name a table, as given; any
// other count is errInvalid.
func FuzzPathTable(f *testing.F) {
	for _, s := range []string{"events", "db\x00events", "", "a\x00b\x00c", "\x00", "Weird Name\x00$x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		path := strings.Split(s, "\x00")
		db, name, err := pathTable(path)
		switch len(path) {
		case 1:
			if err != nil || db != "" || name != path[0] {
				t.Fatalf("pathTable(%q) = %q, %q, %v", path, db, name, err)
			}
		case 2:
			if err != nil || db != path[0] || name != path[1] {
				t.Fatalf("pathTable(%q) = %q, %q, %v", path, db, name, err)
			}
		default:
			if !errors.Is(err, errInvalid) || status.Code(toStatus(err)) != codes.InvalidArgument {
				t.Fatalf("pathTable(%q): %v, want errInvalid", path, err)
			}
		}
	})
}

// Damaged log data (a *columnarlog.CorruptionError, or any ErrCorrupt) is
// DataLoss: the client's request was fine, the stored rows are not, and a
// retry meets the same damage.
func TestLogCorruptionIsDataLoss(t *testing.T) {
	ce := &columnarlog.CorruptionError{Segment: "/data/tables/7/0/00000000000000000000.log", Position: 4096, Offset: 12,
		Err: fmt.Errorf("%w: crc 1, header says 2", columnarlog.ErrCorrupt)}
	for _, err := range []error{ce, fmt.Errorf("read db.t bucket 0: %w", ce), fmt.Errorf("open: %w", columnarlog.ErrCorrupt)} {
		if c := status.Code(toStatus(err)); c != codes.DataLoss {
			t.Errorf("toStatus(%v) = %v, want DataLoss", err, c)
		}
	}
}
