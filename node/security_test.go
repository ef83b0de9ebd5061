package node

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/lakestream/lakestream/auth"
	"github.com/lakestream/lakestream/internal/flightlogin"
	"github.com/lakestream/lakestream/internal/testca"
)

// cheapHash keeps the logins of these tests fast.
var cheapHash = auth.HashParams{Memory: 64, Time: 1, Threads: 1}

// testClock is a clock the tests move.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func secureConfig(t *testing.T, sec SecurityConfig) Config {
	sec.hash = cheapHash
	return Config{DataDir: t.TempDir(), Listen: "127.0.0.1:0", HTTP: "127.0.0.1:0", Logger: slog.New(slog.DiscardHandler), Security: sec}
}

// query runs sql in ctx and returns the first column's first value of
// each batch, summed (0 for a statement without rows).
func query(ctx context.Context, cl *flightsql.Client, sql string) (int64, error) {
	info, err := cl.Execute(ctx, sql)
	if err != nil {
		return 0, err
	}
	var got int64
	for _, ep := range info.Endpoint {
		rdr, err := cl.DoGet(ctx, ep.Ticket)
		if err != nil {
			return 0, err
		}
		for rdr.Next() {
			if c, ok := rdr.RecordBatch().Column(0).(*array.Int64); ok {
				got += c.Value(0)
			}
		}
		rdr.Release()
	}
	return got, nil
}

func wantCode(t *testing.T, what string, err error, code codes.Code) {
	t.Helper()
	if status.Code(err) != code {
		t.Fatalf("%s: %v, want %s", what, err, code)
	}
}

func login(t *testing.T, cl *flightsql.Client, user, password string) context.Context {
	t.Helper()
	ctx, err := flightlogin.Login(context.Background(), cl.Client, user, password)
	if err != nil {
		t.Fatalf("login %s: %v", user, err)
	}
	return ctx
}

// Authentication on Flight SQL: the handshake, bearer tokens, a Basic
// header on an ordinary call, wrong passwords, expiry, and revocation by
// ALTER USER and DROP USER.
func TestFlightAuthentication(t *testing.T) {
	clock := &testClock{t: time.Now()}
	cfg := secureConfig(t, SecurityConfig{Auth: AuthOn, AdminPassword: "admin-password", now: clock.now})
	n, cancel, done := startNodeWith(t, cfg)
	defer func() { cancel(); <-done }()
	cl := client(t, n.Addr())

	_, err := query(context.Background(), cl, "SELECT 1::BIGINT")
	wantCode(t, "no credentials", err, codes.Unauthenticated)
	_, err = flightlogin.Login(context.Background(), cl.Client, "admin", "wrong-password")
	wantCode(t, "wrong password", err, codes.Unauthenticated)
	bad := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer lst1_forged")
	_, err = query(bad, cl, "SELECT 1::BIGINT")
	wantCode(t, "forged token", err, codes.Unauthenticated)

	admin := login(t, cl, "admin", "admin-password")
	if v, err := query(admin, cl, "SELECT 41::BIGINT + 1"); err != nil || v != 42 {
		t.Fatalf("query as admin = %d, %v", v, err)
	}

	// A Basic header on an ordinary call logs in too, and the response
	// carries a bearer token.
	basic := metadata.AppendToOutgoingContext(context.Background(), "authorization",
		"Basic "+base64.StdEncoding.EncodeToString([]byte("admin:admin-password")))
	var hdr metadata.MD
	if _, err := cl.Execute(basic, "SELECT 1::BIGINT", grpc.Header(&hdr)); err != nil {
		t.Fatalf("Basic on GetFlightInfo: %v", err)
	}
	if v := hdr.Get("authorization"); len(v) != 1 || !strings.HasPrefix(v[0], "Bearer lst1_") {
		t.Fatalf("response authorization header %q", v)
	}

	if _, err := query(admin, cl, "CREATE USER alice WITH PASSWORD 'alice-password'"); err != nil {
		t.Fatal(err)
	}
	alice := login(t, cl, "alice", "alice-password")
	if v, err := query(alice, cl, "SELECT 7::BIGINT"); err != nil || v != 7 {
		t.Fatalf("query as alice = %d, %v", v, err)
	}
	_, err = query(alice, cl, "CREATE USER mallory WITH PASSWORD 'mallory-password'")
	wantCode(t, "CREATE USER by alice", err, codes.PermissionDenied)
	_, err = query(admin, cl, "CREATE USER alice WITH PASSWORD 'alice-password'")
	wantCode(t, "CREATE USER twice", err, codes.AlreadyExists)
	_, err = query(admin, cl, "ALTER USER nobody WITH PASSWORD 'nobody-password'")
	wantCode(t, "ALTER USER of nobody", err, codes.NotFound)

	// Revocation: a password change, then DROP USER.
	if _, err := query(admin, cl, "ALTER USER alice WITH PASSWORD 'alice-password-2'"); err != nil {
		t.Fatal(err)
	}
	_, err = query(alice, cl, "SELECT 7::BIGINT")
	wantCode(t, "alice's token after ALTER USER", err, codes.Unauthenticated)
	alice = login(t, cl, "alice", "alice-password-2")
	if _, err := query(admin, cl, "DROP USER alice"); err != nil {
		t.Fatal(err)
	}
	_, err = query(alice, cl, "SELECT 7::BIGINT")
	wantCode(t, "alice's token after DROP USER", err, codes.Unauthenticated)

	// Expiry: the default lifetime is 8h.
	clock.add(8*time.Hour + time.Second)
	_, err = query(admin, cl, "SELECT 1::BIGINT")
	wantCode(t, "expired token", err, codes.Unauthenticated)

	// The status page never shows a password.
	code, body := get(t, n, "/healthz")
	if code != http.StatusOK {
		t.Fatalf("/healthz without credentials: %d %s", code, body)
	}
	code, _ = get(t, n, "/status.json")
	if code != http.StatusUnauthorized {
		t.Fatalf("/status.json without credentials: %d, want 401", code)
	}
	req, _ := http.NewRequest("GET", "http://"+n.HTTPAddr()+"/metrics", nil)
	req.SetBasicAuth("admin", "admin-password")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics with Basic credentials: %d", resp.StatusCode)
	}
}

// Failed logins are limited per user and per peer: the eleventh in a row
// is refused before its password is checked.
func TestFlightLoginRateLimit(t *testing.T) {
	n, cancel, done := startNodeWith(t, secureConfig(t, SecurityConfig{Auth: AuthOn, AdminPassword: "admin-password"}))
	defer func() { cancel(); <-done }()
	cl := client(t, n.Addr())
	for i := range 10 {
		_, err := flightlogin.Login(context.Background(), cl.Client, "admin", "guess")
		wantCode(t, "failed login", err, codes.Unauthenticated)
		_ = i
	}
	_, err := flightlogin.Login(context.Background(), cl.Client, "admin", "admin-password")
	wantCode(t, "login after ten failures", err, codes.ResourceExhausted)
}

// With authentication off (the loopback default), calls need no
// credentials, and a client that logs in anyway gets a token.
func TestFlightAuthOff(t *testing.T) {
	n, cancel, done := startNodeWith(t, secureConfig(t, SecurityConfig{AdminPassword: "admin-password"}))
	defer func() { cancel(); <-done }()
	cl := client(t, n.Addr())
	if v, err := query(context.Background(), cl, "SELECT 3::BIGINT"); err != nil || v != 3 {
		t.Fatalf("anonymous query = %d, %v", v, err)
	}
	ctx := login(t, cl, "admin", "admin-password")
	if v, err := query(ctx, cl, "SELECT 3::BIGINT"); err != nil || v != 3 {
		t.Fatalf("query with token = %d, %v", v, err)
	}
}

func TestSecurityConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		listen, http string
		sec          SecurityConfig
		want         string // "" for valid
	}{
		{"127.0.0.1:1", "127.0.0.1:2", SecurityConfig{}, ""},
		{"localhost:1", "off", SecurityConfig{Auth: AuthOff}, ""},
		{"0.0.0.0:1", "off", SecurityConfig{}, "needs TLS"},
		{"127.0.0.1:1", ":2", SecurityConfig{}, "needs TLS"},
		{"0.0.0.0:1", "off", SecurityConfig{Insecure: true}, ""},
		{"0.0.0.0:1", "off", SecurityConfig{TLSCert: "c", TLSKey: "k", Auth: AuthOff}, "--insecure"},
		{"127.0.0.1:1", "off", SecurityConfig{TLSCert: "c"}, "both"},
		{"127.0.0.1:1", "off", SecurityConfig{TLSClientCA: "ca"}, "mutual"},
		{"127.0.0.1:1", "off", SecurityConfig{Auth: "maybe"}, "want on, off or auto"},
		{"127.0.0.1:1", "off", SecurityConfig{AdminPassword: "a", AdminPasswordFile: "f"}, "twice"},
	} {
		tc.sec.ensureDefaults()
		var got string
		if errs := tc.sec.validate(tc.listen, tc.http); len(errs) > 0 {
			got = errs[0].Error()
		}
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s %s %+v: %q, want %q", tc.listen, tc.http, tc.sec, got, tc.want)
		}
	}
	sec := SecurityConfig{Auth: AuthAuto}
	if sec.required("127.0.0.1:1", "off") || !sec.required("10.1.2.3:1", "off") {
		t.Error("auto: want off on loopback, on elsewhere")
	}
}

// testCA is a certificate authority made for one test.
type testCA struct{ *testca.CA }

func newTestCA(t testing.TB, name string) *testCA { return &testCA{testca.New(t, name)} }

// issue returns a certificate and key (PEM) signed by the CA: a server's
// for 127.0.0.1 and localhost, or a client's.
func (ca *testCA) issue(t testing.TB, name string, client bool) (certPEM, keyPEM []byte) {
	t.Helper()
	if client {
		return ca.Issue(t, name, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth})
	}
	return ca.Issue(t, name, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, "127.0.0.1", "localhost")
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	// Written aside and renamed into place, as an operator should.
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func tlsClient(t testing.TB, addr string, roots []byte, cert *tls.Certificate) *flightsql.Client {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(roots)
	cfg := &tls.Config{RootCAs: pool, ServerName: "localhost"}
	if cert != nil {
		cfg.Certificates = []tls.Certificate{*cert}
	}
	cl, err := flightsql.NewClient(addr, nil, nil, grpc.WithTransportCredentials(credentials.NewTLS(cfg)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}

// TLS on Flight SQL and HTTP, mutual TLS, and a certificate replaced
// while the node runs.
func TestTLS(t *testing.T) {
	dir := t.TempDir()
	ca, clientCA := newTestCA(t, "test CA"), newTestCA(t, "client CA")
	certFile, keyFile, clientCAFile := filepath.Join(dir, "server.pem"), filepath.Join(dir, "server.key"), filepath.Join(dir, "clients.pem")
	c, k := ca.issue(t, "server", false)
	writeFile(t, certFile, c)
	writeFile(t, keyFile, k)
	writeFile(t, clientCAFile, clientCA.PEM)
	cfg := secureConfig(t, SecurityConfig{TLSCert: certFile, TLSKey: keyFile, TLSClientCA: clientCAFile})
	n, cancel, done := startNodeWith(t, cfg)
	defer func() { cancel(); <-done }()

	cc, ck := clientCA.issue(t, "a client", true)
	clientCert, err := tls.X509KeyPair(cc, ck)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if v, err := query(ctx, tlsClient(t, n.Addr(), ca.PEM, &clientCert), "SELECT 5::BIGINT"); err != nil || v != 5 {
		t.Fatalf("query over mutual TLS = %d, %v", v, err)
	}
	if _, err := query(ctx, tlsClient(t, n.Addr(), ca.PEM, nil), "SELECT 5::BIGINT"); err == nil {
		t.Fatal("a client without a certificate was served")
	}
	if _, err := query(ctx, client(t, n.Addr()), "SELECT 5::BIGINT"); err == nil {
		t.Fatal("a plaintext client was served")
	}

	// HTTPS, with the client certificate.
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.PEM)
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{clientCert}}}}
	resp, err := hc.Get("https://" + n.HTTPAddr() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("https /healthz: %d", resp.StatusCode)
	}

	// Replace the server's certificate with one of another CA: new
	// connections get it, without a restart.
	ca2 := newTestCA(t, "second CA")
	c2, k2 := ca2.issue(t, "server", false)
	writeFile(t, keyFile, k2)
	writeFile(t, certFile, c2)
	if v, err := query(ctx, tlsClient(t, n.Addr(), ca2.PEM, &clientCert), "SELECT 6::BIGINT"); err != nil || v != 6 {
		t.Fatalf("query after the certificate was replaced = %d, %v", v, err)
	}
	if _, err := query(ctx, tlsClient(t, n.Addr(), ca.PEM, &clientCert), "SELECT 6::BIGINT"); err == nil {
		t.Fatal("the old certificate is still served")
	}
}
