package invariants

import (
	"errors"
	"strings"
	"testing"
)

func TestFailfPanicsWithTheInvariant(t *testing.T) {
	defer func() {
		r := recover()
		err, ok := r.(error)
		var v *Violation
		if !ok || !errors.As(err, &v) {
			t.Fatalf("Failf panicked with %#v, want a *Violation", r)
		}
		if v.Invariant != "a <= b" || v.Detail != "a 2, b 1" {
			t.Fatalf("violation %+v", v)
		}
		if msg := err.Error(); !strings.Contains(msg, "a <= b") || !strings.Contains(msg, "a 2, b 1") {
			t.Fatalf("message %q does not name the invariant and its values", msg)
		}
	}()
	Failf("a <= b", "a %d, b %d", 2, 1)
	t.Fatal("Failf returned")
}
