package pgtest

import (
	"context"
	"errors"
	"os"
)

// TB is the part of testing.TB that ForTest needs (this package does not
// import testing: the bench links it into the binary).
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
	Skipf(format string, args ...any)
	Cleanup(func())
}

// ForTest starts a server for a test and stops it when the test ends.
// Without PostgreSQL binaries the test fails when the environment variable
// CI is "true" (CI must run it) and is skipped, saying why, otherwise.
func ForTest(t TB, opts Options) *Server {
	t.Helper()
	s, err := Start(context.Background(), opts)
	if errors.Is(err, ErrNoPostgres) {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%v (CI=true: the PostgreSQL tests must run; install postgresql)", err)
		}
		t.Skipf("%v: skipping the PostgreSQL tests (they fail instead under CI=true)", err)
	}
	if err != nil {
		t.Fatalf("start PostgreSQL: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Fatalf("stop PostgreSQL: %v", err)
		}
	})
	return s
}
