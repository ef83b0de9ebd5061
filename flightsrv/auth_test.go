package flightsrv_test

import (
	"context"
	"encoding/base64"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"github.com/lakestream/lakestream/auth"
	"github.com/lakestream/lakestream/flightsrv"
	"github.com/lakestream/lakestream/internal/flightlogin"
)

type callLog struct {
	mu    sync.Mutex
	calls []flightsrv.Call
}

func (l *callLog) Call(c flightsrv.Call) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, c)
}

// startAuthServer serves ts's store again with authentication required,
// an admin whose password is "admin-password", and the calls recorded.
func startAuthServer(t *testing.T) (*testServer, *flightsql.Client, *callLog) {
	ts := startServer(t, serverConfig{})
	svc, err := auth.NewService(auth.Config{Required: true, Users: ts.cat, Key: make([]byte, auth.KeyBytes),
		Hash: auth.HashParams{Memory: 64, Time: 1, Threads: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Bootstrap(context.Background(), "admin-password"); err != nil {
		t.Fatal(err)
	}
	log := &callLog{}
	_, cl, _ := serve(t, ts.store, flightsrv.Options{Auth: svc, Observer: log}, ts.mem)
	return ts, cl, log
}

// Every kind of call without credentials is Unauthenticated, never
// Internal, and never reaches its handler.
func TestNoCredentialsUnauthenticated(t *testing.T) {
	ts, cl, _ := startAuthServer(t)
	ts.mustExec("CREATE TABLE t (id BIGINT)") // through the server without authentication
	ctx := testCtx(t)
	_, err := cl.Execute(ctx, "SELECT * FROM t")
	expectCode(t, err, codes.Unauthenticated, "no credentials")
	_, err = cl.GetTables(ctx, &flightsql.GetTablesOpts{})
	expectCode(t, err, codes.Unauthenticated)
	_, err = cl.Prepare(ctx, "SELECT * FROM t")
	expectCode(t, err, codes.Unauthenticated)
	rdr, err := cl.DoGet(ctx, &flight.Ticket{Ticket: []byte("anything")})
	if err == nil {
		_, err = rdr.Read()
	}
	expectCode(t, err, codes.Unauthenticated)
	lf, err := cl.Client.ListFlights(ctx, &flight.Criteria{})
	if err == nil {
		_, err = lf.Recv()
	}
	expectCode(t, err, codes.Unauthenticated)
	_, err = cl.Client.GetFlightInfo(ctx, &flight.FlightDescriptor{Type: flight.DescriptorPATH, Path: []string{"t"}})
	expectCode(t, err, codes.Unauthenticated)
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	b := array.NewRecordBuilder(ts.mem, schema)
	b.Field(0).(*array.Int64Builder).Append(1)
	rec := b.NewRecordBatch()
	b.Release()
	defer rec.Release()
	rr, _ := array.NewRecordReader(schema, []arrow.RecordBatch{rec})
	defer rr.Release()
	_, err = cl.ExecuteIngest(ctx, rr, &flightsql.ExecuteIngestOpts{Table: "t", TableDefinitionOptions: &flightsql.TableDefinitionOptions{
		IfNotExist: flightsql.TableDefinitionOptionsTableNotExistOptionFail, IfExists: flightsql.TableDefinitionOptionsTableExistsOptionAppend}})
	expectCode(t, err, codes.Unauthenticated)
	bad := metadata.AppendToOutgoingContext(ctx, "authorization", "Digest abc")
	_, err = cl.Execute(bad, "SELECT * FROM t")
	expectCode(t, err, codes.Unauthenticated, "Basic or Bearer")
	bad = metadata.AppendToOutgoingContext(ctx, "authorization", "Basic !!!")
	_, err = cl.Execute(bad, "SELECT * FROM t")
	expectCode(t, err, codes.Unauthenticated, "malformed")
	if got := ts.count("t"); got != 0 {
		t.Fatalf("%d rows in t: an unauthenticated ingest was applied", got)
	}
}

// The Handshake: Basic in the header (what the Flight clients send), a
// BasicAuth payload, and neither.
func TestHandshake(t *testing.T) {
	_, cl, _ := startAuthServer(t)
	ctx := testCtx(t)

	// Neither: Unauthenticated.
	hs, err := cl.Client.Handshake(ctx)
	if err == nil {
		_ = hs.CloseSend()
		_, err = hs.Recv()
	}
	expectCode(t, err, codes.Unauthenticated)

	// A BasicAuth payload, wrong and right.
	for pw, want := range map[string]codes.Code{"wrong-password": codes.Unauthenticated, "admin-password": codes.OK} {
		hs, err := cl.Client.Handshake(ctx)
		if err != nil {
			t.Fatal(err)
		}
		payload, _ := proto.Marshal(&flight.BasicAuth{Username: "admin", Password: pw})
		if err := hs.Send(&flight.HandshakeRequest{Payload: payload}); err != nil {
			t.Fatal(err)
		}
		_ = hs.CloseSend()
		resp, err := hs.Recv()
		if want != codes.OK {
			expectCode(t, err, want)
			continue
		}
		if err != nil {
			t.Fatalf("Handshake with a BasicAuth payload: %v", err)
		}
		hdr, _ := hs.Header()
		tok := string(resp.GetPayload())
		if v := hdr.Get("authorization"); len(v) != 1 || v[0] != "Bearer "+tok || !strings.HasPrefix(tok, "lst1_") {
			t.Fatalf("header %q, payload %q", v, tok)
		}
		authed := metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+tok)
		if _, err := cl.Execute(authed, "SHOW TABLES"); err != nil {
			t.Fatalf("call with the payload login's token: %v", err)
		}
	}

	// Basic in the header, padded as the Java and C++ clients send it
	// (arrow-go's AuthenticateBasicToken sends it unpadded).
	basic := metadata.AppendToOutgoingContext(ctx, "authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte("admin:admin-password")))
	hs, err = cl.Client.Handshake(basic)
	if err != nil {
		t.Fatal(err)
	}
	_ = hs.CloseSend()
	if _, err := hs.Recv(); err != nil {
		t.Fatalf("Handshake with a Basic header: %v", err)
	}
	hdr, _ := hs.Header()
	if v := hdr.Get("authorization"); len(v) != 1 || !strings.HasPrefix(v[0], "Bearer lst1_") {
		t.Fatalf("Handshake response authorization header %q: want exactly one bearer token", v)
	}
}

// A password never reaches the log or the Observer (the status page).
func TestUserDDLRedacted(t *testing.T) {
	_, cl, log := startAuthServer(t)
	ctx, err := flightlogin.Login(testCtx(t), cl.Client, "admin", "admin-password")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cl.ExecuteUpdate(ctx, "CREATE USER bob WITH PASSWORD 'bob-secret-pw'"); err != nil {
		t.Fatal(err)
	}
	_, err = cl.ExecuteUpdate(ctx, "CREATE USER bob WITH PASSWORD 'bob-secret-pw'")
	expectCode(t, err, codes.AlreadyExists)
	_, err = cl.ExecuteUpdate(ctx, "CREATE USER carol WITH PASSWORD 'short'")
	expectCode(t, err, codes.InvalidArgument, "at least 8")
	// A call is recorded once it ends, which may be after its answer reached
	// the client: wait for the three.
	redacted := func() int {
		log.mu.Lock()
		defer log.mu.Unlock()
		n := 0
		for _, c := range log.calls {
			if strings.Contains(c.SQL, "PASSWORD '***'") {
				n++
			}
		}
		return n
	}
	waitFor(t, func() bool { return redacted() >= 3 })
	log.mu.Lock()
	defer log.mu.Unlock()
	seen := 0
	for _, c := range log.calls {
		if c.RPC != "Handshake" && c.User != "admin" {
			t.Errorf("call %s: user %q, want admin", c.RPC, c.User)
		}
		if strings.Contains(c.SQL, "secret") || strings.Contains(c.SQL, "short") || strings.Contains(c.Message, "secret") {
			t.Errorf("call %s shows the password: sql %q, message %q", c.RPC, c.SQL, c.Message)
		}
		if strings.Contains(c.SQL, "PASSWORD '***'") {
			seen++
		}
	}
	if seen < 3 {
		t.Errorf("%d calls with the redacted statement, want 3", seen)
	}
}
