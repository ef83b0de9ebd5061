package auth

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/lakestream/lakestream/internal/testca"
)

type testCA struct {
	*testca.CA
	file string
}

// newCA makes a CA and writes its certificate into dir.
func newCA(t *testing.T, dir, name string) *testCA {
	t.Helper()
	ca := &testCA{CA: testca.New(t, name), file: filepath.Join(dir, name+".pem")}
	writePEM(t, ca.file, ca.PEM)
	return ca
}

// node writes a certificate of the CA for id into dir (renamed into
// place) and returns its file names.
func (ca *testCA) node(t *testing.T, dir, id string, usage ...x509.ExtKeyUsage) (cert, key string) {
	t.Helper()
	c, k := ca.Issue(t, id, usage)
	cert, key = filepath.Join(dir, id+".pem"), filepath.Join(dir, id+".key")
	writePEM(t, key, k)
	writePEM(t, cert, c)
	return cert, key
}

func writePEM(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path+".tmp", data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		t.Fatal(err)
	}
}

// handshake runs a TLS handshake over a pipe and returns both ends'
// states.
func handshake(t *testing.T, client, server *tls.Config) (tls.ConnectionState, tls.ConnectionState, error) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0") // buffered, unlike net.Pipe: a side that fails can send its alert
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	type result struct {
		state tls.ConnectionState
		err   error
	}
	done := make(chan result, 1)
	go func() {
		b, err := l.Accept()
		if err != nil {
			done <- result{err: err}
			return
		}
		defer b.Close()
		srv := tls.Server(b, server)
		err = srv.Handshake()
		if err == nil {
			_, err = srv.Read(make([]byte, 1)) // TLS 1.3: the client's certificate is checked after the client's handshake ends
		}
		done <- result{srv.ConnectionState(), err}
	}()
	a, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	cl := tls.Client(a, client)
	cerr := cl.Handshake()
	if cerr == nil {
		_, cerr = cl.Write([]byte{1})
	}
	if cerr == nil {
		// The server's refusal of the client's certificate arrives after
		// the client's handshake: read it.
		_ = a.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, rerr := cl.Read(make([]byte, 1))
		if rerr != nil && !errors.Is(rerr, io.EOF) && !errors.Is(rerr, os.ErrDeadlineExceeded) {
			cerr = rerr
		}
	}
	a.Close()
	r := <-done
	return cl.ConnectionState(), r.state, errors.Join(cerr, r.err)
}

// Nodes know each other by certificates of the cluster CA: the listener
// tells a node's connection (NodeOf) from a client's; a certificate of
// another CA is refused; a replaced certificate serves the next
// handshake.
func TestClusterTLS(t *testing.T) {
	dir := t.TempDir()
	ca := newCA(t, dir, "cluster")
	both := []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	c1, k1 := ca.node(t, dir, "n1", both...)
	n1, err := NewClusterTLS(c1, k1, ca.file, nil)
	if err != nil {
		t.Fatal(err)
	}
	d2 := t.TempDir()
	c2, k2 := ca.node(t, d2, "n2", both...)
	n2, err := NewClusterTLS(c2, k2, ca.file, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n1.NodeID() != "n1" || n2.NodeID() != "n2" {
		t.Fatalf("node ids %q, %q", n1.NodeID(), n2.NodeID())
	}

	_, srv, err := handshake(t, n2.ClientConfig(), n1.ServerConfig(nil, "h2"))
	if err != nil {
		t.Fatalf("n2 dialing n1: %v", err)
	}
	if id, err := NodeOf(srv); err != nil || id != "n2" {
		t.Errorf("NodeOf n2's connection: %q, %v", id, err)
	}

	// A client of the Flight port (another server name, no certificate)
	// connects, and is no node.
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	_, srv, err = handshake(t, &tls.Config{RootCAs: pool, ServerName: "n1", InsecureSkipVerify: true}, n1.ServerConfig(nil, "h2"))
	if err != nil {
		t.Fatalf("a client: %v", err)
	}
	if _, err := NodeOf(srv); !errors.Is(err, ErrUnauthenticated) {
		t.Errorf("NodeOf a client's connection: %v", err)
	}

	// A certificate of another CA, naming a member, is refused by the
	// listener; a node refuses a listener with one.
	rogueCA := newCA(t, t.TempDir(), "rogue")
	rd := t.TempDir()
	rc, rk := rogueCA.node(t, rd, "n2", both...)
	rogue, err := NewClusterTLS(rc, rk, ca.file, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := handshake(t, rogue.ClientConfig(), n1.ServerConfig(nil, "h2")); err == nil {
		t.Error("a certificate of another CA was accepted by the listener")
	}
	if _, _, err := handshake(t, n2.ClientConfig(), rogue.ServerConfig(nil, "h2")); err == nil {
		t.Error("a listener with a certificate of another CA was accepted by a node")
	}
	// A certificate only for servers cannot dial as a node.
	sd := t.TempDir()
	sc, sk := ca.node(t, sd, "n3", x509.ExtKeyUsageServerAuth)
	serverOnly, err := NewClusterTLS(sc, sk, ca.file, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := handshake(t, serverOnly.ClientConfig(), n1.ServerConfig(nil, "h2")); err == nil {
		t.Error("a certificate without clientAuth dialed as a node")
	}

	// Replaced in place (renamed), the certificate serves the next
	// handshake without a restart.
	old := mustLeaf(t, c2)
	c2, k2 = ca.node(t, d2, "n2", both...)
	for _, f := range []string{c2, k2} { // a later modification time, whatever the clock's granularity: the reload compares it
		if err := os.Chtimes(f, time.Now().Add(time.Minute), time.Now().Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	_, srv, err = handshake(t, n2.ClientConfig(), n1.ServerConfig(nil, "h2"))
	if err != nil {
		t.Fatal(err)
	}
	if got := srv.PeerCertificates[0]; got.SerialNumber.Cmp(old.SerialNumber) == 0 {
		t.Error("the replaced certificate was not presented")
	}
}

func mustLeaf(t *testing.T, file string) *x509.Certificate {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := pem.Decode(raw)
	c, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestNewClusterTLSNeedsANodeID(t *testing.T) {
	dir := t.TempDir()
	ca := newCA(t, dir, "cluster")
	c, k := ca.node(t, dir, "", x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth)
	if _, err := NewClusterTLS(c, k, ca.file, nil); err == nil {
		t.Error("a certificate without a common name was taken")
	}
	if _, err := NewClusterTLS(c, k, "", nil); err == nil {
		t.Error("no CA was taken")
	}
}
