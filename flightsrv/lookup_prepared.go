package flightsrv

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/lakestream/lakestream/catalog"
	"github.com/lakestream/lakestream/planner"
)

// Prepared lookups (lookup.go) keep their plan and their bound keys
// between calls, so that the three RPCs of an execution (bind DoPut,
// GetFlightInfo, DoGet) plan nothing, touch no scalar per value and
// read the key index once, at DoGet:
//
//   - the plan is made once per table definition (a table dropped,
//     recreated or altered since is planned again: each call checks that
//     the store's table and its definition are still the plan's);
//   - a bind whose columns have the parameters' types is kept as Arrow
//     columns (copied out of the request), and when every key column's
//     condition is one parameter (k = ?), those columns are the keys
//     to look up as they are, with no per-value conversion; the scalars
//     the engine binds are made from them only should the statement run
//     in the engine after all;
//   - the FlightInfo's schema is encoded once, and its ticket once per
//     half ticket TTL (a statement used for hours gets fresh ones).

// preparedLookup is a prepared lookup's plan and what was derived from it.
type preparedLookup struct {
	plan   *lookupPlan
	schema []byte // the serialized result schema
	ticket atomic.Pointer[sealedTicket]
	// keys are the bound rows' keys for plan, in Go memory; nil: made
	// from the parameter rows at DoGet.
	keys arrow.RecordBatch
}

// goMem holds what a prepared statement keeps between calls: garbage
// collected, so a statement dropped by expiry or never closed releases
// nothing by hand.
var goMem = memory.NewGoAllocator()

// preparedPlan returns the lookup plan of p's statement for its table as
// it is now, planned once per table definition; nil when the statement
// is not a lookup the fast path serves.
func (s *Server) preparedPlan(ctx context.Context, p *prepared, handle string) *preparedLookup {
	l := p.stmt.Lookup
	if p.stmt.Kind != planner.KindQuery || l == nil {
		return nil
	}
	t, err := s.table(ctx, catalog.PrivSelect, l.DB, l.Table)
	if err != nil {
		return nil
	}
	def := t.Def()
	p.mu.Lock()
	pl := p.lookup
	p.mu.Unlock()
	if pl != nil && pl.plan.t == t && pl.plan.def == def {
		return pl
	}
	lp := s.planLookup(ctx, p.stmt)
	if lp == nil {
		return nil
	}
	pl = &preparedLookup{plan: lp, schema: flight.SerializeSchema(lp.schema, s.opts.Mem)}
	p.mu.Lock()
	p.lookup = pl // the keys bound for an older plan are made again from the rows
	p.mu.Unlock()
	return pl
}

// sealedTicket is a signed ticket and when it expires.
type sealedTicket struct {
	raw []byte
	exp time.Time
}

// preparedLookupTicket is the ticket of an execution of the prepared lookup: the
// one sealed last, or a new one once that has lived half its TTL.
func (s *Server) preparedLookupTicket(ctx context.Context, pl *preparedLookup, sql, handle string) (*sealedTicket, error) {
	if st := pl.ticket.Load(); st != nil && time.Until(st.exp) > s.opts.TicketTTL/2 {
		return st, nil
	}
	tk := &ticket{Kind: "lookup", SQL: sql, Handle: handle}
	raw, err := s.seal(ctx, tk)
	if err != nil {
		return nil, err
	}
	st := &sealedTicket{raw: raw, exp: time.Unix(tk.Exp, 0)}
	pl.ticket.Store(st)
	return st, nil
}

// preparedLookupInfo is the FlightInfo of an execution of the prepared lookup.
func (s *Server) preparedLookupInfo(ctx context.Context, pl *preparedLookup, p *prepared, handle string, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	st, err := s.preparedLookupTicket(ctx, pl, p.stmt.SQL, handle)
	if err != nil {
		return nil, err
	}
	return &flight.FlightInfo{
		Schema:           pl.schema,
		FlightDescriptor: desc,
		Endpoint:         []*flight.FlightEndpoint{{Ticket: &flight.Ticket{Ticket: st.raw}, ExpirationTime: timestamppb.New(st.exp)}},
		TotalRecords:     -1,
		TotalBytes:       -1,
	}, nil
}

// bindLookup keeps recs as p's parameters when each column has its
// parameter's type, and reports whether it did; else bind converts them.
func (p *prepared) bindLookup(pl *preparedLookup, recs []arrow.RecordBatch) bool {
	lp := pl.plan
	if len(recs) == 0 {
		return false
	}
	var rows int64
	for _, rec := range recs {
		if int(rec.NumCols()) != len(lp.params) {
			return false // bind reports the count
		}
		for i, c := range rec.Columns() {
			if !arrow.TypeEqual(c.DataType(), lp.params[i]) {
				return false
			}
		}
		rows += rec.NumRows()
	}
	cols := make([]arrow.Array, len(lp.params))
	for i := range cols {
		parts := make([]arrow.Array, len(recs))
		for j, rec := range recs {
			parts[j] = rec.Column(i)
		}
		c, err := array.Concatenate(parts, goMem)
		if err != nil {
			return false
		}
		cols[i] = c
	}
	bound := array.NewRecordBatch(recs[0].Schema(), cols, rows)
	keys := lp.directKeys(bound)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.params, p.bound = nil, bound
	if p.lookup == pl {
		pl.keys = keys
	} else if p.lookup != nil {
		p.lookup.keys = nil
	}
	return true
}

// directKeys is the record of keys to look up for the bound rows when
// each key column's condition is one parameter and no bound key is NULL:
// the parameters' columns, named as the key columns; nil otherwise.
func (lp *lookupPlan) directKeys(bound arrow.RecordBatch) arrow.RecordBatch {
	fields := make([]arrow.Field, len(lp.keys))
	cols := make([]arrow.Array, len(lp.keys))
	for i, k := range lp.keys {
		if len(k.values) != 1 || k.values[0].Param == 0 {
			return nil
		}
		c := bound.Column(k.values[0].Param - 1)
		if c.NullN() > 0 || !arrow.TypeEqual(c.DataType(), k.field.Type) {
			return nil
		}
		fields[i] = arrow.Field{Name: k.field.Name, Type: k.field.Type}
		cols[i] = c
	}
	return array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, bound.NumRows())
}

// paramsLocked makes the parameter rows from the bound columns, if they
// are not made yet. p.mu is held.
func (p *prepared) paramsLocked() {
	if p.params != nil || p.bound == nil {
		return
	}
	rows, err := paramRows(p.bound)
	if err != nil {
		// bindLookup kept only columns of key types, which are scalars'.
		panic("prepared lookup: bound parameters of key types do not convert: " + err.Error())
	}
	p.params, p.bound = rows, nil
}

// boundKeys returns the keys of p's bound rows for pl: those kept at bind,
// else made from the parameter rows.
func (s *Server) boundKeys(p *prepared, pl *preparedLookup) (arrow.RecordBatch, bool, error) {
	p.mu.Lock()
	keys := pl.keys
	p.mu.Unlock()
	if keys != nil {
		return keys, false, nil
	}
	rec, err := pl.plan.keyRecord(s, p.argRows())
	return rec, err == nil, err
}
