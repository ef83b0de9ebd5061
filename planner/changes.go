package planner

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Changes is SELECT <columns> FROM changes('[db.]table', start [, endpoints]):
// an unbounded stream of the rows committed to a table from a start
// position on, each with _change_type, _bucket, _offset and
// _commit_timestamp.
type Changes struct {
	DB, Table string
	// Columns are the selected names; nil means *.
	Columns []string
	// Start is 'earliest', 'latest', '<bucket>:<offset>,...' or, when
	// StartTime is set, the text of a TIMESTAMP literal (a TIMESTAMPTZ
	// one when StartTZ is set too).
	Start              string
	StartTime, StartTZ bool
	// Endpoints splits the buckets into this many endpoints, each an
	// independent stream. Default 1: clients such as ADBC read endpoints
	// one after the other, which never ends for an unbounded stream.
	Endpoints int
	// Where are the conditions of the WHERE clause, all of which a row
	// must meet; nil means every row. Their columns need not be selected.
	Where []Condition
}

var changesCall = regexp.MustCompile(`(?i)\bchanges\s*\(`)

// mentionsChanges reports whether sql calls changes(), so that a query the
// stream path cannot serve gets a clear refusal rather than DuckDB's
// "unknown function".
func mentionsChanges(sql string) bool { return changesCall.MatchString(sql) }

// errUnboundedQuery explains what an unbounded stream supports.
var errUnboundedQuery = fmt.Errorf("changes() is an unbounded stream: select columns from it and " +
	"filter them with simple conditions (SELECT a, _offset FROM changes('t', 'latest') WHERE a > 10 AND b = 'x'); " +
	"aggregates, ORDER BY, LIMIT, joins and subqueries over it are not supported — query the table or " +
	"\"t$changelog\" for bounded results")

// parseChanges parses the subscription form; ok is false when sql is some
// other statement.
func parseChanges(sql string) (*Changes, bool, error) {
	if !mentionsChanges(sql) {
		return nil, false, nil
	}
	s := &cursor{src: sql}
	if !s.keyword("select") {
		return nil, true, errUnboundedQuery
	}
	c := &Changes{Endpoints: 1}
	if !s.punct("*") {
		cols, ok := s.selectList()
		if !ok {
			return nil, true, errUnboundedQuery
		}
		c.Columns = cols
	}
	if !s.keyword("from") || !s.keyword("changes") || !s.punct("(") {
		return nil, true, errUnboundedQuery
	}
	name, ok := s.str()
	if !ok || !s.punct(",") {
		return nil, true, fmt.Errorf("changes(): the first argument is the table name as a string, e.g. changes('events', 'latest')")
	}
	c.DB, c.Table = splitTableName(name)
	if s.keyword("timestamp") {
		c.StartTime = true
	} else if s.keyword("timestamptz") {
		c.StartTime, c.StartTZ = true, true
	}
	if c.Start, ok = s.str(); !ok {
		return nil, true, fmt.Errorf("changes(): the start is 'earliest', 'latest', TIMESTAMP '...' or '<bucket>:<offset>,...'")
	}
	if s.punct(",") {
		n, ok := s.number()
		if !ok || n < 1 || n > 1024 {
			return nil, true, fmt.Errorf("changes(): the third argument is the number of endpoints, 1 to 1024")
		}
		c.Endpoints = n
	}
	if !s.punct(")") {
		return nil, true, errUnboundedQuery
	}
	if s.keyword("where") {
		where, err := s.where()
		if err != nil {
			return nil, true, err
		}
		c.Where = where
		return c, true, nil
	}
	s.punct(";")
	if !s.atEnd() {
		return nil, true, errUnboundedQuery
	}
	return c, true, nil
}

// StartMicros is the start of a changes('t', TIMESTAMP '...') subscription
// in microseconds since the epoch, UTC. The literal is read as it would be
// compared with _commit_timestamp, a TIMESTAMPTZ (literal.go): an offset
// counts in a TIMESTAMPTZ literal and not in a TIMESTAMP one, as in
// "t$changelog" WHERE _commit_timestamp >= TIMESTAMP '...'.
func (c *Changes) StartMicros() (int64, error) {
	lit := Literal{Kind: LitTimestamp, Text: c.Start}
	if c.StartTZ {
		lit.Kind = LitTimestampTZ
	}
	k, err := lit.Const()
	if err != nil {
		return 0, err
	}
	us, err := k.TimestampMicros(true)
	if err != nil {
		return 0, fmt.Errorf("%w: changes(): start %q: want e.g. TIMESTAMP '2026-01-02 15:04:05' (UTC), or TIMESTAMPTZ '2026-01-02 15:04:05+02:00' for an offset", ErrInvalid, c.Start)
	}
	return us, nil
}

// splitTableName splits "db.table"; names are folded like unquoted SQL names.
func splitTableName(name string) (db, table string) {
	name = strings.TrimSpace(name)
	if i := strings.LastIndexByte(name, '.'); i > 0 {
		return strings.ToLower(name[:i]), strings.ToLower(name[i+1:])
	}
	return "", strings.ToLower(name)
}

// selectList reads "a, b, c" up to FROM.
func (s *cursor) selectList() ([]string, bool) {
	var out []string
	for {
		id, ok := s.ident()
		if !ok || strings.EqualFold(id, "from") {
			return nil, false
		}
		out = append(out, id)
		if !s.punct(",") {
			return out, true
		}
	}
}

// ParseOffsets reads '<bucket>:<offset>,...' start positions.
func ParseOffsets(s string) (map[int]int64, error) {
	out := map[int]int64{}
	for _, part := range strings.Split(s, ",") {
		b, o, ok := strings.Cut(strings.TrimSpace(part), ":")
		bucket, err1 := strconv.Atoi(strings.TrimSpace(b))
		off, err2 := strconv.ParseInt(strings.TrimSpace(o), 10, 64)
		if !ok || err1 != nil || err2 != nil || bucket < 0 || off < 0 {
			return nil, fmt.Errorf("changes(): start %q: want 'earliest', 'latest', a TIMESTAMP or '<bucket>:<offset>,...' with non-negative numbers", s)
		}
		if _, dup := out[bucket]; dup {
			return nil, fmt.Errorf("changes(): start %q names bucket %d twice", s, bucket)
		}
		out[bucket] = off
	}
	return out, nil
}
