package flightsrv

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	pb "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/lakestream/lakestream/catalog"
	"github.com/lakestream/lakestream/internal/arrowmsg"
)

// RequestIDKey is the gRPC trailer that carries every call's request id
// back to its client, the same id as the server's log line of the call.
// A failed call carries it a second time in its status details, as a
// google.rpc.RequestInfo (request_id), which ADBC reports among an
// error's details.
const RequestIDKey = "lakestream-request-id"

// Observer is told of every call the server finishes (node turns the
// calls into metrics and the status page's recent errors). Call runs on
// the call's goroutine after the call ends and must be quick.
type Observer interface {
	Call(c Call)
}

// Call is one finished gRPC call.
type Call struct {
	// RPC is the Flight method: "DoGet", "GetFlightInfo", "DoPut", ...
	RPC string
	// Kind is what the call did, where the request says: "query" (a
	// statement the engine runs), "scan" (a plain scan of a table),
	// "changes" (a subscription), "prepared", "update" (DDL, INSERT),
	// "ingest", "metadata", "action"; "" when it does not.
	Kind string
	// Table is "db.table" when the call names one table ("" otherwise),
	// SQL the statement when the call carries one.
	Table, SQL string
	Code       codes.Code
	Message    string // the error's message; "" on success
	Took       time.Duration
	Peer       string // the client's address
	User       string // the authenticated user; "" when anonymous or unauthenticated
	ID         string // the request id (RequestIDKey)
	// Rows and Bytes are what a DoGet sent: the rows and the bytes of the
	// Arrow messages (header and body) of its results.
	Rows, Bytes int64
	End         time.Time
}

// callInfo is what the interceptor learns of a call from its request.
type callInfo struct {
	mu         sync.Mutex
	kind       string
	table, sql string
	user       string // set by the auth interceptor (auth.go)
}

// callInfoKey carries a call's *callInfo in its context, for the auth
// interceptor, which runs inside this one, to record the user.
type callInfoKey struct{}

func (c *callInfo) setUser(user string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.user = user
}

func (c *callInfo) getUser() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.user
}

// set records what the call is; a password in sql (CREATE or ALTER USER)
// is redacted, since sql goes to the log and the status page.
func (c *callInfo) set(kind, table, sql string) {
	sql = catalog.RedactPasswords(sql)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.kind, c.table, c.sql = kind, table, sql
}

func (c *callInfo) get() (kind, table, sql string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.kind, c.table, c.sql
}

// newRequestID is 16 hex digits, random: unique enough to find a call's
// log line, and no counter that restarts with the process.
func newRequestID() string { return fmt.Sprintf("%016x", rand.Uint64()) }

func (s *Server) observeUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	start, id, ci := time.Now(), newRequestID(), &callInfo{}
	_ = grpc.SetTrailer(ctx, metadata.Pairs(RequestIDKey, id))
	s.learn(ctx, ci, req)
	resp, err := h(context.WithValue(ctx, callInfoKey{}, ci), req)
	err = s.finish(ctx, info.FullMethod, id, ci, start, err, 0, 0)
	return resp, err
}

func (s *Server) observeStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	start, id := time.Now(), newRequestID()
	ss.SetTrailer(metadata.Pairs(RequestIDKey, id))
	ci := &callInfo{}
	obs := &observedStream{ServerStream: ss, s: s, ci: ci, ctx: context.WithValue(ss.Context(), callInfoKey{}, ci)}
	err := h(srv, obs)
	return s.finish(ss.Context(), info.FullMethod, id, obs.ci, start, err, obs.rows.Load(), obs.bytes.Load())
}

// finish logs the call if it failed or was slow, tells the Observer, and
// returns err with the request id in its status details.
func (s *Server) finish(ctx context.Context, method, id string, ci *callInfo, start time.Time, err error, rows, bytes int64) error {
	end := time.Now()
	st, _ := status.FromError(err)
	kind, table, sql := ci.get()
	c := Call{RPC: rpcName(method), Kind: kind, Table: table, SQL: sql, Code: st.Code(), Took: end.Sub(start),
		Peer: peerAddr(ctx), User: ci.getUser(), ID: id, Rows: rows, Bytes: bytes, End: end}
	if err != nil {
		c.Message = st.Message()
		if d, derr := st.WithDetails(&errdetails.RequestInfo{RequestId: id}); derr == nil {
			err = d.Err()
		}
	}
	s.logCall(c)
	if s.opts.Observer != nil {
		s.opts.Observer.Call(c)
	}
	return err
}

// logCall writes the log line of a call: every failed call (Error for
// what is the server's fault, Warn for what the client can fix, Info for
// a call its client cancelled), a slow one at Warn (subscriptions, which
// never end by themselves, are never slow), every other one at Debug.
func (s *Server) logCall(c Call) {
	level, msg := callLevel(c, s.opts.SlowQuery)
	if !s.opts.Logger.Enabled(context.Background(), level) {
		return // most calls, at Debug: build nothing
	}
	attrs := []slog.Attr{slog.String("rpc", c.RPC), slog.String("request_id", c.ID)}
	if c.Kind != "" {
		attrs = append(attrs, slog.String("kind", c.Kind))
	}
	if c.Table != "" {
		attrs = append(attrs, slog.String("table", c.Table))
	}
	attrs = append(attrs, slog.String("code", c.Code.String()), slog.Duration("duration", c.Took), slog.String("peer", c.Peer))
	if c.User != "" {
		attrs = append(attrs, slog.String("user", c.User))
	}
	if c.Rows > 0 {
		attrs = append(attrs, slog.Int64("rows", c.Rows), slog.Int64("bytes", c.Bytes))
	}
	if c.SQL != "" {
		attrs = append(attrs, slog.String("sql", shorten(c.SQL, 500)))
	}
	if c.Code != codes.OK {
		attrs = append(attrs, slog.String("error", c.Message))
	}
	s.opts.Logger.LogAttrs(context.Background(), level, msg, attrs...)
}

// callLevel is the level and message of a call's log line.
func callLevel(c Call, slow time.Duration) (slog.Level, string) {
	switch {
	case c.Code == codes.OK && slow > 0 && c.Took >= slow && c.Kind != "changes":
		return slog.LevelWarn, "slow request"
	case c.Code == codes.OK:
		return slog.LevelDebug, "request"
	case c.Code == codes.Canceled:
		return slog.LevelInfo, "request cancelled"
	case serverFault(c.Code):
		return slog.LevelError, "request failed"
	}
	return slog.LevelWarn, "request failed"
}

// serverFault reports the codes that say the server, not the request, is
// at fault.
func serverFault(c codes.Code) bool {
	switch c {
	case codes.Internal, codes.Unknown, codes.DataLoss, codes.Unimplemented:
		return true
	}
	return false
}

func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8Start(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

// rpcName is the method of a full gRPC method name
// ("/arrow.flight.protocol.FlightService/DoGet" is "DoGet").
func rpcName(full string) string {
	if i := strings.LastIndexByte(full, '/'); i >= 0 {
		return full[i+1:]
	}
	return full
}

func peerAddr(ctx context.Context) string {
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		return p.Addr.String()
	}
	return ""
}

// observedStream learns the call from its first request message and
// counts the results a DoGet sends.
type observedStream struct {
	grpc.ServerStream
	s           *Server
	ci          *callInfo
	ctx         context.Context // the stream's, with ci (callInfoKey)
	seen        atomic.Bool
	rows, bytes atomic.Int64 // read once the handler has returned
}

func (o *observedStream) Context() context.Context { return o.ctx }

func (o *observedStream) RecvMsg(m any) error {
	err := o.ServerStream.RecvMsg(m)
	if err == nil && o.seen.CompareAndSwap(false, true) {
		o.s.learn(o.Context(), o.ci, m)
	}
	return err
}

func (o *observedStream) SendMsg(m any) error {
	var fd *flight.FlightData
	switch v := m.(type) {
	case *tracked:
		fd = v.fd // read before gRPC marshals it, which drops it
	case *flight.FlightData:
		fd = v
	}
	if fd != nil {
		o.bytes.Add(int64(len(fd.DataHeader) + len(fd.DataBody)))
		if rows, ok := arrowmsg.RecordBatchRows(fd.DataHeader); ok {
			o.rows.Add(rows)
		}
	}
	return o.ServerStream.SendMsg(m)
}

// learn reads what a call is about from its request: a Flight SQL
// command, a PATH descriptor, a ticket or an action.
func (s *Server) learn(ctx context.Context, ci *callInfo, req any) {
	switch r := req.(type) {
	case *flight.FlightDescriptor:
		s.learnDescriptor(ci, r)
	case *flight.FlightData:
		if r.FlightDescriptor != nil {
			s.learnDescriptor(ci, r.FlightDescriptor)
			if kind, _, _ := ci.get(); kind == "scan" {
				_, table, _ := ci.get()
				ci.set("ingest", table, "")
			}
		}
	case *flight.Ticket:
		s.learnTicket(ctx, ci, r.GetTicket())
	case *flight.Action:
		ci.set("action", "", "")
		if r.GetType() == "CreatePreparedStatement" {
			var a anypb.Any
			var cmd pb.ActionCreatePreparedStatementRequest
			if proto.Unmarshal(r.GetBody(), &a) == nil && a.UnmarshalTo(&cmd) == nil {
				ci.set("prepare", "", cmd.GetQuery())
			}
		}
	}
}

func (s *Server) learnDescriptor(ci *callInfo, d *flight.FlightDescriptor) {
	if d.GetType() == flight.DescriptorPATH {
		if db, name, err := pathTable(d.GetPath()); err == nil {
			ci.set("scan", tableName(db, name), "")
		}
		return
	}
	var a anypb.Any
	if proto.Unmarshal(d.GetCmd(), &a) != nil {
		return
	}
	msg, err := a.UnmarshalNew()
	if err != nil {
		return
	}
	switch cmd := msg.(type) {
	case *pb.CommandStatementQuery:
		ci.set("query", "", cmd.GetQuery())
	case *pb.CommandStatementUpdate:
		ci.set("update", "", cmd.GetQuery())
	case *pb.CommandStatementIngest:
		ci.set("ingest", tableName(cmd.GetSchema(), cmd.GetTable()), "")
	case *pb.CommandPreparedStatementQuery, *pb.CommandPreparedStatementUpdate:
		ci.set("prepared", "", "")
	default:
		ci.set("metadata", "", "")
	}
}

func (s *Server) learnTicket(ctx context.Context, ci *callInfo, raw []byte) {
	if !isLakestreamTicket(raw) {
		ci.set("metadata", "", "")
		return
	}
	tk, err := decodeTicket(s.ticketKey, raw)
	if err != nil {
		return
	}
	table := ""
	if tk.Table != 0 {
		if t, err := s.store.ByID(ctx, tk.Table); err == nil {
			table = t.Name()
		}
	}
	ci.set(tk.Kind, table, tk.SQL)
}

// tableName is "db.table", db defaulting to "default" as the catalog's.
func tableName(db, name string) string {
	if db == "" {
		db = "default"
	}
	return db + "." + name
}

// PreparedOpen is the number of prepared statements open.
func (s *Server) PreparedOpen() int { return s.prepared.count() }

func (ps *preparedStore) count() int {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return len(ps.m)
}
