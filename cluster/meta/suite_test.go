package meta

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lakestream/lakestream/internal/pgtest"
)

// The conformance suite: every Store implementation runs the same tests
// (runSuite), each on a fresh, empty store.

// env is one test's store: open gives another handle to it (another node,
// another connection pool); clock is its clock when the test controls it
// (SQLite), nil when the store decides expiry by real time (PostgreSQL).
type env struct {
	openStore func(opts Options) (Store, error)
	clock     *fakeClock
}

// open opens a handle with opts, closed when the test ends.
func (e *env) open(t *testing.T, opts Options) Store {
	t.Helper()
	s, err := e.openStore(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeStore(t, s) })
	return s
}

// store opens a handle with default options (and the test's clock).
func (e *env) store(t *testing.T) Store { return e.open(t, Options{}) }

// tick lets time pass for a condition wait: the fake clock moves by d; on
// a real clock it waits d.
func (e *env) tick(d time.Duration) {
	if e.clock != nil {
		e.clock.Advance(d)
		return
	}
	<-time.After(d)
}

// now is the env's clock.
func (e *env) now() time.Time {
	if e.clock != nil {
		return e.clock.Now()
	}
	return time.Now()
}

// fakeClock is a clock that moves only when told; safe for concurrent use.
type fakeClock struct{ us atomic.Int64 }

func newFakeClock() *fakeClock {
	c := &fakeClock{}
	c.us.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro())
	return c
}

func (c *fakeClock) Now() time.Time          { return time.UnixMicro(c.us.Load()) }
func (c *fakeClock) Advance(d time.Duration) { c.us.Add(d.Microseconds()) }

func TestSQLite(t *testing.T) {
	runSuite(t, func(t *testing.T) *env {
		path := filepath.Join(t.TempDir(), "meta.db")
		clock := newFakeClock()
		return &env{clock: clock, openStore: func(opts Options) (Store, error) {
			if opts.Now == nil {
				opts.Now = clock.Now
			}
			return OpenSQLiteWith(path, opts)
		}}
	})
}

func TestMem(t *testing.T) {
	runSuite(t, func(t *testing.T) *env {
		clock := newFakeClock()
		m := NewMem(Options{Now: clock.Now})
		return &env{clock: clock, openStore: func(Options) (Store, error) { return m.Handle(), nil }}
	})
}

func TestPostgres(t *testing.T) {
	// Test settings: nothing here needs durability across a crash.
	srv := pgtest.ForTest(t, pgtest.Options{Settings: []string{"fsync=off", "synchronous_commit=off", "max_connections=200"}})
	var dbs atomic.Int64
	runSuite(t, func(t *testing.T) *env {
		uri, err := srv.CreateDatabase(context.Background(), fmt.Sprintf("meta_%d", dbs.Add(1)))
		if err != nil {
			t.Fatal(err)
		}
		return &env{openStore: func(opts Options) (Store, error) {
			return OpenPostgresWith(context.Background(), uri, opts)
		}}
	})
}

func closeStore(t testing.TB, s Store) {
	if err := s.Close(); err != nil && !errors.Is(err, ErrClosed) {
		t.Errorf("close: %v", err)
	}
}

// runSuite runs every conformance test against the stores newEnv makes.
func runSuite(t *testing.T, newEnv func(t *testing.T) *env) {
	tests := []struct {
		name string
		fn   func(t *testing.T, e *env)
	}{
		{"CreateAndRead", testCreateAndRead},
		{"CreateAllOrNone", testCreateAllOrNone},
		{"Invalid", testInvalid},
		{"UpdateCAS", testUpdateCAS},
		{"EpochRule", testEpochRule},
		{"DeleteTable", testDeleteTable},
		{"Changes", testChanges},
		{"Reopen", testReopen},
		{"ConcurrentOpen", testConcurrentOpen},
		{"Closed", testClosed},
		{"LeaseAcquireRenewRelease", testLeaseAcquireRenewRelease},
		{"LeaseExpiry", testLeaseExpiry},
		{"LeaseFencingTokens", testLeaseFencingTokens},
		{"ConcurrentModel", testConcurrentModel},
		{"Secret", testSecret},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, newEnv(t)) })
	}
}

// A node that stops inside a write transaction — frozen, as the cluster's
// fault tests freeze a leader with SIGSTOP — holds the write lock that
// every other write waits for. The server ends its session once it is idle
// in the transaction for idleInTxTimeout, and the others' writes go on:
// here a lease is taken over while another handle's transaction holds the
// lock and does nothing more. Without the timeout the acquisition waits
// until its deadline.
func TestPostgresFrozenWriterReleasesTheLock(t *testing.T) {
	srv := pgtest.ForTest(t, pgtest.Options{Settings: []string{"fsync=off"}})
	uri, err := srv.CreateDatabase(context.Background(), "frozen")
	if err != nil {
		t.Fatal(err)
	}
	frozen, err := OpenPostgres(context.Background(), uri)
	if err != nil {
		t.Fatal(err)
	}
	defer closeStore(t, frozen)
	other, err := OpenPostgres(context.Background(), uri)
	if err != nil {
		t.Fatal(err)
	}
	defer closeStore(t, other)
	tx, err := frozen.db.BeginTx(context.Background(), frozen.d.txOptions)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(context.Background(), frozen.d.lockWrites); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := other.AcquireLease(ctx, "controller", "n2", 3*time.Second); err != nil {
		t.Fatalf("a lease while another session holds the write lock, idle: %v", err)
	}
	if _, err := tx.ExecContext(context.Background(), "SELECT 1"); err == nil {
		t.Fatal("the frozen session's transaction went on after the server ended it")
	}
}
