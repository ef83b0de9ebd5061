package columnarlog

import (
	"bytes"
	"encoding/hex"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
)

// pinnedStats has one column of every kind and flag combination that
// changes the layout.
func pinnedStats() []ColumnStats {
	return []ColumnStats{
		{Kind: StatsInt64, Flags: StatsHasMinMax, NullCount: 2, MinInt: -5, MaxInt: 1000},
		{Kind: StatsUint64, Flags: StatsHasMinMax, MinUint: 1, MaxUint: math.MaxUint64},
		{Kind: StatsFloat64, Flags: StatsHasMinMax | StatsHasNaN, MinFloat: -1.5, MaxFloat: 2.25},
		{Kind: StatsDecimal128, Flags: StatsHasMinMax, NullCount: 1,
			MinDec: Int128{Hi: -1, Lo: math.MaxUint64 - 1249}, MaxDec: Int128{Lo: 99999}},
		{Kind: StatsBool, Flags: StatsHasMinMax, MinInt: 0, MaxInt: 1},
		{Kind: StatsBytes, Flags: StatsHasMinMax | StatsMinTruncated | StatsMaxExclusive, NullCount: 3,
			MinBytes: []byte("ab"), MaxBytes: []byte("ac")},
		{Kind: StatsBytes, Flags: StatsHasMinMax | StatsMaxUnbounded, MinBytes: []byte("z")},
		{Kind: StatsNone},
		{Kind: StatsFloat64, Flags: StatsHasNaN}, // every value NaN
		{Kind: StatsInt64, NullCount: 7},         // every value null
	}
}

// The bytes of the statistics section are part of the format
// (docs/format/log.md).
func TestStatsBytesPinned(t *testing.T) {
	got, err := AppendStatsSection([]byte{0xAA}, pinnedStats())
	if err != nil {
		t.Fatal(err)
	}
	want := "aa" + "94000000" + "01" + "0a00" +
		"01" + "01" + "02000000" + "fbffffffffffffff" + "e803000000000000" +
		"02" + "01" + "00000000" + "0100000000000000" + "ffffffffffffffff" +
		"03" + "03" + "00000000" + "000000000000f8bf" + "0000000000000240" +
		"04" + "01" + "01000000" + "1efbffffffffffff" + "ffffffffffffffff" + "9f86010000000000" + "0000000000000000" +
		"05" + "01" + "00000000" + "00" + "01" +
		"06" + "0d" + "03000000" + "02" + "6162" + "02" + "6163" +
		"06" + "11" + "00000000" + "01" + "7a" +
		"00" +
		"03" + "02" + "00000000" +
		"01" + "00" + "07000000"
	if h := hex.EncodeToString(got); h != want {
		t.Fatalf("stats bytes changed:\n got %s\nwant %s", h, want)
	}
	dec, err := DecodeStats(got[5:])
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(dec, pinnedStats()) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", dec, pinnedStats())
	}
	if dec[3].MinDec.Cmp(Int128{Hi: -1, Lo: math.MaxUint64 - 1248}) >= 0 || dec[3].MinDec.Cmp(dec[3].MaxDec) >= 0 {
		t.Errorf("Int128.Cmp orders %v, %v wrongly", dec[3].MinDec, dec[3].MaxDec)
	}
}

// A batch carries the section between the header and the Arrow message,
// built either way, and its stats come back from the batch.
func TestBatchWithStats(t *testing.T) {
	cols := pinnedStats()
	enc, err := EncodeStats(cols)
	if err != nil {
		t.Fatal(err)
	}
	msg := []byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0}
	a, err := NewBatch(Header{SchemaID: 2, RecordCount: 9}, enc, nil, msg)
	if err != nil {
		t.Fatal(err)
	}
	buf, start := StartBatch(nil)
	if buf, err = AppendStatsSection(buf, cols); err != nil {
		t.Fatal(err)
	}
	buf = append(buf, msg...)
	b, err := FinishBatch(buf[start:], Header{Stats: true, SchemaID: 2, RecordCount: 9})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Fatalf("NewBatch and StartBatch+AppendStatsSection differ:\n%x\n%x", a, b)
	}
	if err := b.Check(); err != nil {
		t.Fatal(err)
	}
	if m, _ := b.ArrowMessage(); !bytes.Equal(m, msg) {
		t.Errorf("arrow message %x, want %x", m, msg)
	}
	got, err := b.ColumnStats()
	if err != nil || !reflect.DeepEqual(got, cols) {
		t.Fatalf("ColumnStats: %v, %+v", err, got)
	}
	plain, _ := NewBatch(Header{RecordCount: 1}, nil, nil, msg)
	if got, err := plain.ColumnStats(); got != nil || err != nil {
		t.Errorf("batch without stats: %v, %v", got, err)
	}
}

func TestDecodeStatsRefusesDamage(t *testing.T) {
	good, err := EncodeStats(pinnedStats())
	if err != nil {
		t.Fatal(err)
	}
	// Every proper prefix is cut off somewhere.
	for n := 0; n < len(good); n++ {
		if _, err := DecodeStats(good[:n]); err == nil {
			t.Fatalf("prefix of %d bytes decoded", n)
		}
	}
	for _, tc := range []struct {
		name string
		b    string
		want error
	}{
		{"version", "02" + "0000", ErrUnknownStats},
		{"count over the bytes", "01" + "ff00" + "00", ErrCorrupt},
		{"kind", "01" + "0100" + "07", ErrCorrupt},
		{"flags", "01" + "0100" + "01" + "20" + "00000000", ErrCorrupt},
		{"bytes bound too long", "01" + "0100" + "06" + "01" + "00000000" + "21" + strings.Repeat("61", 33) + "00", ErrCorrupt},
		{"boolean bound", "01" + "0100" + "05" + "01" + "00000000" + "02" + "01", ErrCorrupt},
		{"trailing bytes", "01" + "0100" + "00" + "00", ErrCorrupt},
	} {
		b, _ := hex.DecodeString(tc.b)
		if _, err := DecodeStats(b); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
}

func TestAppendStatsRefusesBadColumns(t *testing.T) {
	for _, c := range []ColumnStats{
		{Kind: 9},
		{Kind: StatsInt64, Flags: 0x80},
		{Kind: StatsBytes, Flags: StatsHasMinMax, MinBytes: make([]byte, MaxStatsBytes+1)},
	} {
		if b, err := AppendStatsSection([]byte{1}, []ColumnStats{c}); err == nil || len(b) != 1 {
			t.Errorf("%+v: %x, %v; want an error and dst unchanged", c, b, err)
		}
	}
}
