package planner

import (
	"errors"
	"testing"
	"time"
)

// TestParseTimestamp: the accepted forms of literal.go, and the offset
// honoured or dropped. planner/duck/literal_test.go checks the same rules
// against DuckDB itself.
func TestParseTimestamp(t *testing.T) {
	at := func(s string) int64 {
		v, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			panic(err)
		}
		return v.UnixMicro()
	}
	for _, tc := range []struct {
		in       string
		honoured int64 // 0: refused
		dropped  int64
	}{
		{"2026-01-01", at("2026-01-01T00:00:00Z"), at("2026-01-01T00:00:00Z")},
		{" 2026-1-2", at("2026-01-02T00:00:00Z"), at("2026-01-02T00:00:00Z")},
		{"2026-01-01 10:00", at("2026-01-01T10:00:00Z"), at("2026-01-01T10:00:00Z")},
		{"2026-01-01T1:02:03", at("2026-01-01T01:02:03Z"), at("2026-01-01T01:02:03Z")},
		{"2026-01-01 10:00:00.1234569 ", at("2026-01-01T10:00:00.123456Z"), at("2026-01-01T10:00:00.123456Z")},
		{"1969-12-31 23:59:59.9999999", -1, -1},
		{"2026-01-01 10:00:00Z", at("2026-01-01T10:00:00Z"), at("2026-01-01T10:00:00Z")},
		{"2026-01-01 10:00:00+02", at("2026-01-01T08:00:00Z"), at("2026-01-01T10:00:00Z")},
		{"2026-01-01 10:00:00-0230", at("2026-01-01T12:30:00Z"), at("2026-01-01T10:00:00Z")},
		{"2026-01-01T10:00:00.5+02:30", at("2026-01-01T07:30:00.5Z"), at("2026-01-01T10:00:00.5Z")},
		{"2026-01-01 10:00+02", 0, 0},
		{"2026-01-01 10:00 ", 0, 0},
		{"2026-01-01 ", 0, 0},
		{"2026-01-01 10:00:00 +02", 0, 0},
		{"2026-01-01 10:00:00 UTC", 0, 0},
		{"2026-01-01 10:00:00+2", 0, 0},
		{"2026-01-01 10:00:00+24", 0, 0},
		{"2026-01-01 24:00:00", 0, 0},
		{"2026-02-30", 0, 0},
		{"2026/01/01", 0, 0},
		{"infinity", 0, 0},
		{"2026-01-01t10:00:00", 0, 0},
	} {
		for _, honour := range []bool{true, false} {
			want := tc.dropped
			if honour {
				want = tc.honoured
			}
			got, err := parseTimestamp(tc.in, honour)
			switch {
			case want == 0 && err == nil:
				t.Errorf("%q (honour %v): %d, want refused", tc.in, honour, got)
			case want != 0 && (err != nil || got != want):
				t.Errorf("%q (honour %v): %d %v, want %d", tc.in, honour, got, err, want)
			}
		}
	}
}

func TestNumberConst(t *testing.T) {
	for text, want := range map[string]ConstKind{
		"42": ConstExact, "-2": ConstExact, "+3": ConstExact, "1.5": ConstExact, ".5": ConstExact, "1.": ConstExact,
		"1e3": ConstDouble, "1E-3": ConstDouble, "1.23456789012345678901234567890123456789": ConstDouble,
		"1/2": 0, "0x10": 0, "1e": 0, "": 0, "-": 0,
	} {
		k, err := NumberConst(text)
		if (want == 0) != (err != nil) || k.Kind != want {
			t.Errorf("%q: %+v %v, want kind %d", text, k, err, want)
		}
	}
}

// TestStartMicros: a changes() start is read as compared with
// _commit_timestamp, a TIMESTAMPTZ.
func TestStartMicros(t *testing.T) {
	for sql, want := range map[string]int64{
		"SELECT * FROM changes('t', TIMESTAMP '1970-01-01 01:00:00')":        3600e6,
		"SELECT * FROM changes('t', TIMESTAMP '1970-01-01 01:00:00+01')":     3600e6,
		"SELECT * FROM changes('t', TIMESTAMPTZ '1970-01-01 01:00:00+01')":   0,
		"SELECT * FROM changes('t', timestamptz '1970-01-01 00:00:00-0030')": 1800e6,
		"SELECT * FROM changes('t', TIMESTAMP '1970-01-02')":                 86400e6,
	} {
		st, err := Classify(sql)
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		if got, err := st.Changes.StartMicros(); err != nil || got != want {
			t.Errorf("%s: %d %v, want %d", sql, got, err, want)
		}
	}
	st, err := Classify("SELECT * FROM changes('t', TIMESTAMP 'yesterday')")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Changes.StartMicros(); !errors.Is(err, ErrInvalid) {
		t.Errorf("TIMESTAMP 'yesterday': %v, want ErrInvalid", err)
	}
}
