// Package invariants switches on run-time checks of the invariants that
// Lakestream's storage code relies on, after pebble's internal/invariants.
//
// Enabled is a constant: true when built with the "invariants" tag (make test
// does), false otherwise. A check guarded by it,
//
//	// Invariant: committed <= written end.
//	if invariants.Enabled && committed > next {
//		invariants.Failf("committed <= written end", "committed %d, end %d", committed, next)
//	}
//
// is removed by the compiler from ordinary builds, so checks may be as
// thorough as a test needs without costing production anything.
//
// A broken invariant is a bug in the code, never a condition of the data on
// disk: damaged files are reported as errors (columnarlog.ErrCorrupt), not
// checked here.
//
// invariants imports only the standard library.
package invariants

import "fmt"

// Violation is the value Failf panics with: which invariant broke, and how.
type Violation struct {
	// Invariant names the broken invariant, as stated in the comment at
	// the check.
	Invariant string
	// Detail gives the values that broke it.
	Detail string
}

func (v *Violation) Error() string {
	return fmt.Sprintf("invariant violated: %s: %s", v.Invariant, v.Detail)
}

// Failf panics with a *Violation of the named invariant. Call it only under
// an Enabled guard, for a condition that no input can bring about.
func Failf(invariant, format string, args ...any) {
	panic(&Violation{Invariant: invariant, Detail: fmt.Sprintf(format, args...)})
}
