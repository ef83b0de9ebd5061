package flightsrv

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lakestream/lakestream/planner"
)

// prepared is one prepared statement.
type prepared struct {
	// user is the ID of the user that prepared it, the only one that may
	// use it (preparedOf); 0 without a user.
	user         int64
	sql          string
	stmt         *planner.Statement
	dataset      *arrow.Schema
	paramsSchema *arrow.Schema

	mu       sync.Mutex
	params   [][]any // rows bound by DoPutPreparedStatementQuery
	lastUsed time.Time
	// A lookup's plan and parameters (lookup_prepared.go): with bound
	// set, params are made from it when first asked for.
	lookup *preparedLookup
	bound  arrow.RecordBatch
	// release gives back its place under Limits.PreparedPerSession once
	// it is closed or expires.
	release func()
}

// args are the parameters of one execution of a query: the one bound row.
func (p *prepared) args() ([]any, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.paramsLocked()
	switch len(p.params) {
	case 0:
		return nil, nil
	case 1:
		return p.params[0], nil
	}
	return nil, fmt.Errorf("%w: %d parameter rows bound to a query; bind one row", errInvalid, len(p.params))
}

// argRows are every bound parameter row, one execution each.
func (p *prepared) argRows() [][]any {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.paramsLocked()
	return p.params
}

// bind keeps the rows of rec as the parameter values, replacing earlier ones.
func (p *prepared) bind(recs []arrow.RecordBatch) error {
	var rows [][]any
	for _, rec := range recs {
		if n := p.paramsSchema.NumFields(); n != int(rec.NumCols()) && p.paramsSchema != emptySchema {
			return paramCountError(n, int(rec.NumCols()))
		}
		r, err := paramRows(rec)
		if err != nil {
			return err
		}
		rows = append(rows, r...)
	}
	p.mu.Lock()
	p.params, p.bound = rows, nil
	if p.lookup != nil {
		p.lookup.keys = nil
	}
	p.mu.Unlock()
	return nil
}

// paramRows turns a record of parameters into Arrow scalars, row by row:
// each binds with its own type (params.go).
func paramRows(rec arrow.RecordBatch) ([][]any, error) {
	rows := make([][]any, rec.NumRows())
	for r := range rows {
		vals := make([]any, rec.NumCols())
		for i, col := range rec.Columns() {
			sc, err := paramScalar(col, r)
			if err != nil {
				return nil, fmt.Errorf("%w: parameter %d (%q): %v", errInvalid, i+1, rec.Schema().Field(i).Name, err)
			}
			vals[i] = sc
		}
		rows[r] = vals
	}
	return rows, nil
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
	p := ps.m[handle]
	delete(ps.m, handle)
	ps.mu.Unlock()
	p.dropped()
}

// dropped gives back the statement's place under the limits.
func (p *prepared) dropped() {
	if p != nil && p.release != nil {
		p.release()
	}
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
			p.dropped()
			n++
		}
	}
	return n
}
