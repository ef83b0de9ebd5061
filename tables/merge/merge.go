// Package merge holds the merge engines of primary-key tables as pure
// functions: given a key's current row (or none) and an incoming row, the
// row the key has afterwards, and whether the write changed it. Rows are
// []rowenc.Value; a partial write carries a subset of the columns, marked
// by present. docs/sql.md ("Primary-key tables") states the semantics.
//
// merge imports internal/rowenc and nothing else of Lakestream.
package merge

import (
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lakestream/lakestream/internal/rowenc"
)

// Kind names a merge engine (the merge-engine table option).
type Kind string

// The merge engines.
const (
	LastRow     Kind = "last_row"
	FirstRow    Kind = "first_row"
	Versioned   Kind = "versioned"
	Aggregation Kind = "aggregation"
)

// ErrInvalid marks a write the engine refuses: the caller's input is wrong.
var ErrInvalid = errors.New("invalid write")

// Column describes one column of the table to the engine.
type Column struct {
	Name    string
	Type    arrow.DataType
	NotNull bool
	Key     bool // part of the primary key
	// Agg is the aggregation engine's function of the column (default
	// last_non_null_value); Delimiter that of listagg (default ",").
	Agg       Func
	Delimiter string
}

// Engine merges rows of one table.
type Engine struct {
	kind Kind
	cols []Column
	ver  int // the version column of Versioned, else -1
}

// New returns the engine kind for a table of cols; version is the index
// of the versioned engine's version column (else ignored).
func New(kind Kind, cols []Column, version int) (*Engine, error) {
	e := &Engine{kind: kind, cols: cols, ver: -1}
	switch kind {
	case LastRow, FirstRow:
	case Versioned:
		if version < 0 || version >= len(cols) || !rowenc.Comparable(cols[version].Type) {
			return nil, fmt.Errorf("%w: versioned merge engine without a comparable version column", ErrInvalid)
		}
		e.ver = version
	case Aggregation:
		if err := checkAggs(cols); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("%w: unknown merge engine %q", ErrInvalid, kind)
	}
	return e, nil
}

// Kind is the engine's kind.
func (e *Engine) Kind() Kind { return e.kind }

// CheckPresent says whether a write carrying the columns present may be
// merged: first_row takes whole rows only, versioned needs the version
// column; key columns are always needed.
func (e *Engine) CheckPresent(present []bool) error {
	for i, c := range e.cols {
		if present[i] {
			continue
		}
		switch {
		case c.Key:
			return fmt.Errorf("%w: primary key column %q is missing", ErrInvalid, c.Name)
		case e.kind == FirstRow:
			return fmt.Errorf("%w: column %q is missing: the first_row merge engine takes whole rows only (no partial updates)", ErrInvalid, c.Name)
		case i == e.ver:
			return fmt.Errorf("%w: the version column %q of the versioned merge engine is missing", ErrInvalid, c.Name)
		}
	}
	return nil
}

// Upsert merges the incoming row in (its columns present; the others are
// ignored) into old, the key's current row (nil: the key has none). It
// returns the key's row afterwards, and changed false when the write
// leaves the row as it was and produces no change record. out may share
// values with old and in.
func (e *Engine) Upsert(old, in []rowenc.Value, present []bool) (out []rowenc.Value, changed bool, err error) {
	if old == nil {
		return e.insert(in, present)
	}
	switch e.kind {
	case FirstRow:
		return old, false, nil
	case Versioned:
		if !newerVersion(e.cols[e.ver].Type, old[e.ver], in[e.ver]) {
			return old, false, nil
		}
	case Aggregation:
		return e.aggregate(old, in, present)
	}
	if all(present) {
		return in, true, nil
	}
	out = make([]rowenc.Value, len(old))
	for i := range old {
		if present[i] {
			out[i] = in[i]
		} else {
			out[i] = old[i]
		}
	}
	return out, true, nil
}

func all(present []bool) bool {
	for _, p := range present {
		if !p {
			return false
		}
	}
	return true
}

// insert is the row of a new key: the columns carried, nulls for the
// others, which must then be nullable.
func (e *Engine) insert(in []rowenc.Value, present []bool) ([]rowenc.Value, bool, error) {
	if e.kind != Aggregation && all(present) {
		return in, true, nil
	}
	out := make([]rowenc.Value, len(in))
	for i, c := range e.cols {
		switch {
		case e.kind == Aggregation && c.Agg == Count:
			out[i] = initAgg(c, in[i]) // a count not carried starts at 0
		case present[i]:
			out[i] = in[i]
		case c.NotNull:
			return nil, false, fmt.Errorf("%w: column %q is NOT NULL and missing from a partial write of a new key", ErrInvalid, c.Name)
		default:
			out[i] = rowenc.Null
		}
	}
	return out, true, nil
}

// newerVersion says whether a row of version in replaces one of version
// old: a higher version wins, a tie goes to the newer write, and NULL
// sorts below every value.
func newerVersion(dt arrow.DataType, old, in rowenc.Value) bool {
	switch {
	case in.Null:
		return old.Null
	case old.Null:
		return true
	}
	return rowenc.Compare(dt, in.Raw, old.Raw) >= 0
}
