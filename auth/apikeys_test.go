package auth

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lakestream/lakestream/catalog"
)

// An API key authenticates as its user until it expires or is dropped;
// the catalog holds its hash only; a user creates and drops keys of its
// own, a superuser anyone's; dropping the user drops its keys; reopening
// the catalog keeps them.
func TestAPIKeys(t *testing.T) {
	s, cat, clock := newTestService(t, true)
	ctx := context.Background()
	admin, _, err := s.Authenticate(ctx, basic("admin", "admin-password"), "10.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Exec(ctx, admin, &catalog.CreateUser{Name: "alice", Password: "alice-password"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Exec(ctx, admin, &catalog.CreateUser{Name: "bob", Password: "bob-password"}); err != nil {
		t.Fatal(err)
	}
	alice, _, err := s.Authenticate(ctx, basic("alice", "alice-password"), "10.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}

	key, k, err := s.CreateAPIKey(ctx, admin, &catalog.CreateAPIKey{Name: "etl", User: "alice", ValidUntil: "2026-02-01"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(key, "lsk1_") || len(key) != 5+43 {
		t.Fatalf("key %q: want lsk1_ and 43 characters", key)
	}
	if k.Hash == key || strings.Contains(k.Hash, key[5:]) || k.Hash != HashAPIKey(key) {
		t.Fatalf("stored %q for key %q: want its hash only", k.Hash, key)
	}
	id, issued, err := s.Authenticate(ctx, "Bearer "+key, "10.0.0.2:1")
	if err != nil || id.User != "alice" || id.Method != MethodAPIKey || id.Superuser || issued != "" {
		t.Fatalf("authenticate with the key: %+v, %q, %v", id, issued, err)
	}
	if _, _, err := s.Authenticate(ctx, "Bearer "+key[:len(key)-1]+"x", "10.0.0.2:1"); !errors.Is(err, ErrUnauthenticated) {
		t.Errorf("an altered key: %v", err)
	}

	// Expiry.
	clock.t = time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	if _, _, err := s.Authenticate(ctx, "Bearer "+key, "10.0.0.2:1"); !errors.Is(err, ErrUnauthenticated) || !strings.Contains(err.Error(), "expired") {
		t.Errorf("an expired key: %v", err)
	}
	clock.t = time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)
	if _, _, err := s.CreateAPIKey(ctx, admin, &catalog.CreateAPIKey{Name: "old", User: "alice", ValidUntil: "2025-12-31"}); !errors.Is(err, catalog.ErrInvalid) {
		t.Errorf("VALID UNTIL in the past: %v", err)
	}
	if _, _, err := s.CreateAPIKey(ctx, admin, &catalog.CreateAPIKey{Name: "bad", User: "alice", ValidUntil: "next tuesday"}); !errors.Is(err, catalog.ErrInvalid) {
		t.Errorf("VALID UNTIL unreadable: %v", err)
	}

	// Run as an update, CREATE API KEY would lose its key: refused.
	if ok, err := s.Exec(ctx, admin, &catalog.CreateAPIKey{Name: "lost", User: "alice"}); !ok || !errors.Is(err, catalog.ErrInvalid) {
		t.Errorf("CREATE API KEY through Exec: %v, %v", ok, err)
	}
	if _, ok := cat.APIKey("lost"); ok {
		t.Error("CREATE API KEY through Exec stored a key")
	}

	// Who may create and drop.
	if _, _, err := s.CreateAPIKey(ctx, alice, &catalog.CreateAPIKey{Name: "for-bob", User: "bob"}); !errors.Is(err, ErrPermissionDenied) {
		t.Errorf("alice creating bob's key: %v", err)
	}
	own, _, err := s.CreateAPIKey(ctx, alice, &catalog.CreateAPIKey{Name: "mine"})
	if err != nil {
		t.Fatalf("alice creating her own key: %v", err)
	}
	if _, _, err := s.CreateAPIKey(ctx, alice, &catalog.CreateAPIKey{Name: "mine"}); !errors.Is(err, catalog.ErrAPIKeyExists) {
		t.Errorf("a second key of one name: %v", err)
	}
	bobs, _, err := s.CreateAPIKey(ctx, admin, &catalog.CreateAPIKey{Name: "bobs", User: "bob"})
	if err != nil {
		t.Fatal(err)
	}
	if rows := s.ShowAPIKeys(alice); len(rows) != 2 || rows[0][0] != "etl" || rows[1][0] != "mine" || rows[1][3] != "infinity" {
		t.Errorf("alice's SHOW API KEYS: %q", rows)
	}
	if rows := s.ShowAPIKeys(admin); len(rows) != 3 {
		t.Errorf("admin's SHOW API KEYS: %q", rows)
	}
	if _, err := s.Exec(ctx, alice, &catalog.DropAPIKey{Name: "bobs"}); !errors.Is(err, ErrPermissionDenied) {
		t.Errorf("alice dropping bob's key: %v", err)
	}
	if _, err := s.Exec(ctx, alice, &catalog.DropAPIKey{Name: "mine"}); err != nil {
		t.Errorf("alice dropping her key: %v", err)
	}
	if _, _, err := s.Authenticate(ctx, "Bearer "+own, "10.0.0.3:1"); !errors.Is(err, ErrUnauthenticated) || !strings.Contains(err.Error(), "revoked") {
		t.Errorf("a dropped key: %v", err)
	}
	if _, err := s.Exec(ctx, alice, &catalog.DropAPIKey{Name: "mine"}); !errors.Is(err, catalog.ErrAPIKeyNotFound) {
		t.Errorf("dropping a dropped key: %v", err)
	}
	if _, err := s.Exec(ctx, alice, &catalog.DropAPIKey{Name: "mine", IfExists: true}); err != nil {
		t.Errorf("DROP API KEY IF EXISTS: %v", err)
	}

	// Dropping the user drops its keys.
	if _, err := s.Exec(ctx, admin, &catalog.DropUser{Name: "bob"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Authenticate(ctx, "Bearer "+bobs, "10.0.0.3:1"); !errors.Is(err, ErrUnauthenticated) {
		t.Errorf("a key of a dropped user: %v", err)
	}
	if _, ok := cat.APIKey("bobs"); ok {
		t.Error("the dropped user's key is still in the catalog")
	}

	// Reopened, the catalog keeps the keys.
	path := filepath.Join(t.TempDir(), "c.db")
	c1, err := catalog.Open(ctx, path, catalog.Config{})
	if err != nil {
		t.Fatal(err)
	}
	u, _, err := c1.CreateUser(ctx, "svc", "x", false, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c1.CreateAPIKey(ctx, "k", u.ID, HashAPIKey("lsk1_abc"), 0, time.Time{}); err != nil {
		t.Fatal(err)
	}
	c1.Close()
	c2, err := catalog.Open(ctx, path, catalog.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if k, ok := c2.APIKeyByHash(HashAPIKey("lsk1_abc")); !ok || k.Name != "k" || k.UserID != u.ID || !k.ExpiresAt.IsZero() {
		t.Errorf("after reopening: %+v, %v", k, ok)
	}
}

// Failed API keys count against the peer's failed logins: a peer that
// tries keys is refused for a while, as one that guesses passwords.
func TestAPIKeyFailuresLimited(t *testing.T) {
	s, _, _ := newTestService(t, true)
	var err error
	for range 20 {
		if _, _, err = s.Authenticate(context.Background(), "Bearer lsk1_notakey", "10.9.9.9:1"); errors.Is(err, ErrTooManyFailures) {
			break
		}
	}
	if !errors.Is(err, ErrTooManyFailures) {
		t.Errorf("20 wrong keys: %v, want too many failures", err)
	}
}

func TestParseValidUntil(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"":                          {},
		"infinity":                  {},
		"2027-01-31":                time.Date(2027, 1, 31, 0, 0, 0, 0, time.UTC),
		"2027-01-31 12:30:00":       time.Date(2027, 1, 31, 12, 30, 0, 0, time.UTC),
		"2027-01-31 12:30:00+02":    time.Date(2027, 1, 31, 10, 30, 0, 0, time.UTC),
		"2027-01-31T12:30:00Z":      time.Date(2027, 1, 31, 12, 30, 0, 0, time.UTC),
		"2027-01-31T12:30:00-05:00": time.Date(2027, 1, 31, 17, 30, 0, 0, time.UTC),
	} {
		got, err := parseValidUntil(in, now)
		if err != nil || !got.Equal(want) {
			t.Errorf("parseValidUntil(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
}
