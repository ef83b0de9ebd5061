//go:build invariants

package invariants

// Enabled is true: this build has the "invariants" tag.
const Enabled = true
