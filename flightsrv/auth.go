package flightsrv

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"github.com/lakestream/lakestream/auth"
	"github.com/lakestream/lakestream/catalog"
)

// authHeader is the gRPC metadata key of credentials, both ways: a client
// sends "Basic …" or "Bearer …", and a login (and a call whose token is
// past half its life) is answered with "Bearer <token>" in the response
// headers, which Flight clients take up for the calls after.
const authHeader = "authorization"

const handshakeMethod = "/arrow.flight.protocol.FlightService/Handshake"

// authUnary and authStream are the one place where a call gets its
// identity (auth.FromContext): every handler after them runs with one.
// Without Options.Auth every call is auth.Anonymous.
func (s *Server) authUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	ctx, issued, err := s.authenticate(ctx, info.FullMethod)
	if err != nil {
		return nil, err
	}
	if err := authorizeMethod(ctx, info.FullMethod); err != nil { // authorize.go
		return nil, toStatus(err)
	}
	if issued != "" {
		_ = grpc.SetHeader(ctx, metadata.Pairs(authHeader, "Bearer "+issued))
	}
	return h(ctx, req)
}

func (s *Server) authStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	ctx, issued, err := s.authenticate(ss.Context(), info.FullMethod)
	if err != nil {
		return err
	}
	if err := authorizeMethod(ctx, info.FullMethod); err != nil { // authorize.go
		return toStatus(err)
	}
	switch {
	case info.FullMethod == handshakeMethod:
		ctx = context.WithValue(ctx, issuedKey{}, issued) // Handshake sends it
	case issued != "":
		_ = ss.SetHeader(metadata.Pairs(authHeader, "Bearer "+issued))
	}
	return h(srv, &authedStream{ServerStream: ss, ctx: ctx})
}

// authenticate returns ctx with the caller's identity, and a token to
// send back. A Handshake without an authorization header goes on without
// one: its first message may carry the credentials (handshake).
func (s *Server) authenticate(ctx context.Context, method string) (context.Context, string, error) {
	if isInternal(method) && s.opts.Nodes != nil { // authorize.go
		return s.authenticateNode(ctx)
	}
	if s.opts.Auth == nil {
		return auth.WithIdentity(ctx, auth.Anonymous), "", nil
	}
	md, _ := metadata.FromIncomingContext(ctx)
	var header string
	if v := md.Get(authHeader); len(v) > 0 {
		header = v[0]
	}
	if header == "" && method == handshakeMethod {
		return ctx, "", nil
	}
	id, issued, err := s.opts.Auth.Authenticate(ctx, header, peerAddr(ctx))
	if err != nil {
		return ctx, "", toStatus(err)
	}
	if ci, ok := ctx.Value(callInfoKey{}).(*callInfo); ok {
		ci.setUser(id.User) // for the call's log line and the Observer
	}
	return auth.WithIdentity(ctx, id), issued, nil
}

// authenticateNode gives a node-to-node call its node's identity, by the
// certificate of its connection; user credentials count for nothing here:
// no user, not even a superuser, may call these services.
func (s *Server) authenticateNode(ctx context.Context) (context.Context, string, error) {
	ctx, err := s.opts.Nodes(ctx)
	if err != nil {
		return ctx, "", toStatus(err)
	}
	if ci, ok := ctx.Value(callInfoKey{}).(*callInfo); ok {
		id, _ := auth.FromContext(ctx)
		ci.setUser(id.User)
	}
	return ctx, "", nil
}

// issuedKey carries the token the interceptor issued to Handshake.
type issuedKey struct{}

type authedStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (a *authedStream) Context() context.Context { return a.ctx }

// Handshake answers a login. The credentials come in the authorization
// header ("Basic …": what arrow-go's, pyarrow's and the Java client's
// AuthenticateBasicToken send, as do ADBC with username and password and
// the JDBC driver with user and password), which the interceptor already
// checked, or, without one, in the first request's payload as a Flight
// BasicAuth message. The token goes back in the response headers, as
// "Bearer <token>", and as the payload of the one response.
func (w *service) Handshake(stream flight.FlightService_HandshakeServer) error {
	s := w.s
	if s.opts.Auth == nil {
		return drainHandshake(stream, "")
	}
	ctx := stream.Context()
	md, _ := metadata.FromIncomingContext(ctx)
	if v := md.Get(authHeader); len(v) > 0 && v[0] != "" {
		id, ok := auth.FromContext(ctx)
		if !ok || id.Method == auth.MethodNone {
			return toStatus(fmt.Errorf("%w: Handshake without credentials", auth.ErrUnauthenticated))
		}
		// The interceptor logged in (Basic) or checked a token (Bearer:
		// a client checking its session, answered with the same token or
		// a fresh one).
		tok, _ := ctx.Value(issuedKey{}).(string)
		if tok == "" {
			tok = bearerOf(v[0])
		}
		return sendHandshake(stream, tok)
	}
	req, err := stream.Recv()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return toStatus(fmt.Errorf("%w: no credentials: send an authorization header (Basic) or a BasicAuth payload", auth.ErrUnauthenticated))
		}
		return err
	}
	var ba flight.BasicAuth
	if err := proto.Unmarshal(req.GetPayload(), &ba); err != nil || ba.GetUsername() == "" {
		return toStatus(fmt.Errorf("%w: Handshake payload is not a BasicAuth message with a user name", auth.ErrUnauthenticated))
	}
	id, tok, err := s.opts.Auth.Login(ctx, ba.GetUsername(), ba.GetPassword(), peerAddr(ctx))
	if err != nil {
		return toStatus(err)
	}
	if ci, ok := ctx.Value(callInfoKey{}).(*callInfo); ok {
		ci.setUser(id.User)
	}
	return sendHandshake(stream, tok)
}

// sendHandshake sends the token as an explicit header before the one
// response: a response without messages would put the header in the
// trailers, where the C++ client (pyarrow) does not look.
func sendHandshake(stream flight.FlightService_HandshakeServer, tok string) error {
	if err := stream.SendHeader(metadata.Pairs(authHeader, "Bearer "+tok)); err != nil {
		return err
	}
	return drainHandshake(stream, tok)
}

// drainHandshake answers with one response (payload tok) and reads what
// the client sent until it closes its side.
func drainHandshake(stream flight.FlightService_HandshakeServer, tok string) error {
	if err := stream.Send(&flight.HandshakeResponse{Payload: []byte(tok)}); err != nil {
		return err
	}
	for {
		if _, err := stream.Recv(); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

func bearerOf(header string) string {
	if len(header) > 7 {
		return header[7:]
	}
	return ""
}

// authCode maps the auth errors to their codes (toStatus asks it first).
func authCode(err error) (codes.Code, bool) {
	switch {
	case errors.Is(err, auth.ErrUnauthenticated):
		return codes.Unauthenticated, true
	case errors.Is(err, auth.ErrPermissionDenied):
		return codes.PermissionDenied, true
	case errors.Is(err, auth.ErrTooManyFailures):
		return codes.ResourceExhausted, true
	case errors.Is(err, catalog.ErrUserNotFound), errors.Is(err, catalog.ErrRoleNotFound), errors.Is(err, catalog.ErrAPIKeyNotFound):
		return codes.NotFound, true
	case errors.Is(err, catalog.ErrUserExists), errors.Is(err, catalog.ErrRoleExists), errors.Is(err, catalog.ErrAPIKeyExists):
		return codes.AlreadyExists, true
	}
	return codes.OK, false
}

// execUserDDL applies CREATE, ALTER and DROP USER, and DROP API KEY, as
// the caller (CREATE API KEY, run as an update, is refused there: it has
// a result, apikeys.go).
func (s *Server) execUserDDL(ctx context.Context, stmt catalog.Statement) (bool, error) {
	switch stmt.(type) {
	case *catalog.CreateUser, *catalog.AlterUser, *catalog.DropUser, *catalog.CreateAPIKey, *catalog.DropAPIKey:
	default:
		return false, nil
	}
	if s.opts.Auth == nil {
		return true, fmt.Errorf("%w: users need the node's authentication service", errUnsupported)
	}
	id, ok := auth.FromContext(ctx)
	if !ok {
		return true, fmt.Errorf("%w: no identity", auth.ErrUnauthenticated)
	}
	return s.opts.Auth.Exec(ctx, id, stmt)
}
