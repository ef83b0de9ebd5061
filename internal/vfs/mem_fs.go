package vfs

import (
	"maps"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// MemFS is an in-memory FS that models durability the way a POSIX filesystem
// offers it, after pebble's vfs.MemFS:
//
//   - a file's data becomes durable only when File.Sync is called;
//   - a creation, removal or rename becomes durable only when the directory
//     holding the entry is synced with SyncDir (a rename across directories
//     needs both synced);
//   - directories made by MkdirAll are durable at once (the OS implementation
//     syncs their parents to match).
//
// CrashClone returns the filesystem as a crash could leave it, InjectError
// fails chosen operations and LimitSpace fills the disk, so crash and
// I/O-error tests are ordinary unit tests. MemFS is safe for concurrent use.
//
// Paths are slash-separated; relative and absolute names are the same (both
// are taken from the root), and "." and ".." are resolved lexically. MemFS
// keeps no times: ModTime is always zero, so tests are deterministic.
type MemFS struct {
	inject injector
	// space, when set, is the room left for writes (LimitSpace).
	space atomic.Pointer[atomic.Int64]
	// crash makes CrashClone an instant: file writes, syncs and truncates
	// hold it shared, CrashClone exclusively, so a clone never sees one
	// file synced after another was copied.
	crash sync.RWMutex
	// mu guards the namespace: the children and durable maps of every
	// directory. File contents have their own lock (memNode.mu); the lock
	// order is MemFS.mu, then memNode.mu.
	mu struct {
		sync.Mutex
		root *memNode
	}
}

// memNode is a directory (children != nil) or a file.
type memNode struct {
	mode os.FileMode

	// Directories only, guarded by MemFS.mu.
	children map[string]*memNode // entries now
	durable  map[string]*memNode // entries as of the last SyncDir

	// Files only. synced may share data's backing array: writes only append
	// past len(synced), and Truncate copies data before cutting below
	// len(synced), so Sync is O(1) rather than a copy of the whole file.
	mu struct {
		sync.Mutex
		data   []byte // everything written, as readers see it
		synced []byte // what survives a crash
	}
}

func newDir(perm os.FileMode) *memNode {
	return &memNode{
		mode:     os.ModeDir | perm.Perm(),
		children: map[string]*memNode{},
		durable:  map[string]*memNode{},
	}
}

func newFile() *memNode { return &memNode{mode: 0o644} }

func (n *memNode) isDir() bool { return n.children != nil }

// NewMem returns an empty MemFS holding only the root directory.
func NewMem() *MemFS {
	m := &MemFS{}
	m.mu.root = newDir(0o755)
	return m
}

// InjectError installs fn, which is called before every operation with the
// operation and the name it acts on; a non-nil error fails the operation
// before it has any effect, wrapped in an *os.PathError. nil removes the hook.
func (m *MemFS) InjectError(fn func(op Op, name string) error) {
	m.inject.set(fn)
}

// LimitSpace makes free the bytes left for writes: a write takes its length
// from it, and a write that does not fit writes what does and fails with
// syscall.ENOSPC, as write(2) does when the disk fills up during the call.
// Only writes count: removing or truncating a file gives nothing back, and
// Create, Sync and the rest go through, so a test decides when space comes
// back by storing more in free. nil removes the limit.
func (m *MemFS) LimitSpace(free *atomic.Int64) {
	m.space.Store(free)
}

// splitPath cleans name and returns its components; the root has none.
func splitPath(name string) []string {
	p := path.Clean("/" + name)
	if p == "/" {
		return nil
	}
	return strings.Split(p[1:], "/")
}

func pathErr(op, name string, err error) error {
	return &os.PathError{Op: op, Path: name, Err: err}
}

// walkLocked returns the node at parts.
func (m *MemFS) walkLocked(op, name string, parts []string) (*memNode, error) {
	n := m.mu.root
	for _, p := range parts {
		if !n.isDir() {
			return nil, pathErr(op, name, syscall.ENOTDIR)
		}
		c, ok := n.children[p]
		if !ok {
			return nil, pathErr(op, name, os.ErrNotExist)
		}
		n = c
	}
	return n, nil
}

// parentLocked returns the directory that holds name, and name's last
// component. The entry itself need not exist.
func (m *MemFS) parentLocked(op, name string) (*memNode, string, error) {
	parts := splitPath(name)
	if len(parts) == 0 {
		return nil, "", pathErr(op, name, syscall.EINVAL) // the root has no parent
	}
	dir, err := m.walkLocked(op, name, parts[:len(parts)-1])
	if err != nil {
		return nil, "", err
	}
	if !dir.isDir() {
		return nil, "", pathErr(op, name, syscall.ENOTDIR)
	}
	return dir, parts[len(parts)-1], nil
}

// Create creates name, or truncates it if it exists. Truncating an existing
// file keeps its entry (and the entry's durability) and, like O_TRUNC, is
// itself durable only after the next Sync.
func (m *MemFS) Create(name string) (File, error) {
	if err := m.inject.check(OpCreate, name); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	dir, base, err := m.parentLocked("open", name)
	if err != nil {
		return nil, err
	}
	n, ok := dir.children[base]
	switch {
	case !ok:
		n = newFile()
		dir.children[base] = n
	case n.isDir():
		return nil, pathErr("open", name, syscall.EISDIR)
	default:
		n.mu.Lock()
		n.mu.data = nil // a new array: synced may share the old one
		n.mu.Unlock()
	}
	return &memFile{fs: m, n: n, name: name, writable: true}, nil
}

// OpenAppend opens an existing file for reading and appending.
func (m *MemFS) OpenAppend(name string) (File, error) { return m.open(name, true) }

// Open opens an existing file read-only.
func (m *MemFS) Open(name string) (File, error) { return m.open(name, false) }

func (m *MemFS) open(name string, writable bool) (File, error) {
	if err := m.inject.check(OpOpen, name); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.walkLocked("open", name, splitPath(name))
	if err != nil {
		return nil, err
	}
	if n.isDir() {
		return nil, pathErr("open", name, syscall.EISDIR)
	}
	return &memFile{fs: m, n: n, name: name, writable: writable}, nil
}

// Remove removes a file or an empty directory. Open handles keep working on
// the removed file, as on POSIX.
func (m *MemFS) Remove(name string) error {
	if err := m.inject.check(OpRemove, name); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	dir, base, err := m.parentLocked("remove", name)
	if err != nil {
		return err
	}
	n, ok := dir.children[base]
	if !ok {
		return pathErr("remove", name, os.ErrNotExist)
	}
	if n.isDir() && len(n.children) > 0 {
		return pathErr("remove", name, syscall.ENOTEMPTY)
	}
	delete(dir.children, base)
	return nil
}

// RemoveAll removes name and everything under it; a missing name is not an
// error, as with os.RemoveAll.
func (m *MemFS) RemoveAll(name string) error {
	if err := m.inject.check(OpRemove, name); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	dir, base, err := m.parentLocked("removeall", name)
	if err != nil {
		if len(splitPath(name)) == 0 {
			return err // refuse to remove the root
		}
		return nil // a missing parent means a missing name
	}
	delete(dir.children, base)
	return nil
}

// Rename moves oldname to newname, replacing a file at newname. Like
// os.Rename, it refuses an existing directory as newname.
func (m *MemFS) Rename(oldname, newname string) error {
	if err := m.inject.check(OpRename, oldname); err != nil {
		return err
	}
	linkErr := func(err error) error {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: err}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	odir, obase, err := m.parentLocked("rename", oldname)
	if err != nil {
		return linkErr(unwrapPathErr(err))
	}
	ndir, nbase, err := m.parentLocked("rename", newname)
	if err != nil {
		return linkErr(unwrapPathErr(err))
	}
	src, ok := odir.children[obase]
	if !ok {
		return linkErr(os.ErrNotExist)
	}
	if dst, ok := ndir.children[nbase]; ok {
		switch {
		case dst.isDir():
			// os.Rename refuses any existing directory as the target,
			// even an empty one and even the source itself.
			return linkErr(syscall.EEXIST)
		case dst == src:
			return nil
		case src.isDir():
			return linkErr(syscall.ENOTDIR)
		}
	}
	if src.isDir() && isWithin(splitPath(newname), splitPath(oldname)) {
		return linkErr(syscall.EINVAL) // a directory cannot move into itself
	}
	delete(odir.children, obase)
	ndir.children[nbase] = src
	return nil
}

// isWithin reports whether p is dir or lies under it.
func isWithin(p, dir []string) bool {
	return len(p) >= len(dir) && slices.Equal(p[:len(dir)], dir)
}

func unwrapPathErr(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}

// MkdirAll creates dir and its missing parents. The directories it creates
// are durable at once: their entries go into the durable entries of their
// parents without a SyncDir.
func (m *MemFS) MkdirAll(dir string, perm os.FileMode) error {
	if err := m.inject.check(OpMkdir, dir); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	n := m.mu.root
	for _, p := range splitPath(dir) {
		c, ok := n.children[p]
		if !ok {
			c = newDir(perm)
			n.children[p] = c
			n.durable[p] = c
		} else if !c.isDir() {
			return pathErr("mkdir", dir, syscall.ENOTDIR)
		}
		n = c
	}
	return nil
}

// List returns the sorted names of the entries of dir.
func (m *MemFS) List(dir string) ([]string, error) {
	if err := m.inject.check(OpList, dir); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.walkLocked("open", dir, splitPath(dir))
	if err != nil {
		return nil, err
	}
	if !n.isDir() {
		return nil, pathErr("readdirent", dir, syscall.ENOTDIR)
	}
	return slices.Sorted(maps.Keys(n.children)), nil
}

// Stat describes name.
func (m *MemFS) Stat(name string) (os.FileInfo, error) {
	if err := m.inject.check(OpStat, name); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	parts := splitPath(name)
	n, err := m.walkLocked("stat", name, parts)
	if err != nil {
		return nil, err
	}
	base := "/"
	if len(parts) > 0 {
		base = parts[len(parts)-1]
	}
	fi := memFileInfo{name: base, mode: n.mode}
	if !n.isDir() {
		n.mu.Lock()
		fi.size = int64(len(n.mu.data))
		n.mu.Unlock()
	}
	return fi, nil
}

// SyncDir makes the current entries of dir durable.
func (m *MemFS) SyncDir(dir string) error {
	if err := m.inject.check(OpSyncDir, dir); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.walkLocked("open", dir, splitPath(dir))
	if err != nil {
		return err
	}
	if !n.isDir() {
		return pathErr("sync", dir, syscall.ENOTDIR)
	}
	n.durable = maps.Clone(n.children)
	return nil
}

type memFileInfo struct {
	name string
	size int64
	mode os.FileMode
}

func (fi memFileInfo) Name() string       { return fi.name }
func (fi memFileInfo) Size() int64        { return fi.size }
func (fi memFileInfo) Mode() os.FileMode  { return fi.mode }
func (fi memFileInfo) ModTime() time.Time { return time.Time{} }
func (fi memFileInfo) IsDir() bool        { return fi.mode.IsDir() }
func (fi memFileInfo) Sys() any           { return nil }
