package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"flag"
	"fmt"
	"os"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
)

// clientFlags are how the client subcommands (sql, status) reach a node
// with TLS or authentication (docs/security.md): --tls (system roots) or
// --tls-ca (a private CA), --user, and the password from
// $LAKESTREAM_PASSWORD, never a flag.
type clientFlags struct {
	tls      bool
	caFile   string
	user     string
	password string
}

func bindClientFlags(fs *flag.FlagSet) *clientFlags {
	c := &clientFlags{}
	fs.BoolVar(&c.tls, "tls", false, "connect with TLS, trusting the system's CAs")
	fs.StringVar(&c.caFile, "tls-ca", "", "connect with TLS, trusting the CAs in this PEM file")
	fs.StringVar(&c.user, "user", "", "log in as this user; the password is $LAKESTREAM_PASSWORD")
	return c
}

// load reads the password and checks the flags.
func (c *clientFlags) load(env func(string) (string, bool)) error {
	if c.user == "" {
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

// basic is the Authorization header value, or "".
func (c *clientFlags) basic() string {
	if c.user == "" {
		return ""
	}
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(c.user+":"+c.password))
}
