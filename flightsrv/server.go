package flightsrv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lakestream/lakestream/audit"
	"github.com/lakestream/lakestream/auth"
	"github.com/lakestream/lakestream/catalog"
	"github.com/lakestream/lakestream/internal/scan"
	"github.com/lakestream/lakestream/planner"
	"github.com/lakestream/lakestream/tables"
)

// QueryEngine runs the queries that are not plain scans (planner/duck).
type QueryEngine interface {
	Query(ctx context.Context, sql string, args ...any) (scan.RecordStream, *arrow.Schema, error)
	Describe(ctx context.Context, sql string) (result, params *arrow.Schema, err error)
	// DescribeBound is the result schema of sql with args bound, which
	// may depend on the arguments' types (SELECT ? AS x).
	DescribeBound(ctx context.Context, sql string, args ...any) (*arrow.Schema, error)
}

// Options configure the service. Zero fields take their defaults.
type Options struct {
	// MaxMessageBytes is the largest gRPC message accepted or sent.
	// Default 256 MiB (gRPC's own default is 4 MiB).
	MaxMessageBytes int
	// MaxBatchUncompressedBytes bounds what one incoming record batch may
	// claim to decompress to. Default 512 MiB.
	MaxBatchUncompressedBytes int64
	// MaxEndpoints caps the endpoints of a scan; buckets are grouped to fit.
	// Default 16.
	MaxEndpoints int
	// PreparedTTL expires prepared statements idle this long. Default 10m.
	PreparedTTL time.Duration
	// TicketTTL is how long the tickets of a FlightInfo may be used:
	// DoGet refuses one older with FailedPrecondition. Default 1h: a
	// distributed reader plans once and reads every endpoint within it,
	// and the lake snapshots a ticket pins are kept about as long
	// (docs/flight.md, "Tickets").
	TicketTTL time.Duration
	// StreamMemory is the memory budget of all DoGet result streams
	// (scans, queries, subscriptions) together: each stream is charged its
	// readers' read-ahead and its window (its results from when they are
	// produced until gRPC has written them to the connection), and waits
	// to start until they fit (pipe.go). Default 1 GiB.
	StreamMemory int64
	// StreamWindow is how many bytes of messages one stream may have
	// produced and not yet had written to its connection before it waits
	// for its client. A larger message goes alone. Default 4 MiB.
	StreamWindow int64
	// StallTimeout cuts off, with ResourceExhausted, a stream whose client
	// has read nothing for this long while results wait, and a stream that
	// has waited this long for room in StreamMemory. Default 5m.
	StallTimeout time.Duration
	// SlowQuery logs, at Warn, every call that takes this long or longer
	// (subscriptions excepted); 0 or negative logs none. Default 0.
	SlowQuery time.Duration
	// Observer is told of every finished call (observe.go). Default: none.
	Observer Observer
	// Auth authenticates every call (auth.go). Default: none, every call
	// runs as auth.Anonymous and user DDL is refused.
	Auth *auth.Service
	// Placement says where a cluster's buckets are read (placement.go):
	// plans locate their endpoints, and DoGet refuses buckets this node
	// does not hold. Default nil: a single node.
	Placement Placement
	// TicketKey signs the tickets. Default: the authentication service's
	// key, else a random key of the process. A cluster's nodes share one
	// (docs/security.md, "Signed tickets").
	TicketKey []byte
	// Nodes authenticates the calls of the node-to-node services (every
	// service named lakestream.*, such as the cluster's replication) in
	// place of Auth: it returns ctx with the calling node's identity, or
	// an auth error (authorize.go, authenticateInternal). Default nil:
	// such calls are authenticated as any other and need a superuser.
	Nodes func(context.Context) (context.Context, error)
	// Limits caps what one client holds at once (limits.go); each zero
	// field takes its default.
	Limits Limits
	// Audit records every DDL statement, with its caller, peer and
	// outcome (audit.go). Default nil: none.
	Audit *audit.Log
	// Version is reported by GetSqlInfo.
	Version string
	Mem     memory.Allocator
	Logger  *slog.Logger
}

func (o *Options) ensureDefaults() {
	if o.MaxMessageBytes == 0 {
		o.MaxMessageBytes = 256 << 20
	}
	if o.MaxBatchUncompressedBytes == 0 {
		o.MaxBatchUncompressedBytes = 512 << 20
	}
	if o.MaxEndpoints == 0 {
		o.MaxEndpoints = 16
	}
	if o.PreparedTTL == 0 {
		o.PreparedTTL = 10 * time.Minute
	}
	if o.TicketTTL == 0 {
		o.TicketTTL = time.Hour
	}
	if o.StreamMemory == 0 {
		o.StreamMemory = 1 << 30
	}
	if o.StreamWindow == 0 {
		o.StreamWindow = 4 << 20
	}
	if o.StallTimeout == 0 {
		o.StallTimeout = 5 * time.Minute
	}
	o.Limits.ensureDefaults()
	if o.Version == "" {
		o.Version = "dev"
	}
	if o.Mem == nil {
		o.Mem = memory.DefaultAllocator
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// validate reports every problem with the options at once.
func (o *Options) validate() error {
	var errs []error
	if o.StreamMemory < 0 {
		errs = append(errs, fmt.Errorf("stream memory %d: want a positive size", o.StreamMemory))
	}
	if o.StreamWindow < grpcWriteQuota || o.StreamWindow > o.StreamMemory {
		errs = append(errs, fmt.Errorf("stream window %s: want at least %s (gRPC's write quota) and at most the stream memory, %s",
			fmtBytes(o.StreamWindow), fmtBytes(grpcWriteQuota), fmtBytes(o.StreamMemory)))
	}
	if o.TicketTTL < 0 {
		errs = append(errs, fmt.Errorf("ticket TTL %s: want a positive duration", o.TicketTTL))
	}
	if o.StallTimeout < 0 {
		errs = append(errs, fmt.Errorf("stall timeout %s: want a positive duration", o.StallTimeout))
	}
	return errors.Join(errs...)
}

// Server implements the Flight SQL handlers.
type Server struct {
	flightsql.BaseServer
	opts     Options
	store    *tables.Store
	engine   QueryEngine // nil: only DDL and plain scans
	rowwise  rowWiser    // the engine's, when it has one: queries split (queryplan.go)
	prepared *preparedStore
	budget   *budget
	limits   *limiter
	streams  struct {
		active, waiting  atomic.Int64
		stalled, refused atomic.Int64
		produced         atomic.Int64 // bytes of results produced and not yet written
	}
	subs subscriptions
	// ticketKey signs the tickets (tickets.go): derived from the node's
	// token key, or random for a server without Options.Auth.
	ticketKey []byte
	stopping  chan struct{} // closed by Shutdown
	stopOnce  sync.Once
}

// New returns a server over store; engine may be nil.
func New(store *tables.Store, engine QueryEngine, opts Options) (*Server, error) {
	opts.ensureDefaults()
	if err := opts.validate(); err != nil {
		return nil, fmt.Errorf("flight options: %w", err)
	}
	s := &Server{opts: opts, store: store, engine: engine, prepared: newPreparedStore(opts.PreparedTTL),
		budget: newBudget(opts.StreamMemory), limits: newLimiter(opts.Limits), stopping: make(chan struct{}), ticketKey: ticketKeyOf(opts.Auth, opts.TicketKey)}
	if engine != nil {
		s.engine = limitedEngine{QueryEngine: engine, l: s.limits} // limits.go
	}
	if rw, ok := engine.(rowWiser); ok {
		s.rowwise = rw
	}
	if err := s.registerSqlInfo(); err != nil {
		return nil, err
	}
	return s, nil
}

// Expire drops idle prepared statements until ctx ends.
func (s *Server) Expire(ctx context.Context) {
	t := time.NewTicker(s.opts.PreparedTTL / 4)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			if n := s.prepared.expire(now); n > 0 {
				s.opts.Logger.Info("expired idle prepared statements", "count", n)
			}
		}
	}
}

// StreamStats is the state of the DoGet result streams and of their
// memory budget.
type StreamStats struct {
	Budget   int64 // Options.StreamMemory
	Used     int64 // bytes charged to the budget now: streams' read-ahead and windows, and what gRPC holds of streams that ended
	Peak     int64 // the most bytes charged at once since the server started
	Produced int64 // bytes of results produced and not yet written to their connections
	Streams  int64 // result streams being served
	Waiting  int64 // of them, those waiting for their client or for the budget
	Stalled  int64 // streams cut off since start: their client read nothing for the stall timeout
	Refused  int64 // streams that gave up since start, after waiting the stall timeout for the budget
}

// StreamStats reports the result streams and their memory budget.
func (s *Server) StreamStats() StreamStats {
	used, peak, _ := s.budget.stats()
	return StreamStats{
		Budget: s.opts.StreamMemory, Used: used, Peak: peak, Produced: s.streams.produced.Load(),
		Streams: s.streams.active.Load(), Waiting: s.streams.waiting.Load(),
		Stalled: s.streams.stalled.Load(), Refused: s.streams.refused.Load(),
	}
}

// GRPCServer returns a gRPC server with the Flight service registered, its
// message limits raised, and panics in handlers turned into errors. Its
// codec and stats handler let result streams see when gRPC has written
// their messages (window.go).
//
// extra are further options: the node's TLS credentials.
func (s *Server) GRPCServer(extra ...grpc.ServerOption) *grpc.Server {
	g := grpc.NewServer(append([]grpc.ServerOption{
		grpc.MaxRecvMsgSize(s.opts.MaxMessageBytes),
		grpc.MaxSendMsgSize(s.opts.MaxMessageBytes),
		grpc.ForceServerCodecV2(newCodec()),
		grpc.StatsHandler(connTracker{}),
		grpc.ChainUnaryInterceptor(s.observeUnary, s.authUnary, s.recoverUnary),
		grpc.ChainStreamInterceptor(s.observeStream, s.authStream, s.recoverStream),
		// Streams run on workers whose goroutines are kept, not on a
		// new goroutine each: a prepared lookup is three streams, and a
		// new goroutine's stack grew on each (runtime.newstack and
		// copystack were a tenth of the server's CPU in the pk
		// workload's point lookups, docs/benchmarks.md). gRPC still
		// starts a goroutine when every worker is busy.
		grpc.NumStreamWorkers(uint32(streamWorkers())),
	}, extra...)...,
	)
	flight.RegisterFlightServiceServer(g, &service{FlightServer: flightsql.NewFlightServerWithAllocator(s, s.opts.Mem), s: s})
	return g
}

// streamWorkers is the gRPC server's stream workers: a few per core, so
// that the streams of concurrent clients seldom find them all busy.
func streamWorkers() int { return 4 * runtime.GOMAXPROCS(0) }

// A panic in a handler is a bug; it must not take the node down with every
// other client's work. It is logged with its stack and returned as Internal.
func (s *Server) recoverUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (resp any, err error) {
	defer s.recoverPanic(info.FullMethod, &err)
	resp, err = h(ctx, req)
	return resp, toStatus(err)
}

func (s *Server) recoverStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) (err error) {
	defer s.recoverPanic(info.FullMethod, &err)
	return toStatus(h(srv, ss))
}

func (s *Server) recoverPanic(method string, err *error) {
	if r := recover(); r != nil {
		s.opts.Logger.Error("panic in handler", "method", method, "panic", r, "stack", string(debug.Stack()))
		*err = status.Error(codes.Internal, fmt.Sprintf("internal error in %s: %v", method, r))
	}
}

// service routes Lakestream's own tickets and path descriptors, and hands
// everything else to the Flight SQL router.
type service struct {
	flight.FlightServer
	s *Server
}

func (w *service) DoGet(tkt *flight.Ticket, stream flight.FlightService_DoGetServer) error {
	if isLakestreamTicket(tkt.GetTicket()) {
		return w.s.doGet(tkt.GetTicket(), stream)
	}
	return w.FlightServer.DoGet(tkt, stream)
}

func (w *service) DoPut(stream flight.FlightService_DoPutServer) error {
	cs := newCheckedStream(stream, w.s.opts)
	first, err := cs.peek()
	if errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: empty DoPut stream: no descriptor and no schema", errInvalid)
	}
	if err != nil {
		return err
	}
	// The Flight SQL router reads the command from the descriptor of the
	// first message and fails with a nil dereference without one.
	d := first.GetFlightDescriptor()
	switch {
	case d == nil:
		return fmt.Errorf("%w: DoPut without a flight descriptor: the first message must carry a PATH descriptor ([table] or [database, table]) or a Flight SQL command", errInvalid)
	case d.GetType() == flight.DescriptorPATH:
		return w.s.doPutPath(cs, d.GetPath())
	case d.GetType() != flight.DescriptorCMD || len(d.GetCmd()) == 0:
		return fmt.Errorf("%w: DoPut descriptor of type %s without a command: want a PATH descriptor or a Flight SQL command", errInvalid, d.GetType())
	}
	return w.FlightServer.DoPut(cs)
}

// GetFlightInfo answers a PATH descriptor ([table] or [database, table])
// with a scan of the whole table, for plain Flight clients; commands go to
// the Flight SQL router.
func (w *service) GetFlightInfo(ctx context.Context, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	if desc.GetType() != flight.DescriptorPATH {
		return w.FlightServer.GetFlightInfo(ctx, desc)
	}
	db, name, err := pathTable(desc.GetPath())
	if err != nil {
		return nil, toStatus(err)
	}
	info, err := w.s.scanInfo(ctx, &planner.PlainScan{DB: db, Table: name}, desc)
	return info, toStatus(err)
}

// GetSchema answers a PATH descriptor with the table's schema (the one its
// scan returns), for plain Flight clients; commands go to the Flight SQL
// router.
func (w *service) GetSchema(ctx context.Context, desc *flight.FlightDescriptor) (*flight.SchemaResult, error) {
	if desc.GetType() != flight.DescriptorPATH {
		return w.FlightServer.GetSchema(ctx, desc)
	}
	db, name, err := pathTable(desc.GetPath())
	if err != nil {
		return nil, toStatus(err)
	}
	r, err := w.s.resolveScan(ctx, &planner.PlainScan{DB: db, Table: name})
	if err != nil {
		return nil, toStatus(err)
	}
	return &flight.SchemaResult{Schema: flight.SerializeSchema(r.schema, w.s.opts.Mem)}, nil
}

// ListFlights lists every table as a PATH descriptor [database, table]
// with its schema; GetFlightInfo of the descriptor plans its scan. Criteria
// are not supported: a listing with one is refused rather than answered
// unfiltered.
func (w *service) ListFlights(c *flight.Criteria, stream flight.FlightService_ListFlightsServer) error {
	if n := len(c.GetExpression()); n > 0 {
		return toStatus(fmt.Errorf("%w: ListFlights criteria are not supported (got %d bytes): list without criteria", errInvalid, n))
	}
	defs, err := w.s.store.Catalog().AllTables(stream.Context())
	if err != nil {
		return toStatus(err)
	}
	for _, def := range defs {
		if !w.s.visible(stream.Context(), catalog.TableObject(def)) { // authorize.go
			continue
		}
		err := stream.Send(&flight.FlightInfo{
			Schema:           flight.SerializeSchema(tableSchema(def), w.s.opts.Mem),
			FlightDescriptor: &flight.FlightDescriptor{Type: flight.DescriptorPATH, Path: []string{def.DB, def.Name}},
			TotalRecords:     -1,
			TotalBytes:       -1,
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// pathTable reads a descriptor path: [table] or [database, table].
func pathTable(path []string) (db, name string, err error) {
	switch len(path) {
	case 1:
		return "", path[0], nil
	case 2:
		return path[0], path[1], nil
	}
	return "", "", fmt.Errorf("%w: descriptor path %q: want [table] or [database, table]", errInvalid, path)
}

// Shutdown ends the unbounded streams (subscriptions) with Unavailable, so a
// graceful stop of the gRPC server does not wait for them: their clients
// resume from the offsets they saw, on this node once it is back.
func (s *Server) Shutdown() { s.stopOnce.Do(func() { close(s.stopping) }) }
