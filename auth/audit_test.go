package auth

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lakestream/lakestream/audit"
	"github.com/lakestream/lakestream/catalog"
)

// TestLoginsAudited checks that a login, a failed login and a login
// refused for too many failures are recorded with the user and the peer,
// that a cached login is not recorded again, and that no password shows.
func TestLoginsAudited(t *testing.T) {
	ctx := context.Background()
	cat, err := catalog.Open(ctx, filepath.Join(t.TempDir(), "catalog.db"), catalog.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	log, err := audit.Open(audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	clock := &fakeClock{time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	s, err := NewService(Config{Required: true, Users: cat, Key: make([]byte, KeyBytes), Hash: cheap, Now: clock.now,
		LoginBurst: 2, LoginRefill: time.Hour, Audit: log})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Bootstrap(ctx, "admin-password"); err != nil {
		t.Fatal(err)
	}
	const peer = "10.1.2.3:4567"
	if _, _, err := s.Login(ctx, "admin", "admin-password", peer); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Login(ctx, "admin", "admin-password", peer); err != nil { // cached
		t.Fatal(err)
	}
	for range 3 {
		if _, _, err := s.Login(ctx, "admin", "Wrong-pass-1", peer); err == nil {
			t.Fatal("wrong password accepted")
		}
	}
	_, _, err = s.Login(ctx, "nobody", "Wrong-pass-2", "10.9.9.9:1")
	if !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("unknown user: %v", err)
	}
	var got []string
	for _, e := range log.Events() {
		if strings.Contains(e.Outcome+e.Statement, "Wrong-pass") || strings.Contains(e.Outcome, "admin-password") {
			t.Fatalf("password in the audit log: %+v", e)
		}
		got = append(got, string(e.Kind)+" "+e.User+" "+e.Peer+" "+e.Outcome)
	}
	want := []string{
		"login admin 10.1.2.3:4567 ok",
		"login_failed admin 10.1.2.3:4567 unauthenticated: wrong password",
		"login_failed admin 10.1.2.3:4567 unauthenticated: wrong password",
		`login_failed admin 10.1.2.3:4567 too many failed logins for user "admin" or from 10.1.2.3: retry in 1h0m0s`,
		"login_failed nobody 10.9.9.9:1 unauthenticated: no such user",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("audit events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
