// Package flightlogin logs a Flight client in with the basic-auth
// handshake (docs/security.md) and returns a context carrying the bearer
// token the server answered with.
//
// arrow-go's Client.AuthenticateBasicToken reads the stream's trailer
// after its first message, before the stream has ended, which gRPC does
// not allow (Trailer is valid once Recv has returned an error): the race
// detector reports it against gRPC's transport. Login reads the stream to
// its end first.
package flightlogin

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc/metadata"
)

// Login sends user and password in a Handshake and returns ctx with the
// bearer token the server sent (in its headers or trailers).
func Login(ctx context.Context, c flight.Client, user, password string) (context.Context, error) {
	basic := base64.RawStdEncoding.EncodeToString([]byte(user + ":" + password))
	stream, err := c.Handshake(metadata.AppendToOutgoingContext(ctx, "Authorization", "Basic "+basic))
	if err != nil {
		return ctx, err
	}
	if err := stream.CloseSend(); err != nil {
		return ctx, err
	}
	header, err := stream.Header()
	if err != nil {
		return ctx, err
	}
	for {
		if _, err := stream.Recv(); err != nil {
			if !errors.Is(err, io.EOF) {
				return ctx, err
			}
			break
		}
	}
	for _, token := range metadata.Join(header, stream.Trailer()).Get("authorization") {
		if token != "" {
			return metadata.AppendToOutgoingContext(ctx, "Authorization", token), nil
		}
	}
	return ctx, fmt.Errorf("flight: no authorization header in the handshake's answer")
}
