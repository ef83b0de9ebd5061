package meta

import (
	"context"
	"errors"
	"testing"
	"time"
)

func mustAcquire(t *testing.T, s Store, name, holder string, ttl time.Duration) Lease {
	t.Helper()
	l, err := s.AcquireLease(context.Background(), name, holder, ttl)
	if err != nil {
		t.Fatalf("acquire %s for %s: %v", name, holder, err)
	}
	return l
}

// wantHeld checks that holder cannot take name because want holds it.
func wantHeld(t *testing.T, s Store, name, holder, want string) {
	t.Helper()
	_, err := s.AcquireLease(context.Background(), name, holder, time.Minute)
	var held *LeaseHeldError
	if !errors.As(err, &held) || !errors.Is(err, ErrLeaseHeld) || held.Holder != want {
		t.Fatalf("acquire %s for %s: %v, want held by %s", name, holder, err, want)
	}
}

func testLeaseAcquireRenewRelease(t *testing.T, e *env) {
	ctx, s := context.Background(), e.store(t)
	if _, err := s.Lease(ctx, "controller"); !errors.Is(err, ErrNotFound) {
		t.Errorf("lease never taken: %v, want ErrNotFound", err)
	}
	before := e.now()
	a := mustAcquire(t, s, "controller", "n1", time.Minute)
	after := e.now()
	if a.Token != 1 || a.Holder != "n1" || a.Name != "controller" {
		t.Errorf("first acquire = %+v, want token 1 for n1", a)
	}
	if a.Expires.Before(before.Add(time.Minute)) || a.Expires.After(after.Add(time.Minute)) {
		t.Errorf("expires %s, want the call's start + 1m (between %s and %s)", a.Expires, before.Add(time.Minute), after.Add(time.Minute))
	}
	wantHeld(t, s, "controller", "n2", "n1")

	e.tick(time.Millisecond)
	renewed := mustAcquire(t, s, "controller", "n1", time.Minute)
	if renewed.Token != a.Token || renewed.Expires.Before(a.Expires) {
		t.Errorf("renewal = %+v, want token %d and an expiry not before %s", renewed, a.Token, a.Expires)
	}
	if l, err := s.Lease(ctx, "controller"); err != nil || l.Holder != "n1" || l.Token != 1 {
		t.Errorf("Lease = %+v, %v; want n1 with token 1", l, err)
	}
	// Another lease has tokens of its own.
	if other := mustAcquire(t, s, "tiering/7", "n2", time.Minute); other.Token != 1 {
		t.Errorf("another lease's first token = %d, want 1", other.Token)
	}

	for _, wrong := range []Lease{{Name: "controller", Holder: "n1", Token: 2}, {Name: "controller", Holder: "n2", Token: 1}, {Name: "nope", Holder: "n1", Token: 1}} {
		if err := s.ReleaseLease(ctx, wrong); !errors.Is(err, ErrNotFound) {
			t.Errorf("release %+v: %v, want ErrNotFound", wrong, err)
		}
	}
	if err := s.ReleaseLease(ctx, renewed); err != nil {
		t.Fatalf("release: %v", err)
	}
	if err := s.ReleaseLease(ctx, renewed); !errors.Is(err, ErrNotFound) {
		t.Errorf("second release: %v, want ErrNotFound", err)
	}
	if _, err := s.Lease(ctx, "controller"); !errors.Is(err, ErrNotFound) {
		t.Errorf("released lease: %v, want ErrNotFound", err)
	}
	b := mustAcquire(t, s, "controller", "n2", time.Minute)
	if b.Token != 2 {
		t.Errorf("token after a release = %d, want 2", b.Token)
	}
	wantHeld(t, s, "controller", "n1", "n2")

	for _, bad := range []struct {
		name, holder string
		ttl          time.Duration
	}{{"", "n1", time.Second}, {"x", "", time.Second}, {"x", "n1", 0}, {"x", "n1", -time.Second}} {
		if _, err := s.AcquireLease(ctx, bad.name, bad.holder, bad.ttl); !errors.Is(err, ErrInvalid) {
			t.Errorf("acquire(%q, %q, %s): %v, want ErrInvalid", bad.name, bad.holder, bad.ttl, err)
		}
	}
}

// waitExpired waits until the store reports no live lease name, moving
// the env's clock (or waiting on the real one) in steps.
func waitExpired(t *testing.T, e *env, s Store, name string, step time.Duration) {
	t.Helper()
	for range 2000 {
		_, err := s.Lease(context.Background(), name)
		if errors.Is(err, ErrNotFound) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		e.tick(step)
	}
	t.Fatalf("lease %s did not expire", name)
}

func testLeaseExpiry(t *testing.T, e *env) {
	s := e.store(t)
	ttl := 300 * time.Millisecond
	a := mustAcquire(t, s, "controller", "n1", ttl)
	wantHeld(t, s, "controller", "n2", "n1")
	if e.clock != nil {
		// The fake clock is the store's clock: the expiry is exact.
		e.clock.Advance(a.Expires.Sub(e.now()) - time.Microsecond)
		wantHeld(t, s, "controller", "n2", "n1")
		e.clock.Advance(time.Microsecond)
	}
	waitExpired(t, e, s, "controller", 10*time.Millisecond)
	if now := e.now(); now.Before(a.Expires) {
		t.Fatalf("the store let the lease expire at %s, before the holder's own expiry %s", now, a.Expires)
	}
	b := mustAcquire(t, s, "controller", "n2", time.Minute)
	if b.Token != a.Token+1 {
		t.Errorf("token after an expiry = %d, want %d", b.Token, a.Token+1)
	}
	wantHeld(t, s, "controller", "n1", "n2") // the old holder's renewal is refused

	// A holder whose lease expired, and that nobody took since, keeps its
	// token when it renews: no one else acted in between.
	c := mustAcquire(t, s, "tiering/1", "n3", ttl)
	waitExpired(t, e, s, "tiering/1", 10*time.Millisecond)
	if again := mustAcquire(t, s, "tiering/1", "n3", ttl); again.Token != c.Token {
		t.Errorf("renewal after an untaken expiry: token %d, want %d", again.Token, c.Token)
	}
}

func testLeaseFencingTokens(t *testing.T, e *env) {
	ctx, s := context.Background(), e.store(t)
	var last int64
	for i, holder := range []string{"n1", "n2", "n3", "n1", "n1", "n2"} {
		l := mustAcquire(t, s, "controller", holder, time.Minute)
		if l.Token <= last {
			t.Fatalf("holder %d (%s): token %d, not above %d", i, holder, l.Token, last)
		}
		last = l.Token
		if r := mustAcquire(t, s, "controller", holder, time.Minute); r.Token != l.Token {
			t.Fatalf("renewal by %s: token %d, want %d", holder, r.Token, l.Token)
		}
		if err := s.ReleaseLease(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	// Tokens survive a reopen: they are stored, not counted in memory.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if l := mustAcquire(t, e.store(t), "controller", "n9", time.Minute); l.Token != last+1 {
		t.Errorf("token after reopen = %d, want %d", l.Token, last+1)
	}
}
