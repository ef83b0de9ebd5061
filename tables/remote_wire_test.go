package tables

import (
	"encoding/hex"
	"errors"
	"reflect"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"

	"github.com/lakestream/lakestream/internal/scan"
)

// A RemoteQuery survives its frame with a filter value of every type the
// engine pushes, and its bytes are the wire format's (remote_wire.go).
func TestRemoteQueryWire(t *testing.T) {
	var filters []scan.Filter
	for i, v := range []any{nil, int8(-1), int16(-2), int32(-3), int64(-4), arrow.Date32(5), arrow.Date64(6), arrow.Time32(7),
		arrow.Time64(8), arrow.Timestamp(9), uint8(10), uint16(11), uint32(12), uint64(1 << 63), float32(1.5), 2.25, true,
		decimal128.New(-1, 42), "zoë", []byte{0, 1}} {
		filters = append(filters, scan.Filter{Column: i, Op: ">=", Value: v})
	}
	q := RemoteQuery{TableID: 7, SchemaID: 2, Bucket: 3, Layer: LayerChangelog, From: 100, To: 200, Columns: []int{2, 0}, Filters: filters, Have: []int64{100, 150}}
	b, err := q.encode()
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeRemoteQuery(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, q) {
		t.Fatalf("decoded %+v, want %+v", got, q)
	}
	all, err := RemoteQuery{TableID: 1, Bucket: 1, Filters: []scan.Filter{{Column: 1, Op: "=", Value: int64(5)}}}.encode()
	if err != nil {
		t.Fatal(err)
	}
	const pinned = "01" + "0100000000000000" + "00000000" + "01000000" + "00" + "0000000000000000" + "0000000000000000" +
		"ffffffff" + "0100" + "01000000" + "013d" + "04" + "0500000000000000" + "00000000"
	if hex.EncodeToString(all) != pinned {
		t.Fatalf("bytes %x, want %s", all, pinned)
	}
	if got, err := decodeRemoteQuery(all); err != nil || got.Columns != nil {
		t.Fatalf("all columns: %+v, %v", got, err)
	}
	for i := range b {
		if _, err := decodeRemoteQuery(b[:i]); !errors.Is(err, ErrBadRemoteQuery) {
			t.Fatalf("cut to %d bytes: %v, want ErrBadRemoteQuery", i, err)
		}
	}
	if _, err := decodeRemoteQuery(append(b, 0)); !errors.Is(err, ErrBadRemoteQuery) {
		t.Fatalf("a byte too many: %v", err)
	}
	if _, err := (RemoteQuery{Filters: []scan.Filter{{Op: "=", Value: struct{}{}}}}).encode(); !errors.Is(err, ErrBadRemoteQuery) {
		t.Fatalf("a value of no wire type: %v", err)
	}
}
