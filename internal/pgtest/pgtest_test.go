package pgtest

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// stopped is what fakeTB's Fatalf and Skipf panic with: like the real
// ones, they end the caller.
type stopped struct{ how, msg string }

// fakeTB records how ForTest ended a test.
type fakeTB struct{ cleanups []func() }

func (f *fakeTB) Helper()           {}
func (f *fakeTB) Cleanup(fn func()) { f.cleanups = append(f.cleanups, fn) }
func (f *fakeTB) Fatalf(format string, args ...any) {
	panic(stopped{"fatal", fmt.Sprintf(format, args...)})
}
func (f *fakeTB) Skipf(format string, args ...any) {
	panic(stopped{"skip", fmt.Sprintf(format, args...)})
}

// forTest runs ForTest on f and returns how it stopped the test.
func forTest(f *fakeTB, opts Options) (st stopped) {
	defer func() {
		if r := recover(); r != nil {
			st = r.(stopped)
		}
	}()
	ForTest(f, opts)
	return stopped{how: "ran"}
}

func TestForTestWithoutPostgres(t *testing.T) {
	opts := Options{BinDir: t.TempDir()} // no initdb there
	t.Setenv("CI", "")
	if st := forTest(&fakeTB{}, opts); st.how != "skip" || !strings.Contains(st.msg, "initdb not found") {
		t.Errorf("without CI: %+v, want a skip saying why", st)
	}
	t.Setenv("CI", "true")
	if st := forTest(&fakeTB{}, opts); st.how != "fatal" || !strings.Contains(st.msg, "CI=true") {
		t.Errorf("under CI=true: %+v, want a failure saying why", st)
	}
}

func TestStart(t *testing.T) {
	s := ForTest(t, Options{Settings: []string{"max_connections=20"}})
	ctx := context.Background()
	uri, err := s.CreateDatabase(ctx, "scratch")
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var mc string
	if err := c.QueryRow(ctx, "SHOW max_connections").Scan(&mc); err != nil || mc != "20" {
		t.Errorf("max_connections = %q, %v; want the setting passed, 20", mc, err)
	}
	if s.Version == "" || !strings.Contains(uri, "/scratch?") {
		t.Errorf("version %q, uri %q", s.Version, uri)
	}
}
