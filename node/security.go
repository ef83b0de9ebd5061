package node

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/lakestream/lakestream/auth"
	"github.com/lakestream/lakestream/catalog"
)

// SecurityConfig is who may connect to a node, and how (docs/security.md).
// Each field documents its default.
type SecurityConfig struct {
	// Auth is "on" (every call needs credentials, except the HTTP
	// /healthz), "off", or "auto": on whenever Listen or HTTP is not a
	// loopback address. "off" on a non-loopback address needs Insecure.
	// Default "auto".
	Auth string
	// TLSCert and TLSKey are PEM files of the certificate (with its
	// chain) and its key, served on Flight SQL (grpc+tls://) and on HTTP
	// (https://). Both or neither. They are read again when they change
	// (auth.TLS). Default: none, plaintext.
	TLSCert, TLSKey string
	// TLSClientCA is a PEM file of the CAs whose client certificates are
	// accepted: with it, TLS is mutual and a client without such a
	// certificate cannot connect (HTTP included). Default: none.
	TLSClientCA string
	// Insecure allows a non-loopback address without TLS, and with Auth
	// "off". Default false: such a node refuses to start.
	Insecure bool
	// AdminPassword is the password of the admin user: it creates the
	// user at the first start with authentication, and resets its
	// password when it differs later. AdminPasswordFile is a file holding
	// it (a trailing newline is dropped), read at start. There is no
	// default password: with authentication on and no admin user yet,
	// start-up fails without one.
	AdminPassword, AdminPasswordFile string
	// TokenTTL is the lifetime of the bearer tokens a login returns.
	// Default 8h.
	TokenTTL time.Duration

	// hash, now and loginBurst, for tests, make password hashing cheap,
	// move the tokens' clock and allow more failed logins.
	hash       auth.HashParams
	now        func() time.Time
	loginBurst int
}

// The values of SecurityConfig.Auth.
const (
	AuthAuto = "auto"
	AuthOn   = "on"
	AuthOff  = "off"
)

func (s *SecurityConfig) ensureDefaults() {
	if s.Auth == "" {
		s.Auth = AuthAuto
	}
	if s.TokenTTL == 0 {
		s.TokenTTL = 8 * time.Hour
	}
}

// validate checks the security settings against the addresses the node
// listens on: listening beyond loopback needs TLS and authentication
// unless Insecure says otherwise.
func (s *SecurityConfig) validate(listen, http string) []error {
	var errs []error
	switch s.Auth {
	case AuthAuto, AuthOn, AuthOff:
	default:
		errs = append(errs, fmt.Errorf("auth %q: want on, off or auto", s.Auth))
	}
	if (s.TLSCert == "") != (s.TLSKey == "") {
		errs = append(errs, errors.New("tls: give both --tls-cert and --tls-key, or neither"))
	}
	if s.TLSClientCA != "" && s.TLSCert == "" {
		errs = append(errs, errors.New("tls client CA without --tls-cert and --tls-key: mutual TLS needs the server's own certificate"))
	}
	if s.AdminPassword != "" && s.AdminPasswordFile != "" {
		errs = append(errs, errors.New("admin password given twice: use --admin-password-file or LAKESTREAM_ADMIN_PASSWORD, not both"))
	}
	if s.TokenTTL < time.Minute {
		errs = append(errs, fmt.Errorf("token ttl %s: want at least 1m", s.TokenTTL))
	}
	if exposed := exposedAddr(listen, http); exposed != "" && !s.Insecure {
		if s.TLSCert == "" {
			errs = append(errs, fmt.Errorf("listening on %s, which is not a loopback address, needs TLS: give --tls-cert and --tls-key, or --insecure to serve plaintext knowingly", exposed))
		}
		if s.Auth == AuthOff {
			errs = append(errs, fmt.Errorf("--auth off while listening on %s, which is not a loopback address: add --insecure to serve without authentication knowingly", exposed))
		}
	}
	return errs
}

// required says whether calls need credentials.
func (s *SecurityConfig) required(listen, http string) bool {
	return s.Auth == AuthOn || (s.Auth == AuthAuto && exposedAddr(listen, http) != "")
}

// exposedAddr returns the first of the addresses that is not a loopback
// address, or "". A host name other than localhost counts as exposed:
// what it resolves to may change.
func exposedAddr(listen, http string) string {
	for _, a := range []string{listen, http} {
		if a == "off" {
			continue
		}
		host, _, err := net.SplitHostPort(a)
		if err != nil {
			continue // Validate reports it
		}
		if host == "localhost" {
			continue
		}
		if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
			return a
		}
	}
	return ""
}

// security is a node's running authentication and TLS.
type security struct {
	auth *auth.Service
	tls  *auth.TLS // nil: plaintext
	// cluster is the node-to-node mutual TLS (clustertls.go); nil: none.
	cluster *auth.ClusterTLS
}

// openSecurity loads the TLS credentials, the token key and the
// authentication service, and makes sure the admin user exists when it
// must (auth.Service.Bootstrap).
func (n *Node) openSecurity(ctx context.Context) error {
	cfg := n.cfg
	sc := cfg.Security
	if sc.TLSCert != "" {
		t, err := auth.NewTLS(auth.TLSFiles{Cert: sc.TLSCert, Key: sc.TLSKey, ClientCA: sc.TLSClientCA}, cfg.Logger)
		if err != nil {
			return err
		}
		n.sec.tls = t
	}
	key, err := n.tokenKey(ctx)
	if err != nil {
		return err
	}
	required := sc.required(cfg.Listen, cfg.HTTP)
	n.sec.auth, err = auth.NewService(auth.Config{Required: required, Users: n.cat, Key: key, TokenTTL: sc.TokenTTL, Hash: sc.hash, Now: sc.now, LoginBurst: sc.loginBurst, Audit: n.audit, Logger: cfg.Logger})
	if err != nil {
		return err
	}
	password := sc.AdminPassword
	if sc.AdminPasswordFile != "" {
		raw, err := os.ReadFile(sc.AdminPasswordFile)
		if err != nil {
			return fmt.Errorf("admin password file: %w", err)
		}
		password = strings.TrimRight(string(raw), "\r\n")
	}
	if err := n.sec.auth.Bootstrap(ctx, password); err != nil {
		return err
	}
	cfg.Logger.Info("security", "auth", required, "tls", n.sec.tls != nil, "mutual_tls", n.sec.tls != nil && n.sec.tls.Mutual(), "cluster_tls", n.sec.cluster != nil)
	return nil
}

// tokenKeySecret names the bearer-token key in the metadata store of nodes
// that share their catalog: a token one node issues is then good on every
// node (a client reading endpoints at their locations sends it there), and
// names the same user everywhere, since the users are the shared catalog's.
const tokenKeySecret = "auth-token-key"

// tokenKey is the key that signs bearer tokens: the cluster's when the
// nodes share their catalog (docs/security.md, "Tokens"), else this
// node's own, in its data directory.
func (n *Node) tokenKey(ctx context.Context) ([]byte, error) {
	if n.repl == nil || !catalog.IsPostgresURL(n.cfg.Cluster.Meta) {
		return tokenKey(filepath.Join(n.cfg.DataDir, "token.key"))
	}
	fresh := make([]byte, auth.KeyBytes)
	rand.Read(fresh)
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	key, err := n.repl.store.Secret(ctx, tokenKeySecret, fresh)
	if err != nil {
		return nil, fmt.Errorf("the cluster's token key: %w", err)
	}
	if len(key) != auth.KeyBytes {
		return nil, fmt.Errorf("the cluster's token key: %d bytes, want %d", len(key), auth.KeyBytes)
	}
	return key, nil
}

// tokenKey reads the key that signs bearer tokens, creating it (random,
// readable by the owner only) at the first start. Deleting the file
// revokes every token issued.
func tokenKey(path string) ([]byte, error) {
	key, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		key = make([]byte, auth.KeyBytes)
		if _, err := rand.Read(key); err != nil {
			return nil, fmt.Errorf("token key: %w", err)
		}
		return key, writeNew(path, key)
	}
	if err != nil {
		return nil, fmt.Errorf("token key: %w", err)
	}
	if len(key) != auth.KeyBytes {
		return nil, fmt.Errorf("token key %s: %d bytes, want %d (delete it to make a new one; tokens issued are then revoked)", path, len(key), auth.KeyBytes)
	}
	return key, nil
}

func writeNew(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("token key: %w", err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	return errors.Join(err, f.Close())
}

// grpcOptions are the Flight server's TLS credentials, if any. With
// cluster TLS the port serves TLS whatever --tls-cert says: other nodes
// reach it with their certificates, and clients, without --tls-cert, get
// the node certificate (clustertls.go).
func (n *Node) grpcOptions() []grpc.ServerOption {
	if n.sec.cluster != nil {
		return []grpc.ServerOption{grpc.Creds(credentials.NewTLS(n.sec.cluster.ServerConfig(n.sec.tls, "h2")))}
	}
	if n.sec.tls == nil {
		return nil
	}
	return []grpc.ServerOption{grpc.Creds(credentials.NewTLS(n.sec.tls.ServerConfig("h2")))}
}

// secureHTTPListener serves HTTP over TLS when the node has credentials.
func (n *Node) secureHTTPListener(l net.Listener) net.Listener {
	if n.sec.tls == nil {
		return l
	}
	return tls.NewListener(l, n.sec.tls.ServerConfig("http/1.1"))
}

// secureHTTP is the one place an HTTP request gets its identity: with
// authentication on, every path but /healthz (which load balancers
// probe) needs a bearer token or Basic credentials.
func (n *Node) secureHTTP(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			next.ServeHTTP(w, r)
			return
		}
		authorization := r.Header.Get("Authorization")
		if authorization == "Bearer None" && strings.HasPrefix(r.URL.Path, "/iceberg/") {
			// pyiceberg's RestCatalog (0.12) sends this when it is given
			// no credentials: it is none, not a token that fails.
			authorization = ""
		}
		id, _, err := n.sec.auth.Authenticate(r.Context(), authorization, r.RemoteAddr)
		if err != nil {
			code := http.StatusUnauthorized
			if errors.Is(err, auth.ErrTooManyFailures) {
				code = http.StatusTooManyRequests
			} else {
				w.Header().Set("WWW-Authenticate", `Basic realm="lakestream", charset="UTF-8"`)
			}
			http.Error(w, err.Error(), code)
			return
		}
		next.ServeHTTP(w, r.WithContext(auth.WithIdentity(r.Context(), id)))
	})
}
