package auth

import (
	"context"
	"encoding/base64"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lakestream/lakestream/catalog"
)

// cheap are hash parameters that keep the tests fast.
var cheap = HashParams{Memory: 64, Time: 1, Threads: 1}

type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func newTestService(t testing.TB, required bool) (*Service, *catalog.Catalog, *fakeClock) {
	t.Helper()
	cat, err := catalog.Open(context.Background(), filepath.Join(t.TempDir(), "catalog.db"), catalog.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cat.Close() })
	clock := &fakeClock{time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	s, err := NewService(Config{Required: required, Users: cat, Key: make([]byte, KeyBytes), Hash: cheap, Now: clock.now})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Bootstrap(context.Background(), "admin-password"); err != nil {
		t.Fatal(err)
	}
	return s, cat, clock
}

func basic(user, pass string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
}

func TestPasswordHash(t *testing.T) {
	h, err := hashPassword("correct horse", cheap)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(h, "$argon2id$v=19$m=64,t=1,p=1$") {
		t.Fatalf("hash %q", h)
	}
	if h2, _ := hashPassword("correct horse", cheap); h2 == h {
		t.Fatal("two hashes of one password are equal: no salt")
	}
	for pw, want := range map[string]bool{"correct horse": true, "correct horsE": false, "": false} {
		if ok, err := checkPassword(pw, h); ok != want || err != nil {
			t.Errorf("checkPassword(%q) = %v, %v; want %v", pw, ok, err, want)
		}
	}
	if _, err := checkPassword("x", "$argon2id$v=19$m=999999999,t=1,p=1$AAAAAAAAAAAAAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAA"); err == nil {
		t.Error("absurd memory parameter accepted")
	}
}

func TestTokenTamper(t *testing.T) {
	key := make([]byte, KeyBytes)
	now := time.Unix(1_700_000_000, 0)
	tok := signToken(key, claims{userID: 7, generation: 2, issued: now, expires: now.Add(time.Hour)})
	c, err := parseToken(key, tok)
	if err != nil || c.userID != 7 || c.generation != 2 || !c.expires.Equal(now.Add(time.Hour)) {
		t.Fatalf("parseToken = %+v, %v", c, err)
	}
	raw := []byte(tok)
	raw[len(tokenPrefix)+3] ^= 1
	if _, err := parseToken(key, string(raw)); err == nil {
		t.Error("tampered token accepted")
	}
	other := make([]byte, KeyBytes)
	other[0] = 1
	if _, err := parseToken(other, tok); err == nil {
		t.Error("token accepted under another key")
	}
	if _, err := parseToken(key, "lst1_"); err == nil {
		t.Error("empty token accepted")
	}
}

func TestLoginAndToken(t *testing.T) {
	ctx := context.Background()
	s, _, clock := newTestService(t, true)
	if _, _, err := s.Authenticate(ctx, "", "10.0.0.1:5"); !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("no credentials: %v", err)
	}
	if _, _, err := s.Authenticate(ctx, basic("admin", "wrong-password"), "10.0.0.1:5"); !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("wrong password: %v", err)
	}
	// arrow-go sends the Basic credentials unpadded.
	raw := "Basic " + base64.RawStdEncoding.EncodeToString([]byte("admin:admin-password"))
	id, tok, err := s.Authenticate(ctx, raw, "10.0.0.1:5")
	if err != nil || id.User != "admin" || !id.Superuser || tok == "" {
		t.Fatalf("login = %+v, %q, %v", id, tok, err)
	}
	id, fresh, err := s.Authenticate(ctx, "Bearer "+tok, "10.0.0.1:5")
	if err != nil || id.User != "admin" || id.Method != MethodToken || fresh != "" {
		t.Fatalf("bearer = %+v, %q, %v", id, fresh, err)
	}
	clock.t = clock.t.Add(5 * time.Hour) // past half of 8h: a fresh token comes back
	if _, fresh, err = s.Authenticate(ctx, "Bearer "+tok, ""); err != nil || fresh == "" {
		t.Fatalf("bearer after 5h = %q, %v; want a fresh token", fresh, err)
	}
	clock.t = clock.t.Add(4 * time.Hour)
	if _, _, err := s.Authenticate(ctx, "Bearer "+tok, ""); !errors.Is(err, ErrUnauthenticated) || !strings.Contains(err.Error(), "expired") {
		t.Fatalf("expired token: %v", err)
	}
	if _, _, err := s.Authenticate(ctx, "Bearer "+fresh, ""); err != nil {
		t.Fatalf("fresh token: %v", err)
	}
}

func TestRevocation(t *testing.T) {
	ctx := context.Background()
	s, _, _ := newTestService(t, true)
	admin, _, _ := s.Login(ctx, "admin", "admin-password", "")
	if _, err := s.Exec(ctx, admin, &catalog.CreateUser{Name: "alice", Password: "alice-password"}); err != nil {
		t.Fatal(err)
	}
	alice, tok, err := s.Login(ctx, "alice", "alice-password", "")
	if err != nil || alice.Superuser {
		t.Fatalf("alice login: %+v, %v", alice, err)
	}
	if _, err := s.Exec(ctx, alice, &catalog.CreateUser{Name: "eve", Password: "eve-password"}); !errors.Is(err, ErrPermissionDenied) {
		t.Fatalf("alice creates a user: %v, want permission denied", err)
	}
	if _, err := s.Exec(ctx, admin, &catalog.AlterUser{Name: "alice", Password: "new-password"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Authenticate(ctx, "Bearer "+tok, ""); !errors.Is(err, ErrUnauthenticated) || !strings.Contains(err.Error(), "revoked") {
		t.Fatalf("token after password change: %v", err)
	}
	if _, _, err := s.Login(ctx, "alice", "alice-password", ""); !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("old password after change (cached?): %v", err)
	}
	_, tok, err = s.Login(ctx, "alice", "new-password", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Exec(ctx, admin, &catalog.DropUser{Name: "alice"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Authenticate(ctx, "Bearer "+tok, ""); !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("token after DROP USER: %v", err)
	}
	if _, _, err := s.Login(ctx, "alice", "new-password", ""); !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("login after DROP USER (cached?): %v", err)
	}
	if _, err := s.Exec(ctx, admin, &catalog.DropUser{Name: "admin"}); !errors.Is(err, catalog.ErrInvalid) {
		t.Fatalf("DROP USER admin: %v", err)
	}
	if _, err := s.Exec(ctx, admin, &catalog.CreateUser{Name: "bob", Password: "short"}); !errors.Is(err, catalog.ErrInvalid) {
		t.Fatalf("short password: %v", err)
	}
}

func TestLoginRateLimit(t *testing.T) {
	ctx := context.Background()
	s, _, clock := newTestService(t, true)
	for i := range 10 {
		if _, _, err := s.Login(ctx, "admin", "guess", "10.0.0.9:1"); !errors.Is(err, ErrUnauthenticated) {
			t.Fatalf("failure %d: %v", i, err)
		}
	}
	// Refused now, even with the right password and from another host
	// (the user's bucket is empty).
	if _, _, err := s.Login(ctx, "admin", "admin-password", "10.0.0.10:1"); !errors.Is(err, ErrTooManyFailures) {
		t.Fatalf("11th attempt: %v, want too many failures", err)
	}
	// The peer's bucket is empty too: it may not try other users.
	if _, _, err := s.Login(ctx, "nobody", "guess", "10.0.0.9:2"); !errors.Is(err, ErrTooManyFailures) {
		t.Fatalf("same peer, other user: %v", err)
	}
	clock.t = clock.t.Add(6 * time.Second)
	if _, _, err := s.Login(ctx, "admin", "admin-password", "10.0.0.10:1"); err != nil {
		t.Fatalf("after a refill: %v", err)
	}
}

func TestAuthOff(t *testing.T) {
	ctx := context.Background()
	s, _, _ := newTestService(t, false)
	id, _, err := s.Authenticate(ctx, "", "")
	if err != nil || id != Anonymous {
		t.Fatalf("no credentials with auth off: %+v, %v", id, err)
	}
	if _, _, err := s.Authenticate(ctx, basic("admin", "wrong-password"), ""); !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("wrong credentials with auth off: %v", err)
	}
}

func TestBootstrap(t *testing.T) {
	ctx := context.Background()
	cat, err := catalog.Open(ctx, filepath.Join(t.TempDir(), "catalog.db"), catalog.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	s, err := NewService(Config{Required: true, Users: cat, Key: make([]byte, KeyBytes), Hash: cheap})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Bootstrap(ctx, ""); err == nil || !strings.Contains(err.Error(), "LAKESTREAM_ADMIN_PASSWORD") {
		t.Fatalf("no admin, no password: %v", err)
	}
	if err := s.Bootstrap(ctx, "first-password"); err != nil {
		t.Fatal(err)
	}
	if err := s.Bootstrap(ctx, ""); err != nil {
		t.Fatalf("admin exists, no password given: %v", err)
	}
	if err := s.Bootstrap(ctx, "second-password"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Login(ctx, "admin", "second-password", ""); err != nil {
		t.Fatalf("admin after reset: %v", err)
	}
}
