package flightsrv

import (
	"context"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lakestream/lakestream/auth"
)

// The node-to-node services' methods (lakestream.*) are a superuser's only
// without Options.Nodes; the others
// are left to their handlers' checks.
func TestAuthorizeMethod(t *testing.T) {
	user := auth.WithIdentity(context.Background(), auth.Identity{User: "alice", UserID: 2, Method: auth.MethodToken})
	admin := auth.WithIdentity(context.Background(), auth.Identity{User: "admin", UserID: 1, Superuser: true, Method: auth.MethodToken})
	fetch := "/lakestream.replication.v1.Replication/Fetch"
	if err := authorizeMethod(user, fetch); status.Code(toStatus(err)) != codes.PermissionDenied {
		t.Errorf("a user's Fetch: %v, want PermissionDenied", err)
	}
	if err := authorizeMethod(context.Background(), fetch); status.Code(toStatus(err)) != codes.PermissionDenied {
		t.Errorf("Fetch without identity: %v, want PermissionDenied", err)
	}
	if err := authorizeMethod(admin, fetch); err != nil {
		t.Errorf("a superuser's Fetch: %v", err)
	}
	if err := authorizeMethod(auth.WithIdentity(context.Background(), auth.Anonymous), fetch); err != nil {
		t.Errorf("Fetch with authentication off: %v", err)
	}
	if err := authorizeMethod(user, "/lakestream.forward.v1.Forward/Write"); status.Code(toStatus(err)) != codes.PermissionDenied {
		t.Errorf("a user's call of another node-to-node service: %v, want PermissionDenied", err)
	}
	if err := authorizeMethod(user, "/arrow.flight.protocol.FlightService/GetFlightInfo"); err != nil {
		t.Errorf("a user's GetFlightInfo: %v", err)
	}
}
