package vfs

import (
	"bytes"
	"maps"
	"math/rand/v2"
	"slices"
)

// CrashOptions shape what CrashClone keeps beyond the durable state.
type CrashOptions struct {
	// KeepUnsynced keeps, for each file, part of what was written after its
	// last Sync, as a crash does when the kernel had already written back
	// some dirty pages. The default keeps none of it.
	KeepUnsynced bool
	// Rand picks how much of each unsynced tail is kept, from none to all
	// of it, so a torn write lands at a random byte. Nil keeps every tail
	// whole. Files are visited in name order, so a seeded Rand gives the
	// same clone every run.
	Rand *rand.Rand
	// TornGarbage also overwrites a few random bytes of each kept unsynced
	// tail, as a sector written half-way can. It needs KeepUnsynced and a
	// Rand.
	TornGarbage bool
}

// CrashClone returns a new MemFS holding what a crash at this instant could
// leave: each directory with only its durable entries, each file with only
// its synced data, and, when opts ask for it, a torn part of the unsynced
// tail. The receiver is not changed and stays usable; open handles and the
// injection hook are not carried over.
//
// A file reachable under two durable names (a rename whose old directory was
// not synced) becomes two independent files, not one file with two links:
// recovery code must not depend on which it gets.
//
// CrashClone panics if TornGarbage is set without KeepUnsynced and a Rand,
// a misconfigured test rather than a runtime condition.
func (m *MemFS) CrashClone(opts CrashOptions) *MemFS {
	if opts.TornGarbage && (!opts.KeepUnsynced || opts.Rand == nil) {
		panic("vfs: CrashOptions.TornGarbage needs KeepUnsynced and Rand")
	}
	m.crash.Lock()
	defer m.crash.Unlock()
	m.mu.Lock()
	defer m.mu.Unlock()
	c := NewMem()
	c.mu.root = crashDirLocked(m.mu.root, &opts)
	return c
}

// crashDirLocked copies the durable entries of d, recursively. MemFS.mu is
// held, so no directory changes under it.
func crashDirLocked(d *memNode, opts *CrashOptions) *memNode {
	out := newDir(d.mode)
	for _, name := range slices.Sorted(maps.Keys(d.durable)) {
		child := d.durable[name]
		var cc *memNode
		if child.isDir() {
			cc = crashDirLocked(child, opts)
		} else {
			cc = newFile()
			cc.mode = child.mode
			cc.mu.data = crashData(child, opts)
			cc.mu.synced = cc.mu.data
		}
		out.children[name] = cc
		out.durable[name] = cc
	}
	return out
}

// crashData returns the content file n could have after a crash, in a new
// array.
func crashData(n *memNode, opts *CrashOptions) []byte {
	n.mu.Lock()
	defer n.mu.Unlock()
	data, synced := n.mu.data, n.mu.synced
	if !opts.KeepUnsynced {
		return bytes.Clone(synced)
	}
	// Appended since the last Sync, the usual case for a log.
	base := len(synced)
	if !bytes.HasPrefix(data, synced) {
		// Cut (Create, Truncate) and maybe rewritten since the last Sync:
		// either the cut reached the disk, with part of what followed, or
		// nothing did.
		if opts.Rand != nil && opts.Rand.IntN(2) == 0 {
			return bytes.Clone(synced)
		}
		base = commonPrefix(data, synced)
	}
	tail := data[base:]
	keep := len(tail)
	if opts.Rand != nil {
		keep = opts.Rand.IntN(len(tail) + 1)
	}
	out := bytes.Clone(data[:base+keep])
	if opts.TornGarbage {
		garble(out[base:], opts.Rand)
	}
	return out
}

// garble changes between one and eight distinct random bytes of b (no more
// than len(b)), so a non-empty b always ends up different.
func garble(b []byte, r *rand.Rand) {
	if len(b) == 0 {
		return
	}
	var done [8]int
	k := 1 + r.IntN(min(len(b), 8))
	for i := 0; i < k; {
		pos := r.IntN(len(b))
		if slices.Contains(done[:i], pos) {
			continue
		}
		b[pos] ^= byte(1 + r.IntN(255)) // never 0: the byte changes
		done[i] = pos
		i++
	}
}

func commonPrefix(a, b []byte) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}
