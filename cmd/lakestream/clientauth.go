package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"flag"
	"fmt"
	"os"

	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
)

// clientFlags are how the client subcommands (sql, status) reach a node
// with TLS or authentication (docs/security.md): --tls (system roots) or
// --tls-ca (a private CA), --user, and the password from
// $LAKESTREAM_PASSWORD, never a flag; or, without --user, an API key from
// $LAKESTREAM_API_KEY.
type clientFlags struct {
	tls      bool
	caFile   string
	user     string
	password string
	apiKey   string
}

func bindClientFlags(fs *flag.FlagSet) *clientFlags {
	c := &clientFlags{}
	fs.BoolVar(&c.tls, "tls", false, "connect with TLS, trusting the system's CAs")
	fs.StringVar(&c.caFile, "tls-ca", "", "connect with TLS, trusting the CAs in this PEM file")
	fs.StringVar(&c.user, "user", "", "log in as this user; the password is $LAKESTREAM_PASSWORD (without --user, an API key in $LAKESTREAM_API_KEY is sent)")
	return c
}

// load reads the password, or the API key, and checks the flags.
func (c *clientFlags) load(env func(string) (string, bool)) error {
	if c.user == "" {
		c.apiKey, _ = env("LAKESTREAM_API_KEY")
		return nil
	}
	p, ok := env("LAKESTREAM_PASSWORD")
	if !ok || p == "" {
		return fmt.Errorf("--user %s: set its password in $LAKESTREAM_PASSWORD", c.user)
	}
	c.password = p
	return nil
}

func (c *clientFlags) useTLS() bool { return c.tls || c.caFile != "" }

func (c *clientFlags) tlsConfig() (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if c.caFile != "" {
		pem, err := os.ReadFile(c.caFile)
		if err != nil {
			return nil, fmt.Errorf("--tls-ca: %w", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--tls-ca %s: no PEM certificate in it", c.caFile)
		}
	}
	return cfg, nil
}

func (c *clientFlags) grpcCreds() (grpc.DialOption, error) {
	if !c.useTLS() {
		return grpc.WithTransportCredentials(insecure.NewCredentials()), nil
	}
	cfg, err := c.tlsConfig()
	if err != nil {
		return nil, err
	}
	return grpc.WithTransportCredentials(credentials.NewTLS(cfg)), nil
}

// authorization is the Authorization header value, or "".
func (c *clientFlags) authorization() string {
	switch {
	case c.user != "":
		return "Basic " + base64.StdEncoding.EncodeToString([]byte(c.user+":"+c.password))
	case c.apiKey != "":
		return "Bearer " + c.apiKey
	}
	return ""
}

// authenticate returns ctx with the credentials of cl's calls: the token
// of a login as --user, or the API key.
func (c *clientFlags) authenticate(ctx context.Context, cl *flightsql.Client) (context.Context, error) {
	switch {
	case c.user != "":
		ctx, err := cl.Client.AuthenticateBasicToken(ctx, c.user, c.password)
		if err != nil {
			return ctx, fmt.Errorf("log in as %s: %w", c.user, err)
		}
		return ctx, nil
	case c.apiKey != "":
		return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+c.apiKey), nil
	}
	return ctx, nil
}
