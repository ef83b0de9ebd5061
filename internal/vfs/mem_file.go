package vfs

import (
	"io"
	"os"
	"slices"
	"sync/atomic"
	"syscall"
)

// memFile is an open handle on a MemFS file. Handles on the same file share
// its node, so a reader sees everything any writer has written, synced or not,
// as readers of the page cache do.
type memFile struct {
	fs       *MemFS
	n        *memNode
	name     string
	writable bool
	closed   atomic.Bool
}

// guard reports a closed handle, then asks the injection hook.
func (f *memFile) guard(op Op) error {
	if f.closed.Load() {
		return pathErr(op.String(), f.name, os.ErrClosed)
	}
	return f.fs.inject.check(op, f.name)
}

// Write appends p to the file.
func (f *memFile) Write(p []byte) (int, error) {
	if err := f.guard(OpWrite); err != nil {
		return 0, err
	}
	if !f.writable {
		return 0, pathErr("write", f.name, syscall.EBADF)
	}
	full := false
	if free := f.fs.space.Load(); free != nil {
		p, full = take(free, p)
	}
	f.fs.crash.RLock()
	defer f.fs.crash.RUnlock()
	n := f.n
	n.mu.Lock()
	n.mu.data = append(n.mu.data, p...)
	n.mu.Unlock()
	if full {
		return len(p), pathErr("write", f.name, syscall.ENOSPC)
	}
	return len(p), nil
}

// take takes room for p out of free (LimitSpace) and returns the part of p
// that fits, and whether that is less than p.
func take(free *atomic.Int64, p []byte) ([]byte, bool) {
	for {
		avail := free.Load()
		n := min(max(avail, 0), int64(len(p)))
		if free.CompareAndSwap(avail, avail-n) {
			return p[:n], n < int64(len(p))
		}
	}
}

// ReadAt follows io.ReaderAt: a short read returns io.EOF.
func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	if err := f.guard(OpRead); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, pathErr("read", f.name, syscall.EINVAL)
	}
	n := f.n
	n.mu.Lock()
	defer n.mu.Unlock()
	if off >= int64(len(n.mu.data)) {
		return 0, io.EOF
	}
	c := copy(p, n.mu.data[off:])
	if c < len(p) {
		return c, io.EOF
	}
	return c, nil
}

// Sync makes the file's current data what survives a crash.
func (f *memFile) Sync() error {
	if err := f.guard(OpSync); err != nil {
		return err
	}
	f.fs.crash.RLock()
	defer f.fs.crash.RUnlock()
	n := f.n
	n.mu.Lock()
	n.mu.synced = n.mu.data
	n.mu.Unlock()
	return nil
}

// Truncate cuts or zero-extends the file to size; it is durable after Sync.
func (f *memFile) Truncate(size int64) error {
	if err := f.guard(OpTruncate); err != nil {
		return err
	}
	if !f.writable {
		return pathErr("truncate", f.name, syscall.EBADF)
	}
	if size < 0 {
		return pathErr("truncate", f.name, syscall.EINVAL)
	}
	f.fs.crash.RLock()
	defer f.fs.crash.RUnlock()
	n := f.n
	n.mu.Lock()
	defer n.mu.Unlock()
	switch d := n.mu.data; {
	case size > int64(len(d)):
		// synced shares d's array only while len(synced) <= len(d), so
		// growing in place cannot change what synced shows.
		n.mu.data = append(d, make([]byte, size-int64(len(d)))...)
	case size < int64(len(n.mu.synced)):
		// Later appends would overwrite bytes that synced may still show
		// through a shared array: cut a copy instead.
		n.mu.data = slices.Clone(d[:size])
	default:
		n.mu.data = d[:size]
	}
	return nil
}

// Size is the length of everything written, synced or not.
func (f *memFile) Size() (int64, error) {
	if err := f.guard(OpStat); err != nil {
		return 0, err
	}
	f.n.mu.Lock()
	defer f.n.mu.Unlock()
	return int64(len(f.n.mu.data)), nil
}

// Close releases the handle; a second Close returns os.ErrClosed, as with
// *os.File.
func (f *memFile) Close() error {
	if f.closed.Swap(true) {
		return pathErr("close", f.name, os.ErrClosed)
	}
	return nil
}

func (f *memFile) Name() string { return f.name }
