package vfs

import (
	"fmt"
	"os"
	"sync/atomic"
)

// Op names a MemFS operation, for error injection.
type Op uint8

// The operations MemFS reports to its injection hook. File.Size and
// FS.Stat report OpStat; FS.RemoveAll reports OpRemove; File.Close reports
// nothing, because a close that fails would leave tests nothing to assert.
const (
	OpCreate Op = iota
	OpOpen
	OpWrite
	OpSync
	OpTruncate
	OpRemove
	OpRename
	OpSyncDir
	OpList
	OpMkdir
	OpStat
	OpRead
)

var opNames = [...]string{
	OpCreate:   "create",
	OpOpen:     "open",
	OpWrite:    "write",
	OpSync:     "sync",
	OpTruncate: "truncate",
	OpRemove:   "remove",
	OpRename:   "rename",
	OpSyncDir:  "syncdir",
	OpList:     "list",
	OpMkdir:    "mkdir",
	OpStat:     "stat",
	OpRead:     "read",
}

func (op Op) String() string {
	if int(op) < len(opNames) {
		return opNames[op]
	}
	return fmt.Sprintf("Op(%d)", op)
}

// Injector decides whether an operation fails: a non-nil error fails it
// before it has any effect. It may be called from several goroutines at once.
type Injector func(op Op, name string) error

// FailNth returns an Injector that fails the nth (1-based) operation of kind
// op with err, and lets every other operation through. Tests use it to fail
// "the third write" or "the first sync" without counting by hand.
func FailNth(op Op, n int, err error) Injector {
	var seen atomic.Int64
	return func(o Op, _ string) error {
		if o == op && seen.Add(1) == int64(n) {
			return err
		}
		return nil
	}
}

// injector holds the hook of a MemFS. An atomic pointer rather than a field
// under MemFS.mu, so that the hook runs without any MemFS lock held and may
// block or call back into the filesystem.
type injector struct {
	fn atomic.Pointer[Injector]
}

func (in *injector) set(fn Injector) {
	if fn == nil {
		in.fn.Store(nil)
		return
	}
	in.fn.Store(&fn)
}

// check runs the hook, if any, and wraps its error like package os does, so
// callers see the operation and the name.
func (in *injector) check(op Op, name string) error {
	p := in.fn.Load()
	if p == nil {
		return nil
	}
	if err := (*p)(op, name); err != nil {
		return &os.PathError{Op: op.String(), Path: name, Err: err}
	}
	return nil
}
