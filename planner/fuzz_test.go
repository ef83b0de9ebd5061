package planner_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/lakestream/lakestream/catalog"
	"github.com/lakestream/lakestream/planner"
)

// FuzzClassify feeds arbitrary statements to Classify, which routes every
// statement a client sends. Nothing may panic; an error matches
// planner.ErrInvalid or, for DDL, catalog.ErrInvalid; a statement it
// accepts has the part its kind needs; a changes() subscription has 1 to
// 1024 endpoints and a WHERE of known comparisons and literals that come
// back equal through JSON (they travel in tickets), and its start is read
// without a panic.
func FuzzClassify(f *testing.F) {
	for _, s := range []string{
		"SELECT * FROM events",
		"select a, \"B\" from db.t;",
		"SELECT a, _offset FROM changes('db.events', 'latest') WHERE a > 10 AND b = 'x' AND c IS NOT NULL",
		"SELECT * FROM changes('t', TIMESTAMPTZ '2026-01-02 15:04:05+02:00', 4) WHERE ts >= TIMESTAMP '2026-01-01' AND d < DATE '2026-02-01'",
		"SELECT * FROM changes('t', '0:5, 1:7') WHERE 3 <= x AND ok = TRUE AND t <> TIME '12:00:00'",
		"SELECT count(*) FROM changes('t', 'earliest')",
		"INSERT INTO t (a, b) SELECT 1, 'x'",
		"insert into db.t values (1, 2)",
		"CREATE TABLE t (id BIGINT PRIMARY KEY)",
		"ALTER TABLE t ADD c INT",
		"/* comment */ SELECT 1",
		"WITH x AS (SELECT 1) SELECT * FROM x",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, sql string) {
		st, err := planner.Classify(sql)
		if err != nil {
			if !errors.Is(err, planner.ErrInvalid) && !errors.Is(err, catalog.ErrInvalid) {
				t.Fatalf("Classify(%q): %v matches neither planner.ErrInvalid nor catalog.ErrInvalid", sql, err)
			}
			return
		}
		if st.SQL != sql {
			t.Fatalf("Classify(%q) keeps the text %q", sql, st.SQL)
		}
		switch st.Kind {
		case planner.KindDDL:
			if st.DDL == nil {
				t.Fatalf("Classify(%q): DDL without a statement", sql)
			}
		case planner.KindScan:
			if st.Scan == nil || st.Scan.Table == "" {
				t.Fatalf("Classify(%q): a plain scan of no table: %+v", sql, st.Scan)
			}
		case planner.KindInsert:
			if st.Insert == nil {
				t.Fatalf("Classify(%q): INSERT without a target", sql)
			}
		case planner.KindChanges:
			checkChanges(t, sql, st.Changes)
		case planner.KindQuery:
		default:
			t.Fatalf("Classify(%q): kind %v", sql, st.Kind)
		}
	})
}

func checkChanges(t *testing.T, sql string, c *planner.Changes) {
	if c == nil {
		t.Fatalf("Classify(%q): changes() without its arguments", sql)
	}
	if c.Endpoints < 1 || c.Endpoints > 1024 {
		t.Fatalf("Classify(%q): %d endpoints", sql, c.Endpoints)
	}
	for _, w := range c.Where {
		switch w.Op {
		case planner.OpIsNull, planner.OpIsNotNull:
		case planner.OpEq, planner.OpNe, planner.OpLt, planner.OpLe, planner.OpGt, planner.OpGe:
			switch w.Value.Kind {
			case planner.LitNumber, planner.LitString, planner.LitBool, planner.LitTimestamp,
				planner.LitTimestampTZ, planner.LitDate, planner.LitTime:
			default:
				t.Fatalf("Classify(%q): condition %+v has a literal of kind %q", sql, w, w.Value.Kind)
			}
		default:
			t.Fatalf("Classify(%q): condition %+v has op %q", sql, w, w.Op)
		}
	}
	// JSON carries only valid UTF-8, as does the protobuf string a
	// statement arrives in: a statement that is not, no client can send.
	if c.Where != nil && utf8.ValidString(sql) {
		b, err := json.Marshal(c.Where)
		if err != nil {
			t.Fatal(err)
		}
		var again []planner.Condition
		if err := json.Unmarshal(b, &again); err != nil || !reflect.DeepEqual(again, c.Where) {
			t.Fatalf("Classify(%q): WHERE %+v comes back from JSON as %+v (%v)", sql, c.Where, again, err)
		}
	}
	if c.StartTime {
		if _, err := c.StartMicros(); err != nil && !errors.Is(err, planner.ErrInvalid) {
			t.Fatalf("Classify(%q): StartMicros: %v does not match ErrInvalid", sql, err)
		}
	}
}

// FuzzParseOffsets feeds arbitrary changes() start positions to
// ParseOffsets. Nothing may panic; what it accepts holds non-negative
// buckets and offsets and parses back the same once printed.
func FuzzParseOffsets(f *testing.F) {
	for _, s := range []string{"0:5", "0:5, 1:7", " 3 : 9 ,0:0", "0:5,0:6", "-1:2", "1:", "earliest", "9223372036854775807:1", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := planner.ParseOffsets(s)
		if err != nil {
			return
		}
		parts := make([]string, 0, len(m))
		for _, b := range slices.Sorted(maps.Keys(m)) {
			if b < 0 || m[b] < 0 {
				t.Fatalf("ParseOffsets(%q) = %v: negative", s, m)
			}
			parts = append(parts, fmt.Sprintf("%d:%d", b, m[b]))
		}
		again, err := planner.ParseOffsets(strings.Join(parts, ","))
		if err != nil || !maps.Equal(again, m) {
			t.Fatalf("ParseOffsets(%q) = %v, printed and parsed again %v, %v", s, m, again, err)
		}
	})
}
