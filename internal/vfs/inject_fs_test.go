package vfs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
)

// TestWithInjector: the hook sees every operation of the wrapped
// filesystem and of its files, and the one it fails has no effect.
func TestWithInjector(t *testing.T) {
	errBoom := errors.New("boom")
	dir := t.TempDir()
	var mu sync.Mutex
	var seen []string
	fail := OpSync
	fs := WithInjector(OS(), func(op Op, name string) error {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, fmt.Sprintf("%v %s", op, filepath.Base(name)))
		if op == fail {
			return errBoom
		}
		return nil
	})
	must(t, fs.MkdirAll(filepath.Join(dir, "d"), 0o755))
	name := filepath.Join(dir, "d", "f")
	f, err := fs.Create(name)
	must(t, err)
	_, err = f.Write([]byte("abc"))
	must(t, err)
	err = f.Sync()
	var pe *os.PathError
	if !errors.Is(err, errBoom) || !errors.As(err, &pe) || pe.Op != "sync" || pe.Path != name {
		t.Errorf("Sync: %v, want an *os.PathError wrapping boom", err)
	}
	mu.Lock()
	fail = OpWrite
	mu.Unlock()
	if _, err := f.Write([]byte("def")); !errors.Is(err, errBoom) {
		t.Errorf("Write: %v, want boom", err)
	}
	if n, err := f.Size(); err != nil || n != 3 {
		t.Errorf("Size after a failed write: %d, %v; want 3", n, err)
	}
	must(t, f.Truncate(1))
	must(t, f.Close())
	must(t, fs.SyncDir(filepath.Join(dir, "d")))
	mu.Lock()
	defer mu.Unlock()
	want := []string{"mkdir d", "create f", "write f", "sync f", "write f", "stat f", "truncate f", "syncdir d"}
	if !slices.Equal(seen, want) {
		t.Errorf("operations seen:\n got %q\nwant %q", seen, want)
	}
}
