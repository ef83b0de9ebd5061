package flightsrv

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"

	"github.com/lakestream/lakestream/audit"
	"github.com/lakestream/lakestream/auth"
	"github.com/lakestream/lakestream/catalog"
	"github.com/lakestream/lakestream/planner"
)

// CREATE API KEY is the one DDL statement with a result: the key, shown
// once (docs/security.md, "API keys"). It runs when it is planned
// (GetFlightInfo, as all DDL executed as a query does), and its one row
// travels in the endpoint's ticket, which is signed and bound to the
// caller as every ticket is: a DoGet of it shows the key again and
// creates nothing. Run as an update (ExecuteUpdate) it is refused, since
// the key would be lost.

var apiKeySchema = utf8Schema("name", "user", "key", "valid_until")

// apiKeyInfo creates the key and answers with its row's endpoint.
func (s *Server) apiKeyInfo(ctx context.Context, st *planner.Statement, ck *catalog.CreateAPIKey, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	row, err := s.createAPIKey(ctx, ck)
	s.audit(ctx, audit.KindAPIKey, st.SQL, err)
	if err != nil {
		return nil, err
	}
	ep, err := s.endpoint(ctx, &ticket{Kind: "apikey", Row: row})
	if err != nil {
		return nil, err
	}
	return &flight.FlightInfo{
		Schema:           flight.SerializeSchema(apiKeySchema, s.opts.Mem),
		FlightDescriptor: desc,
		Endpoint:         []*flight.FlightEndpoint{ep},
		TotalRecords:     1,
		TotalBytes:       -1,
	}, nil
}

func (s *Server) createAPIKey(ctx context.Context, ck *catalog.CreateAPIKey) ([]string, error) {
	if s.opts.Auth == nil {
		return nil, fmt.Errorf("%w: API keys need the node's authentication service", errUnsupported)
	}
	id, ok := auth.FromContext(ctx)
	if !ok {
		return nil, fmt.Errorf("%w: no identity", auth.ErrUnauthenticated)
	}
	key, k, err := s.opts.Auth.CreateAPIKey(ctx, id, ck)
	if err != nil {
		return nil, err
	}
	user := ck.User
	if user == "" {
		user = id.User
	}
	return []string{k.Name, user, key, auth.ValidUntil(k.ExpiresAt)}, nil
}

// streamAPIKey answers an "apikey" ticket with its row.
func (s *Server) streamAPIKey(tk *ticket, stream flight.FlightService_DoGetServer) error {
	if len(tk.Row) != len(apiKeySchema.Fields()) {
		return fmt.Errorf("%w: api key ticket of %d columns", errInvalid, len(tk.Row))
	}
	row := make([]any, len(tk.Row))
	for i, v := range tk.Row {
		row[i] = v
	}
	rec, err := buildRecord(s, apiKeySchema, [][]any{row})
	if err != nil {
		return err
	}
	defer rec.Release()
	w := newRecordWriter(stream, ipc.WithSchema(apiKeySchema), ipc.WithAllocator(s.opts.Mem))
	defer w.Close()
	if err := w.Write(rec); err != nil {
		return err
	}
	return w.Close()
}

// showAPIKeys answers SHOW API KEYS: the caller's keys, or every key for
// a superuser; never the keys themselves, which no node holds.
func (s *Server) showAPIKeys(ctx context.Context) ([][]any, error) {
	if s.opts.Auth == nil {
		return nil, nil
	}
	id, ok := auth.FromContext(ctx)
	if !ok {
		return nil, fmt.Errorf("%w: no identity", auth.ErrUnauthenticated)
	}
	var rows [][]any
	for _, r := range s.opts.Auth.ShowAPIKeys(id) {
		row := make([]any, len(r))
		for i, v := range r {
			row[i] = v
		}
		rows = append(rows, row)
	}
	return rows, nil
}
