package flightsrv

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/lakestream/lakestream/planner"
	"github.com/lakestream/lakestream/tables"
)

// Lakestream tickets are the magic prefix, an HMAC-SHA256 of the JSON
// under the node's ticket key, and a JSON object. JSON keeps them readable
// in logs and packet captures; they are small, and decoded once per DoGet.
// The MAC makes them tamper-proof: a ticket names lake files, log ranges
// and SQL that DoGet serves as they are, so one the node did not issue, or
// one altered, is refused before anything in it is read. "user" binds a
// ticket to the user that planned it (0: none, authentication off), and
// DoGet checks the caller's privilege again (authorize.go). "exp" is when
// it expires (Options.TicketTTL after planning). Tickets not starting with
// "LSTK" are Flight SQL's own and go to its router; "LSTK2", the format
// before expiry and self-contained queries, is refused as stale.
//
// A query ticket is self-contained (queryplan.go): the statement, its
// bound parameters ("params", an Arrow IPC stream of one row) and the
// pinned reads of its tables ("pins", tables.Pin), so that any connection
// can run it, and the endpoints of a split query each read their part of
// one capture.
//
//	"LSTK3" | HMAC-SHA256(key, json) (32 bytes) | json
//	json: {"kind":"scan","user":3,"exp":1796650000,"table":12,"schema":0,"cols":[0,2],"ranges":[{"Bucket":0,"From":0,"To":4096}]}
//	      {"kind":"scan","exp":1796650000,"table":12,"cols":[0,2],"buckets":[1,4]}
//	      {"kind":"query","exp":1796650000,"sql":"SELECT id FROM t WHERE v > ?","params":"/////...","pins":[{"table":12,"ranges":[...]}]}
var ticketMagic = []byte("LSTK3")

// ticketFamily is the prefix of every Lakestream ticket format.
var ticketFamily = []byte("LSTK")

const ticketMACBytes = sha256.Size

const maxTicketBytes = 64 << 10

type ticket struct {
	Kind string `json:"kind"` // "scan", "query", "lookup" (SQL, or Handle when prepared), "changes" (Ranges' To is -1: unbounded), "show" or "apikey"
	// User is the ID of the user that planned the ticket, the only one
	// that may use it; 0 for none.
	User int64 `json:"user,omitempty"`
	// Exp is when the ticket expires, in Unix seconds.
	Exp int64 `json:"exp"`
	// scan
	Table  int64          `json:"table,omitempty"`
	Schema int32          `json:"schema,omitempty"`
	Cols   []int          `json:"cols,omitempty"`
	Ranges []tables.Range `json:"ranges,omitempty"`
	// scan of a tiered table: data files of a lake snapshot, read before
	// the ranges (which start at the snapshot's tiered offsets)
	Snapshot int64    `json:"snapshot,omitempty"`
	Files    []string `json:"files,omitempty"`
	// scan in a cluster: buckets another node serves, read as that node
	// captures them at DoGet (placement.go); Ranges and Files are empty
	Buckets []int `json:"buckets,omitempty"`
	// Group is every bucket that node serves in the plan, when Buckets
	// is a part of them: the part holding the first reads the node's
	// lake rows of them all (placement.go)
	Group []int `json:"group,omitempty"`
	// changes in a cluster: the start of the ranges whose From is -1 (the
	// buckets another node serves), resolved by that node at DoGet
	Start *tables.Start `json:"start,omitempty"`
	// scan of a primary-key table with a lake: the table as DoGet
	// captures it (lake rows and log records filtered by one state), in
	// one endpoint; Ranges and Files are empty
	State bool `json:"state,omitempty"`
	// changes: the WHERE conditions, bound again on DoGet
	Where []planner.Condition `json:"where,omitempty"`
	// query
	SQL string `json:"sql,omitempty"`
	// Params are a query's bound parameters: an Arrow IPC stream of one
	// row (params.go), none when empty.
	Params []byte `json:"params,omitempty"`
	// Pins are the reads of a query's tables as planned; a table without
	// one (a primary-key table's state, a system table) is read as it is
	// at DoGet.
	Pins []tables.Pin `json:"pins,omitempty"`
	// lookup of a prepared statement
	Handle string `json:"handle,omitempty"`
	// apikey: the one row of CREATE API KEY, the key in it (apikeys.go)
	Row []string `json:"row,omitempty"`
}

func isLakestreamTicket(b []byte) bool {
	return len(b) >= len(ticketMagic) && bytes.HasPrefix(b, ticketFamily)
}

// errTicketExpired is the error of a ticket used after its expiry.
var errTicketExpired = errors.New("ticket expired")

// checkExpiry refuses a ticket expired at now.
func (t *ticket) checkExpiry(now time.Time) error {
	if now.Unix() > t.Exp {
		return fmt.Errorf("%w at %s: plan the query again (GetFlightInfo)", errTicketExpired, time.Unix(t.Exp, 0).UTC().Format(time.RFC3339))
	}
	return nil
}

// encode returns the ticket signed with key.
func (t *ticket) encode(key []byte) ([]byte, error) {
	b, err := json.Marshal(t)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(ticketMagic)+ticketMACBytes+len(b))
	out = append(out, ticketMagic...)
	out = append(out, ticketMAC(key, b)...)
	return append(out, b...), nil
}

func ticketMAC(key, body []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(body)
	return m.Sum(nil)
}

// decodeTicket checks a ticket's MAC under key and reads it. A ticket
// whose MAC does not verify is errForgedTicket (PermissionDenied).
func decodeTicket(key, b []byte) (*ticket, error) {
	if len(b) > maxTicketBytes {
		return nil, fmt.Errorf("%w: ticket of %d bytes, over the %d-byte limit", errInvalid, len(b), maxTicketBytes)
	}
	if !bytes.HasPrefix(b, ticketMagic) {
		return nil, fmt.Errorf("%w: ticket of an older format (%.5q) than this node serves (%s): plan the query again", errInvalid, b, ticketMagic)
	}
	rest := bytes.TrimPrefix(b, ticketMagic)
	if len(rest) < ticketMACBytes || !hmac.Equal(rest[:ticketMACBytes], ticketMAC(key, rest[ticketMACBytes:])) {
		return nil, errForgedTicket
	}
	var t ticket
	if err := json.Unmarshal(rest[ticketMACBytes:], &t); err != nil {
		return nil, fmt.Errorf("%w: malformed ticket: %v", errInvalid, err)
	}
	switch t.Kind {
	case "scan", "query", "changes", "show", "lookup", "apikey":
	default:
		return nil, fmt.Errorf("%w: ticket of unknown kind %q", errInvalid, t.Kind)
	}
	return &t, nil
}
