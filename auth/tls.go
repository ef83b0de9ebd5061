package auth

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"
)

// TLSFiles name the PEM files of a server's TLS credentials.
type TLSFiles struct {
	Cert, Key string
	// ClientCA, when set, makes TLS mutual: a client must present a
	// certificate signed by one of the CAs in this file.
	ClientCA string
}

// TLS serves a node's TLS configuration and reloads it when its files
// change: each handshake stats the files (a stat costs microseconds; a
// handshake costs a millisecond) and, when one's size or modification
// time changed, reads them again. A reload that fails (a certificate
// written but not yet its key) keeps the credentials that worked, logs
// the error, and is tried again at the next handshake. So an operator
// replaces the files (ideally by renaming new ones into place) and new
// connections use them; connections already open keep theirs.
//
// The alternative, SIGHUP, was rejected: it needs a signal from whoever
// renews the certificate, and a missed one leaves the old certificate
// serving until it expires.
type TLS struct {
	files  TLSFiles
	logger *slog.Logger
	mu     struct {
		sync.Mutex
		stamp   [3]fileStamp
		cert    *tls.Certificate
		clients *x509.CertPool
		failed  [3]fileStamp // the stamps of the last failed reload, not logged twice
	}
}

type fileStamp struct {
	size int64
	mod  time.Time
}

// NewTLS loads the files; an error here is a start-up error.
func NewTLS(files TLSFiles, logger *slog.Logger) (*TLS, error) {
	if files.Cert == "" || files.Key == "" {
		return nil, errors.New("tls: want both a certificate and a key file")
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	t := &TLS{files: files, logger: logger}
	stamp, err := t.stamps()
	if err != nil {
		return nil, err
	}
	if err := t.loadLocked(stamp); err != nil {
		return nil, err
	}
	return t, nil
}

// Mutual says whether clients must present certificates.
func (t *TLS) Mutual() bool { return t.files.ClientCA != "" }

// ServerConfig is a tls.Config for a listener that offers protos in ALPN
// ("h2" for gRPC, which requires it).
func (t *TLS) ServerConfig(protos ...string) *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		NextProtos: protos,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			return t.configFor(protos), nil
		},
	}
}

// configFor is the configuration of one client's handshake, with the
// current credentials.
func (t *TLS) configFor(protos []string) *tls.Config {
	cert, clients := t.current()
	c := &tls.Config{MinVersion: tls.VersionTLS12, NextProtos: protos, Certificates: []tls.Certificate{*cert}}
	if clients != nil {
		c.ClientAuth, c.ClientCAs = tls.RequireAndVerifyClientCert, clients
	}
	return c
}

// current returns the credentials, reloading them if a file changed.
func (t *TLS) current() (*tls.Certificate, *x509.CertPool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	stamp, err := t.stamps()
	if err == nil && stamp != t.mu.stamp && stamp != t.mu.failed {
		if err = t.loadLocked(stamp); err == nil {
			t.logger.Info("tls credentials reloaded", "cert", t.files.Cert)
		}
	}
	if err != nil && stamp != t.mu.failed {
		t.mu.failed = stamp
		t.logger.Error("tls credentials not reloaded: serving the previous ones", "err", err)
	}
	return t.mu.cert, t.mu.clients
}

func (t *TLS) stamps() ([3]fileStamp, error) {
	var s [3]fileStamp
	for i, name := range []string{t.files.Cert, t.files.Key, t.files.ClientCA} {
		if name == "" {
			continue
		}
		fi, err := os.Stat(name)
		if err != nil {
			return s, fmt.Errorf("tls: %w", err)
		}
		s[i] = fileStamp{fi.Size(), fi.ModTime()}
	}
	return s, nil
}

func (t *TLS) loadLocked(stamp [3]fileStamp) error {
	cert, err := tls.LoadX509KeyPair(t.files.Cert, t.files.Key)
	if err != nil {
		return fmt.Errorf("tls: certificate %s, key %s: %w", t.files.Cert, t.files.Key, err)
	}
	var clients *x509.CertPool
	if t.files.ClientCA != "" {
		pem, err := os.ReadFile(t.files.ClientCA)
		if err != nil {
			return fmt.Errorf("tls: client CA: %w", err)
		}
		clients = x509.NewCertPool()
		if !clients.AppendCertsFromPEM(pem) {
			return fmt.Errorf("tls: client CA %s: no PEM certificate in it", t.files.ClientCA)
		}
	}
	t.mu.cert, t.mu.clients, t.mu.stamp = &cert, clients, stamp
	return nil
}
