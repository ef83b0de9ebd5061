package clustertest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/lakestream/lakestream/internal/testca"
)

// security is what the harness's clusters run with, as a production
// cluster should (docs/security.md): authentication on, and mutual TLS
// between the nodes with certificates of a CA the harness makes. Every
// node-to-node connection, through the harness's links, is TLS; the
// harness's clients connect over TLS and send the admin's credentials.
type security struct {
	dir    string
	caFile string
	ca     *testca.CA
	pool   *x509.CertPool
	creds  *authHeader

	mu           sync.Mutex
	adminCreated bool
}

const adminPassword = "clustertest-admin-password"

func newSecurity(t *testing.T) *security {
	t.Helper()
	ca := testca.New(t, "clustertest CA")
	s := &security{dir: t.TempDir(), ca: ca, pool: x509.NewCertPool(), creds: &authHeader{}}
	s.creds.set("Basic " + base64.StdEncoding.EncodeToString([]byte("admin:"+adminPassword)))
	s.pool.AddCert(ca.Cert)
	s.caFile = filepath.Join(s.dir, "ca.pem")
	if err := os.WriteFile(s.caFile, ca.PEM, 0o600); err != nil {
		t.Fatal(err)
	}
	return s
}

// nodeArgs issues node id's certificate (its id as the common name, good
// for both ends of a node-to-node connection and for clients reaching
// 127.0.0.1) and returns the flags that serve it.
func (s *security) nodeArgs(t *testing.T, id string) []string {
	t.Helper()
	cert, key := filepath.Join(s.dir, id+".pem"), filepath.Join(s.dir, id+".key")
	if _, err := os.Stat(cert); err != nil {
		c, k := s.ca.Issue(t, id, testca.Node, "127.0.0.1")
		if err := os.WriteFile(key, k, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(cert, c, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return []string{"--auth", "on", "--cluster-tls-cert", cert, "--cluster-tls-key", key, "--cluster-tls-ca", s.caFile}
}

// env is a node's environment: the admin password for the first start
// of the first node, which creates the admin in the shared catalog; the
// other starts need none, and skip checking it (an argon2id hash, a
// second or so on this machine, at every restart of the fault rounds).
func (s *security) env() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.adminCreated {
		return os.Environ()
	}
	s.adminCreated = true
	return append(os.Environ(), "LAKESTREAM_ADMIN_PASSWORD="+adminPassword)
}

// useAPIKey creates an API key of the admin through cl, a client of the
// first node, and sends it on every call of the harness's clients from
// then on: checking it costs a SHA-256, where Basic credentials cost an
// argon2id hash after each restart of a node and every minute (the
// node's cache of verified credentials), several at once when every
// writer comes back to a restarted node. The key is valid on every node:
// the catalog is shared.
func (s *security) useAPIKey(t *testing.T, cl *flightsql.Client) {
	t.Helper()
	ctx := context.Background()
	info, err := cl.Execute(ctx, "CREATE API KEY clustertest")
	if err != nil {
		t.Fatal(err)
	}
	rdr, err := cl.DoGet(ctx, info.Endpoint[0].Ticket)
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Release()
	if !rdr.Next() {
		t.Fatalf("CREATE API KEY returned no row: %v", rdr.Err())
	}
	key := rdr.RecordBatch().Column(2).(*array.String).Value(0)
	s.creds.set("Bearer " + key)
}

// cliArgs and cliEnv connect the lakestream command line to a node, with
// the API key (useAPIKey).
func (s *security) cliArgs() []string { return []string{"--tls-ca", s.caFile} }
func (s *security) cliEnv() []string {
	return append(os.Environ(), "LAKESTREAM_API_KEY="+strings.TrimPrefix(*s.creds.v.Load(), "Bearer "))
}

// dialOptions are the harness's clients': TLS trusting the CA, and the
// admin's credentials on every call: Basic until useAPIKey, the key
// after.
func (s *security) dialOptions() []grpc.DialOption {
	return []grpc.DialOption{
		grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{RootCAs: s.pool})),
		grpc.WithPerRPCCredentials(s.creds),
	}
}

// authHeader is the authorization header of every call.
type authHeader struct{ v atomic.Pointer[string] }

func (a *authHeader) set(v string) { a.v.Store(&v) }

func (a *authHeader) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": *a.v.Load()}, nil
}

func (*authHeader) RequireTransportSecurity() bool { return true }
