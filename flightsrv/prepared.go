package flightsrv

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/lakestream/lakestream/planner"
)

// prepared is one prepared statement.
type prepared struct {
	sql          string
	stmt         *planner.Statement
	dataset      *arrow.Schema
	paramsSchema *arrow.Schema

	mu       sync.Mutex
	params   []any // bound by DoPutPreparedStatementQuery
	lastUsed time.Time
}

func (p *prepared) args() []any {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.params
}

// bind keeps the first row of rec as the parameter values.
func (p *prepared) bind(rec arrow.RecordBatch) error {
	if rec.NumRows() != 1 {
		return fmt.Errorf("%w: bind exactly one row of parameters to a query, got %d", errInvalid, rec.NumRows())
	}
	vals := make([]any, rec.NumCols())
	for i, col := range rec.Columns() {
		sc, err := scalar.GetScalar(col, 0)
		if err != nil {
			return fmt.Errorf("%w: parameter %d: %v", errInvalid, i+1, err)
		}
		vals[i] = scalarValue(sc)
	}
	p.mu.Lock()
	p.params = vals
	p.mu.Unlock()
	return nil
}

// scalarValue converts a parameter to a Go value DuckDB binds.
func scalarValue(sc scalar.Scalar) any {
	if !sc.IsValid() {
		return nil
	}
	switch v := sc.(type) {
	case *scalar.String:
		return v.String()
	case *scalar.LargeString:
		return v.String()
	case *scalar.Binary:
		return v.Data()
	case *scalar.Timestamp:
		unit := v.Type.(*arrow.TimestampType).Unit
		return v.Value.ToTime(unit)
	case *scalar.Date32:
		return v.Value.ToTime()
	}
	if g, ok := sc.(interface{ Value() any }); ok {
		return g.Value()
	}
	return sc.String()
}

// preparedStore holds prepared statements by handle and expires idle ones:
// a client that disappears without closing its statements leaks nothing
// for longer than the TTL.
type preparedStore struct {
	ttl time.Duration
	mu  sync.Mutex
	m   map[string]*prepared
}

func newPreparedStore(ttl time.Duration) *preparedStore {
	return &preparedStore{ttl: ttl, m: map[string]*prepared{}}
}

func (ps *preparedStore) add(p *prepared) string {
	var b [16]byte
	rand.Read(b[:])
	h := hex.EncodeToString(b[:])
	p.lastUsed = time.Now()
	ps.mu.Lock()
	ps.m[h] = p
	ps.mu.Unlock()
	return h
}

func (ps *preparedStore) get(handle string) (*prepared, error) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	p, ok := ps.m[handle]
	if !ok {
		return nil, fmt.Errorf("%w: %q", errUnknownHandle, handle)
	}
	p.mu.Lock()
	p.lastUsed = time.Now()
	p.mu.Unlock()
	return p, nil
}

func (ps *preparedStore) remove(handle string) {
	ps.mu.Lock()
	delete(ps.m, handle)
	ps.mu.Unlock()
}

// expire drops statements idle since before now-ttl and returns how many.
func (ps *preparedStore) expire(now time.Time) int {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	n := 0
	for h, p := range ps.m {
		p.mu.Lock()
		idle := now.Sub(p.lastUsed) > ps.ttl
		p.mu.Unlock()
		if idle {
			delete(ps.m, h)
			n++
		}
	}
	return n
}
