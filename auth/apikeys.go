package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/lakestream/lakestream/audit"
	"github.com/lakestream/lakestream/catalog"
)

// An API key is a long-lived credential for a service (docs/security.md,
// "API keys"): sent as a bearer token, it authenticates as its user until
// it expires or is dropped. It is 32 random bytes:
//
//	key = "lsk1_" base64url(32 random bytes), unpadded (48 characters)
//
// The catalog stores the hex SHA-256 of the key, not the key, and the
// key is shown once, in the result of CREATE API KEY. A fast unsalted
// hash is enough: a key is 256 random bits, so a stolen hash cannot be
// searched back to its key, and equal keys (which a salt would tell
// apart) do not occur. argon2id, as for passwords, was rejected: it
// exists to slow the search of guessable secrets, and would cost 64 MiB
// and tens of milliseconds on every call a service makes with its key. A
// keyed hash (HMAC) was rejected too: the nodes sharing a catalog share
// no secret to key it with. The key is found by its hash in a map: the
// lookup's timing depends on the hash of what the caller sent, which
// tells nothing of any stored key.
const (
	apiKeyPrefix = "lsk1_"
	apiKeyBytes  = 32
)

// APIKeyColumns are the columns of SHOW API KEYS.
var APIKeyColumns = []string{"name", "user", "created_at", "valid_until", "created_by"}

// IsAPIKey says whether a bearer credential is an API key (rather than a
// token a login returned).
func IsAPIKey(cred string) bool { return strings.HasPrefix(cred, apiKeyPrefix) }

// HashAPIKey is the hash the catalog stores for key.
func HashAPIKey(key string) string {
	h := sha256.Sum256([]byte(key))
	return hex.EncodeToString(h[:])
}

func newAPIKey() (string, error) {
	b := make([]byte, apiKeyBytes)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("api key: %w", err)
	}
	return apiKeyPrefix + base64.RawURLEncoding.EncodeToString(b), nil
}

// verifyAPIKey authenticates a call by an API key: a key the catalog
// holds, not expired, whose user exists. A failure counts against the
// peer host's failed logins and is audited; a peer over the limit is
// refused before the key is looked up.
func (s *Service) verifyAPIKey(ctx context.Context, key, peer string) (Identity, error) {
	now := s.cfg.Now()
	host := peerHost(peer)
	if ok, wait := s.limit.allow("peer:"+host, now); !ok {
		return Identity{}, fmt.Errorf("%w from %s: retry in %s", ErrTooManyFailures, host, wait.Round(time.Second))
	}
	fail := func(user string, err error) (Identity, error) {
		s.limit.fail("peer:"+host, now)
		s.cfg.Logger.Warn("api key refused", "user", user, "peer", peer, "reason", err)
		s.audit(ctx, audit.KindLoginFailed, user, peer, err)
		return Identity{}, err
	}
	k, ok := s.cfg.Users.APIKeyByHash(HashAPIKey(key))
	if !ok {
		return fail("", fmt.Errorf("%w: unknown or revoked API key", ErrUnauthenticated))
	}
	u, ok := s.cfg.Users.UserByID(k.UserID)
	if !ok {
		return fail("", fmt.Errorf("%w: the API key %q's user no longer exists", ErrUnauthenticated, k.Name))
	}
	if !k.ExpiresAt.IsZero() && !now.Before(k.ExpiresAt) {
		return fail(u.Name, fmt.Errorf("%w: the API key %q expired at %s", ErrUnauthenticated, k.Name, k.ExpiresAt.UTC().Format(time.RFC3339)))
	}
	return identityOf(u, MethodAPIKey), nil
}

// CreateAPIKey runs CREATE API KEY for who and returns the key, which is
// stored nowhere: the caller shows it once. Any user may create keys of
// its own; only a superuser for another user.
func (s *Service) CreateAPIKey(ctx context.Context, who Identity, st *catalog.CreateAPIKey) (string, *catalog.APIKey, error) {
	name := st.User
	if name == "" {
		name = who.User
	}
	if name == "" {
		return "", nil, fmt.Errorf("%w: CREATE API KEY without a user to authenticate as: add FOR USER name", catalog.ErrInvalid)
	}
	if name != who.User && !who.Superuser {
		return "", nil, fmt.Errorf("%w: user %q may create API keys of its own only: only a superuser (admin) may for another user", ErrPermissionDenied, who.User)
	}
	u, ok := s.cfg.Users.User(name)
	if !ok {
		return "", nil, fmt.Errorf("create api key: %w", userNotFound(name))
	}
	expires, err := parseValidUntil(st.ValidUntil, s.cfg.Now())
	if err != nil {
		return "", nil, err
	}
	key, err := newAPIKey()
	if err != nil {
		return "", nil, err
	}
	k, err := s.cfg.Users.CreateAPIKey(ctx, st.Name, u.ID, HashAPIKey(key), who.UserID, expires)
	if err != nil {
		return "", nil, err
	}
	return key, k, nil
}

// dropAPIKey runs DROP API KEY for who: a superuser may drop any key, a
// user its own.
func (s *Service) dropAPIKey(ctx context.Context, who Identity, st *catalog.DropAPIKey) error {
	k, ok := s.cfg.Users.APIKey(st.Name)
	if !ok {
		if st.IfExists {
			return nil
		}
		return fmt.Errorf("%w: api key %q does not exist", catalog.ErrAPIKeyNotFound, st.Name)
	}
	if !who.Superuser && k.UserID != who.UserID {
		return fmt.Errorf("%w: user %q may drop API keys of its own only", ErrPermissionDenied, who.User)
	}
	_, err := s.cfg.Users.DropAPIKey(ctx, st.Name, st.IfExists)
	return err
}

// ShowAPIKeys lists the keys who may see (APIKeyColumns): a superuser
// every key, any other user its own. The keys themselves are nowhere to
// show.
func (s *Service) ShowAPIKeys(who Identity) [][]string {
	var rows [][]string
	for _, k := range s.cfg.Users.APIKeys() {
		if !who.Superuser && k.UserID != who.UserID {
			continue
		}
		rows = append(rows, []string{k.Name, s.userName(k.UserID), k.CreatedAt.UTC().Format(time.RFC3339), ValidUntil(k.ExpiresAt), s.userName(k.CreatedBy)})
	}
	return rows
}

func (s *Service) userName(id int64) string {
	if u, ok := s.cfg.Users.UserByID(id); ok {
		return u.Name
	}
	return ""
}

// ValidUntil is how SHOW API KEYS and CREATE API KEY show a key's
// expiry: RFC 3339 in UTC, or "infinity" for never.
func ValidUntil(t time.Time) string {
	if t.IsZero() {
		return "infinity"
	}
	return t.UTC().Format(time.RFC3339)
}

// parseValidUntil reads VALID UNTIL's timestamp, as PostgreSQL's CREATE
// ROLE takes it: a date or a date and time, in UTC unless it names its
// zone, or 'infinity'; "" is never. It must be in the future.
func parseValidUntil(v string, now time.Time) (time.Time, error) {
	if v == "" || strings.EqualFold(v, "infinity") {
		return time.Time{}, nil
	}
	for _, layout := range []string{time.RFC3339, "2006-01-02 15:04:05Z07:00", "2006-01-02 15:04:05Z07", "2006-01-02T15:04:05", "2006-01-02 15:04:05", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, v, time.UTC); err == nil {
			if !t.After(now) {
				return time.Time{}, fmt.Errorf("%w: VALID UNTIL '%s' is in the past", catalog.ErrInvalid, v)
			}
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%w: VALID UNTIL '%s': want a timestamp such as '2027-01-31' or '2027-01-31 12:00:00+00', or 'infinity'", catalog.ErrInvalid, clip(v))
}
