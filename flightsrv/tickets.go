package flightsrv

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/lakestream/lakestream/planner"
	"github.com/lakestream/lakestream/tables"
)

// Lakestream tickets are the magic prefix followed by a JSON object. JSON
// keeps them readable in logs and packet captures; they are small, and
// decoded once per DoGet. Tickets not starting with the prefix are Flight
// SQL's own and go to its router.
//
//	"LSTK1" | {"kind":"scan","table":12,"schema":0,"cols":[0,2],"ranges":[{"Bucket":0,"From":0,"To":4096}]}
var ticketMagic = []byte("LSTK1")

const maxTicketBytes = 64 << 10

type ticket struct {
	Kind string `json:"kind"` // "scan", "query", "prepared", "lookup" (SQL, or Handle when prepared), "changes" (Ranges' To is -1: unbounded) or "show"
	// scan
	Table  int64          `json:"table,omitempty"`
	Schema int32          `json:"schema,omitempty"`
	Cols   []int          `json:"cols,omitempty"`
	Ranges []tables.Range `json:"ranges,omitempty"`
	// scan of a tiered table: data files of a lake snapshot, read before
	// the ranges (which start at the snapshot's tiered offsets)
	Snapshot int64    `json:"snapshot,omitempty"`
	Files    []string `json:"files,omitempty"`
	// scan of a primary-key table with a lake: the table as DoGet
	// captures it (lake rows and log records filtered by one state), in
	// one endpoint; Ranges and Files are empty
	State bool `json:"state,omitempty"`
	// changes: the WHERE conditions, bound again on DoGet
	Where []planner.Condition `json:"where,omitempty"`
	// query
	SQL string `json:"sql,omitempty"`
	// prepared
	Handle string `json:"handle,omitempty"`
}

func isLakestreamTicket(b []byte) bool { return bytes.HasPrefix(b, ticketMagic) }

func (t *ticket) encode() ([]byte, error) {
	b, err := json.Marshal(t)
	if err != nil {
		return nil, err
	}
	return append(append([]byte(nil), ticketMagic...), b...), nil
}

func decodeTicket(b []byte) (*ticket, error) {
	if len(b) > maxTicketBytes {
		return nil, fmt.Errorf("%w: ticket of %d bytes, over the %d-byte limit", errInvalid, len(b), maxTicketBytes)
	}
	var t ticket
	if err := json.Unmarshal(bytes.TrimPrefix(b, ticketMagic), &t); err != nil {
		return nil, fmt.Errorf("%w: malformed ticket: %v", errInvalid, err)
	}
	switch t.Kind {
	case "scan", "query", "prepared", "changes", "show", "lookup":
	default:
		return nil, fmt.Errorf("%w: ticket of unknown kind %q", errInvalid, t.Kind)
	}
	return &t, nil
}
