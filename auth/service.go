package auth

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/lakestream/lakestream/audit"
	"github.com/lakestream/lakestream/catalog"
)

// The kinds of the errors Authenticate returns; callers map them to their
// protocol's codes (gRPC Unauthenticated, PermissionDenied,
// ResourceExhausted; HTTP 401, 403, 429).
var (
	ErrUnauthenticated  = errors.New("unauthenticated")
	ErrPermissionDenied = errors.New("permission denied")
	ErrTooManyFailures  = errors.New("too many failed logins")
)

// MinPasswordLength is the shortest password CREATE USER, ALTER USER and
// the admin password accept, in characters.
const MinPasswordLength = 8

// The methods an Identity was established by.
const (
	MethodNone     = "none"     // authentication is off and the call sent no credentials
	MethodPassword = "password" // a user name and password (Basic)
	MethodToken    = "token"    // a bearer token a login returned
	MethodAPIKey   = "api_key"  // a long-lived API key (apikeys.go)
	MethodNode     = "node"     // another node of the cluster, by its certificate (clustertls.go)
)

// Identity is who a call runs as. Every call has one in its context
// (WithIdentity), set in one place per protocol.
type Identity struct {
	// User is the user's name; "" for Anonymous.
	User   string
	UserID int64
	// Superuser may manage users; Anonymous is one, since with
	// authentication off everyone may do everything.
	Superuser bool
	Method    string
	// Node is the node id of a node-to-node call (MethodNode), "" for
	// any other.
	Node string
}

// NodeIdentity is the identity of a call from the cluster's node id: a
// superuser, since the node-to-node services read and write beneath
// every table, named "node:<id>", which no user can be (a user name
// holds no colon).
func NodeIdentity(id string) Identity {
	return Identity{User: "node:" + id, Superuser: true, Method: MethodNode, Node: id}
}

// Anonymous is the identity of a call without credentials while
// authentication is off.
var Anonymous = Identity{Superuser: true, Method: MethodNone}

type identityKey struct{}

// WithIdentity returns ctx carrying id.
func WithIdentity(ctx context.Context, id Identity) context.Context {
	return context.WithValue(ctx, identityKey{}, id)
}

// FromContext returns the identity in ctx.
func FromContext(ctx context.Context) (Identity, bool) {
	id, ok := ctx.Value(identityKey{}).(Identity)
	return id, ok
}

// Users is where users are stored (*catalog.Catalog).
type Users interface {
	User(name string) (*catalog.User, bool)
	UserByID(id int64) (*catalog.User, bool)
	CreateUser(ctx context.Context, name, passwordHash string, superuser, ifNotExists bool) (*catalog.User, bool, error)
	SetPassword(ctx context.Context, name, passwordHash string) (*catalog.User, error)
	DropUser(ctx context.Context, name string, ifExists bool) (*catalog.User, error)
	// The API keys (apikeys.go).
	APIKey(name string) (*catalog.APIKey, bool)
	APIKeyByHash(hash string) (*catalog.APIKey, bool)
	APIKeys() []*catalog.APIKey
	CreateAPIKey(ctx context.Context, name string, userID int64, hash string, createdBy int64, expires time.Time) (*catalog.APIKey, error)
	DropAPIKey(ctx context.Context, name string, ifExists bool) (*catalog.APIKey, error)
}

// Config configures a Service. Each field documents its default.
type Config struct {
	// Required refuses calls without credentials (authentication on).
	// Without it such a call runs as Anonymous; credentials that a call
	// does send are checked either way. Default false.
	Required bool
	// Users is the user store. Required.
	Users Users
	// Key signs the bearer tokens, KeyBytes long. Required.
	Key []byte
	// TokenTTL is how long a token is valid. A call made with a token in
	// the second half of its life gets a fresh one in its response's
	// authorization header (clients that follow the Flight convention,
	// ADBC among them, switch to it). Default 8h.
	TokenTTL time.Duration
	// LoginBurst is how many failed logins a user, and a peer host, may
	// have at once; LoginRefill is how often one more is allowed after
	// that. Defaults 10 and 6s: ten failures, then one every 6 seconds.
	LoginBurst  int
	LoginRefill time.Duration
	// Hash are argon2id's parameters for new passwords. Default
	// DefaultHashParams.
	Hash HashParams
	// MaxHashing bounds the password hashes computed at once, each taking
	// Hash.Memory. Default 2.
	MaxHashing int
	// Audit records logins and failed logins (audit.go). Default nil:
	// none.
	Audit *audit.Log
	// Now is the clock. Default time.Now.
	Now    func() time.Time
	Logger *slog.Logger
}

func (c *Config) ensureDefaults() {
	if c.TokenTTL == 0 {
		c.TokenTTL = 8 * time.Hour
	}
	if c.LoginBurst == 0 {
		c.LoginBurst = 10
	}
	if c.LoginRefill == 0 {
		c.LoginRefill = 6 * time.Second
	}
	c.Hash.ensureDefaults()
	if c.MaxHashing == 0 {
		c.MaxHashing = 2
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

func (c *Config) validate() error {
	var errs []error
	if c.Users == nil {
		errs = append(errs, errors.New("no user store"))
	}
	if len(c.Key) != KeyBytes {
		errs = append(errs, fmt.Errorf("token key of %d bytes: want %d", len(c.Key), KeyBytes))
	}
	if c.TokenTTL < time.Minute {
		errs = append(errs, fmt.Errorf("token lifetime %s: want at least 1m", c.TokenTTL))
	}
	if c.LoginBurst < 1 || c.LoginRefill < 0 || c.MaxHashing < 1 {
		errs = append(errs, fmt.Errorf("login burst %d, refill %s, concurrent hashes %d: want positive values", c.LoginBurst, c.LoginRefill, c.MaxHashing))
	}
	return errors.Join(errs...)
}

// Service authenticates calls and manages users.
type Service struct {
	cfg     Config
	limit   *limiter
	hashing chan struct{} // semaphore of MaxHashing
	dummy   struct {
		once sync.Once
		hash string // a hash to check unknown users' passwords against
	}
	verified verifiedCache
}

// NewService returns a Service.
func NewService(cfg Config) (*Service, error) {
	cfg.ensureDefaults()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("auth: %w", err)
	}
	s := &Service{cfg: cfg, limit: newLimiter(cfg.LoginBurst, cfg.LoginRefill, 100_000), hashing: make(chan struct{}, cfg.MaxHashing)}
	s.verified.m = map[[32]byte]verified{}
	return s, nil
}

// Required says whether calls need credentials.
func (s *Service) Required() bool { return s.cfg.Required }

// TokenTTL is the tokens' lifetime.
func (s *Service) TokenTTL() time.Duration { return s.cfg.TokenTTL }

// Authenticate establishes who sent authorization, the value of an
// Authorization header ("" when there is none): "Basic
// base64(user:password)" logs in, "Bearer <token>" checks a token or an
// API key. peer
// is the client's address, for the limit on failed logins and the log.
// issued is a new token to send back ("" for none): after every login,
// and for a token past half its life.
func (s *Service) Authenticate(ctx context.Context, authorization, peer string) (id Identity, issued string, err error) {
	scheme, cred, _ := strings.Cut(strings.TrimSpace(authorization), " ")
	cred = strings.TrimSpace(cred)
	switch {
	case authorization == "" && s.cfg.Required:
		return Identity{}, "", fmt.Errorf("%w: no credentials: log in with a user name and password (Flight Handshake, or an Authorization: Basic header) and send the bearer token it returns, or send an API key as the bearer token", ErrUnauthenticated)
	case authorization == "":
		return Anonymous, "", nil
	case strings.EqualFold(scheme, "basic"):
		user, password, err := decodeBasic(cred)
		if err != nil {
			return Identity{}, "", err
		}
		return s.Login(ctx, user, password, peer)
	case strings.EqualFold(scheme, "bearer") && IsAPIKey(cred):
		id, err := s.verifyAPIKey(ctx, cred, peer) // apikeys.go
		return id, "", err
	case strings.EqualFold(scheme, "bearer"):
		return s.verifyToken(cred)
	}
	return Identity{}, "", fmt.Errorf("%w: authorization scheme %q: want Basic or Bearer", ErrUnauthenticated, clip(scheme))
}

// decodeBasic reads base64(user:password), padded or not (arrow-go's
// client sends it unpadded, the Java and C++ clients padded).
func decodeBasic(cred string) (user, password string, err error) {
	raw, err := base64.RawStdEncoding.DecodeString(strings.TrimRight(cred, "="))
	if err == nil {
		var ok bool
		user, password, ok = strings.Cut(string(raw), ":")
		if ok && utf8.ValidString(user) {
			return user, password, nil
		}
	}
	return "", "", fmt.Errorf("%w: malformed Basic credentials: want base64(user:password)", ErrUnauthenticated)
}

// Login checks a user's password and returns the user's identity and a
// new token. Failures are counted per user and per peer host, logged
// with the peer (never the password), and refused for a while once there
// are too many (LoginBurst, LoginRefill).
func (s *Service) Login(ctx context.Context, user, password, peer string) (Identity, string, error) {
	now := s.cfg.Now()
	host := peerHost(peer)
	if id, ok := s.verified.get(s.cfg.Key, user, password, s.cfg.Users, now); ok {
		return id, s.issue(id, now), nil
	}
	for _, key := range []string{"user:" + user, "peer:" + host} {
		if ok, wait := s.limit.allow(key, now); !ok {
			s.cfg.Logger.Warn("login refused: too many failed logins", "user", user, "peer", peer, "retry_after", wait.Round(time.Second))
			err := fmt.Errorf("%w for user %q or from %s: retry in %s", ErrTooManyFailures, clip(user), host, wait.Round(time.Second))
			s.audit(ctx, audit.KindLoginFailed, user, peer, err)
			return Identity{}, "", err
		}
	}
	u, exists := s.cfg.Users.User(user)
	hash := s.dummyHash()
	if exists {
		hash = u.PasswordHash
	}
	ok, err := s.check(ctx, password, hash)
	if err != nil {
		return Identity{}, "", err
	}
	if !exists || !ok {
		if exists {
			s.limit.fail("user:"+user, now) // only users that exist: the map stays bounded
		}
		s.limit.fail("peer:"+host, now)
		reason := "wrong password"
		if !exists {
			reason = "no such user"
		}
		s.cfg.Logger.Warn("login failed", "user", user, "peer", peer, "reason", reason)
		s.audit(ctx, audit.KindLoginFailed, user, peer, fmt.Errorf("%w: %s", ErrUnauthenticated, reason))
		return Identity{}, "", fmt.Errorf("%w: wrong user name or password", ErrUnauthenticated)
	}
	id := identityOf(u, MethodPassword)
	s.verified.put(s.cfg.Key, user, password, u, now)
	s.cfg.Logger.Debug("login", "user", user, "peer", peer)
	s.audit(ctx, audit.KindLogin, user, peer, nil)
	return id, s.issue(id, now), nil
}

// check runs checkPassword under the hashing semaphore.
func (s *Service) check(ctx context.Context, password, hash string) (bool, error) {
	select {
	case s.hashing <- struct{}{}:
	case <-ctx.Done():
		return false, ctx.Err()
	}
	defer func() { <-s.hashing }()
	ok, err := checkPassword(password, hash)
	if err != nil {
		// A stored hash that does not decode is the operator's to fix
		// (ALTER USER); the client only learns the login failed.
		s.cfg.Logger.Error("stored password hash unreadable", "err", err)
		return false, nil
	}
	return ok, nil
}

// hash hashes a new password under the semaphore.
func (s *Service) hash(ctx context.Context, password string) (string, error) {
	if n := utf8.RuneCountInString(password); n < MinPasswordLength {
		return "", fmt.Errorf("%w: the password has %d characters: want at least %d", catalog.ErrInvalid, n, MinPasswordLength)
	}
	select {
	case s.hashing <- struct{}{}:
	case <-ctx.Done():
		return "", ctx.Err()
	}
	defer func() { <-s.hashing }()
	return hashPassword(password, s.cfg.Hash)
}

// dummyHash is checked for users that do not exist, so that a login
// takes as long whether or not its user does.
func (s *Service) dummyHash() string {
	s.dummy.once.Do(func() {
		s.dummy.hash, _ = hashPassword("not a password of anyone", s.cfg.Hash)
	})
	return s.dummy.hash
}

func (s *Service) issue(id Identity, now time.Time) string {
	u, ok := s.cfg.Users.UserByID(id.UserID)
	if !ok {
		return ""
	}
	return signToken(s.cfg.Key, claims{userID: u.ID, generation: u.Generation, issued: now, expires: now.Add(s.cfg.TokenTTL)})
}

// verifyToken checks a bearer token: its signature, its expiry, and that
// its user exists with the password generation it was issued under.
func (s *Service) verifyToken(tok string) (Identity, string, error) {
	c, err := parseToken(s.cfg.Key, tok)
	if err != nil {
		return Identity{}, "", fmt.Errorf("%w: invalid bearer token: log in again", ErrUnauthenticated)
	}
	now := s.cfg.Now()
	if !now.Before(c.expires) {
		return Identity{}, "", fmt.Errorf("%w: the bearer token expired at %s: log in again", ErrUnauthenticated, c.expires.UTC().Format(time.RFC3339))
	}
	u, ok := s.cfg.Users.UserByID(c.userID)
	if !ok {
		return Identity{}, "", fmt.Errorf("%w: the bearer token's user no longer exists", ErrUnauthenticated)
	}
	if u.Generation != c.generation {
		return Identity{}, "", fmt.Errorf("%w: the bearer token was revoked by a change of the user's password: log in again", ErrUnauthenticated)
	}
	id := identityOf(u, MethodToken)
	var issued string
	if c.expires.Sub(now) < s.cfg.TokenTTL/2 {
		issued = s.issue(id, now)
	}
	return id, issued, nil
}

func identityOf(u *catalog.User, method string) Identity {
	return Identity{User: u.Name, UserID: u.ID, Superuser: u.Superuser, Method: method}
}

// peerHost is the host of a peer address: limits count per host, whatever
// port a connection comes from.
func peerHost(peer string) string {
	if h, _, err := net.SplitHostPort(peer); err == nil {
		return h
	}
	return peer
}

func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// verifiedCache remembers, for a minute, the credentials that logged in,
// by their HMAC under the token key (never the password itself): a
// client that sends Basic credentials on every call (a Prometheus
// scrape, curl) costs one password hash a minute, not one a call. A hit
// still needs the user to exist with the same password generation.
type verifiedCache struct {
	mu sync.Mutex
	m  map[[32]byte]verified
}

type verified struct {
	userID, generation int64
	until              time.Time
}

const verifiedFor = time.Minute

func credKey(key []byte, user, password string) [32]byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(user))
	m.Write([]byte{0})
	m.Write([]byte(password))
	var k [32]byte
	copy(k[:], m.Sum(nil))
	return k
}

func (c *verifiedCache) get(key []byte, user, password string, users Users, now time.Time) (Identity, bool) {
	k := credKey(key, user, password)
	c.mu.Lock()
	v, ok := c.m[k]
	c.mu.Unlock()
	if !ok || !now.Before(v.until) {
		return Identity{}, false
	}
	u, ok := users.UserByID(v.userID)
	if !ok || u.Generation != v.generation || u.Name != user {
		return Identity{}, false
	}
	return identityOf(u, MethodPassword), true
}

func (c *verifiedCache) put(key []byte, user, password string, u *catalog.User, now time.Time) {
	k := credKey(key, user, password)
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= 1024 {
		clear(c.m)
	}
	c.m[k] = verified{userID: u.ID, generation: u.Generation, until: now.Add(verifiedFor)}
}
