package auth

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
)

// ClusterServerName is the TLS server name (SNI) a node dials other nodes
// with. A node's listener serves the node certificate, and asks for the
// caller's, to a handshake that names it, and the client-facing
// certificate to any other: both kinds of caller share the Flight port.
// The name selects; it proves nothing: a caller that sends it must still
// present a certificate of the cluster CA.
const ClusterServerName = "lakestream-node"

// ClusterTLS is the mutual TLS between a cluster's nodes
// (docs/security.md, "Between nodes"): every node holds a certificate of
// the cluster's own CA whose subject common name is its node id, presents
// it both when it serves and when it dials, and accepts a peer only with
// a certificate of that CA. The files are read again when they change, as
// TLS's are.
type ClusterTLS struct {
	t *TLS
}

// NewClusterTLS loads the node's certificate and key and the cluster CA;
// an error here is a start-up error.
func NewClusterTLS(cert, key, ca string, logger *slog.Logger) (*ClusterTLS, error) {
	if ca == "" {
		return nil, errors.New("cluster tls: want the cluster CA file")
	}
	t, err := NewTLS(TLSFiles{Cert: cert, Key: key, ClientCA: ca}, logger)
	if err != nil {
		return nil, fmt.Errorf("cluster %w", err)
	}
	c := &ClusterTLS{t: t}
	own, _ := t.current()
	if own.Leaf == nil || own.Leaf.Subject.CommonName == "" {
		return nil, fmt.Errorf("cluster tls: certificate %s has no subject common name: it must be the node id", cert)
	}
	return c, nil
}

// NodeID is the node id the node's own certificate names.
func (c *ClusterTLS) NodeID() string {
	own, _ := c.t.current()
	return own.Leaf.Subject.CommonName
}

// ServerConfig is the listener's configuration: a handshake that names
// ClusterServerName gets the node certificate and must present one of
// the cluster CA (TLS 1.3, both ends being nodes); any other gets
// clients' configuration, public's, or the node certificate without a
// client certificate asked for when public is nil.
func (c *ClusterTLS) ServerConfig(public *TLS, protos ...string) *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		NextProtos: protos,
		GetConfigForClient: func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
			if hello.ServerName == ClusterServerName {
				cert, cas := c.t.current()
				return &tls.Config{MinVersion: tls.VersionTLS13, NextProtos: protos, Certificates: []tls.Certificate{*cert},
					ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: cas}, nil
			}
			if public != nil {
				return public.configFor(protos), nil
			}
			cert, _ := c.t.current()
			return &tls.Config{MinVersion: tls.VersionTLS12, NextProtos: protos, Certificates: []tls.Certificate{*cert}}, nil
		},
	}
}

// ClientConfig is the configuration a node dials other nodes with. The
// peer is checked against the cluster CA, not against the address
// dialled: nodes are named by their certificates' common names, not by
// host names, so a certificate needs no SAN for the address it is reached
// at (the standard host name check is replaced by verifyNode).
func (c *ClusterTLS) ClientConfig() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS13,
		ServerName: ClusterServerName,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			cert, _ := c.t.current()
			return cert, nil
		},
		InsecureSkipVerify: true, // verified by VerifyConnection, against the cluster CA
		VerifyConnection: func(cs tls.ConnectionState) error {
			_, cas := c.t.current()
			_, err := verifyNode(cs.PeerCertificates, cas, x509.ExtKeyUsageServerAuth)
			return err
		},
	}
}

// verifyNode checks a peer's chain against the cluster CA and returns
// the node id its leaf names.
func verifyNode(chain []*x509.Certificate, cas *x509.CertPool, usage x509.ExtKeyUsage) (string, error) {
	if len(chain) == 0 {
		return "", fmt.Errorf("%w: the peer presented no node certificate", ErrUnauthenticated)
	}
	inter := x509.NewCertPool()
	for _, c := range chain[1:] {
		inter.AddCert(c)
	}
	if _, err := chain[0].Verify(x509.VerifyOptions{Roots: cas, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{usage}}); err != nil {
		return "", fmt.Errorf("%w: the peer's certificate is not one of the cluster CA: %v", ErrUnauthenticated, err)
	}
	id := chain[0].Subject.CommonName
	if id == "" {
		return "", fmt.Errorf("%w: the peer's node certificate has no subject common name (the node id)", ErrUnauthenticated)
	}
	return id, nil
}

// NodeOf returns the node id of the peer of a connection a node's
// listener accepted, or an ErrUnauthenticated error when the connection
// is not a node's: it was not made to ClusterServerName, or without a
// certificate the cluster CA verified (the handshake of such a connection
// verified it already; this checks that it was that handshake).
func NodeOf(cs tls.ConnectionState) (string, error) {
	if cs.ServerName != ClusterServerName || len(cs.VerifiedChains) == 0 {
		return "", fmt.Errorf("%w: only another node of the cluster may call the node-to-node services, with its node certificate (mutual TLS)", ErrUnauthenticated)
	}
	id := cs.VerifiedChains[0][0].Subject.CommonName
	if id == "" {
		return "", fmt.Errorf("%w: the peer's node certificate has no subject common name (the node id)", ErrUnauthenticated)
	}
	return id, nil
}
