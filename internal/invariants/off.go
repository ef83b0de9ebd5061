//go:build !invariants

package invariants

// Enabled is false: build with -tags invariants to turn the checks on.
const Enabled = false
