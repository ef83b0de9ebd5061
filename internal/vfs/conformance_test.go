package vfs

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
)

// impls are the FS implementations every behaviour below must hold for. Each
// constructor returns a fresh filesystem and an existing, empty directory in
// it to work under.
var impls = []struct {
	name string
	new  func(t *testing.T) (FS, string)
}{
	{"os", func(t *testing.T) (FS, string) { return OS(), t.TempDir() }},
	// The real filesystem behind a hook that lets everything through.
	{"os-injected", func(t *testing.T) (FS, string) {
		return WithInjector(OS(), func(Op, string) error { return nil }), t.TempDir()
	}},
	{"mem", func(t *testing.T) (FS, string) {
		fs := NewMem()
		must(t, fs.MkdirAll("/data/test", 0o755))
		return fs, "/data/test"
	}},
}

// TestConformance runs each behaviour against each implementation, so MemFS
// cannot drift from what the real filesystem does.
func TestConformance(t *testing.T) {
	cases := []struct {
		name string
		fn   func(t *testing.T, fs FS, dir string)
	}{
		{"CreateWriteRead", testCreateWriteRead},
		{"CreateTruncates", testCreateTruncates},
		{"OpenAppend", testOpenAppend},
		{"OpenReadOnly", testOpenReadOnly},
		{"NotExist", testNotExist},
		{"ReadWhileAppending", testReadWhileAppending},
		{"Truncate", testTruncate},
		{"Rename", testRename},
		{"Remove", testRemove},
		{"List", testList},
		{"Stat", testStat},
		{"Closed", testClosed},
		{"Sync", testSync},
		{"MkdirAll", testMkdirAll},
	}
	for _, impl := range impls {
		t.Run(impl.name, func(t *testing.T) {
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					fs, dir := impl.new(t)
					c.fn(t, fs, dir)
				})
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// writeFile creates name holding data, synced, and closes it.
func writeFile(t *testing.T, fs FS, name, data string) {
	t.Helper()
	f, err := fs.Create(name)
	must(t, err)
	_, err = f.Write([]byte(data))
	must(t, err)
	must(t, f.Sync())
	must(t, f.Close())
}

// readAll reads the whole of f through ReadAt.
func readAll(t *testing.T, f File) string {
	t.Helper()
	size, err := f.Size()
	must(t, err)
	buf := make([]byte, size)
	n, err := f.ReadAt(buf, 0)
	if err != nil && !(err == io.EOF && n == len(buf)) {
		t.Fatalf("read %s: %v", f.Name(), err)
	}
	return string(buf[:n])
}

func readFile(t *testing.T, fs FS, name string) string {
	t.Helper()
	f, err := fs.Open(name)
	must(t, err)
	defer func() { must(t, f.Close()) }()
	return readAll(t, f)
}

func testCreateWriteRead(t *testing.T, fs FS, dir string) {
	name := filepath.Join(dir, "f")
	f, err := fs.Create(name)
	must(t, err)
	if f.Name() != name {
		t.Errorf("Name() = %q, want %q", f.Name(), name)
	}
	for _, s := range []string{"hello", " world"} {
		if n, err := f.Write([]byte(s)); err != nil || n != len(s) {
			t.Fatalf("Write(%q) = %d, %v", s, n, err)
		}
	}
	if got := readAll(t, f); got != "hello world" {
		t.Errorf("content = %q", got)
	}
	buf := make([]byte, 5)
	if n, err := f.ReadAt(buf, 6); n != 5 || err != nil || string(buf) != "world" {
		t.Errorf("ReadAt(6) = %d, %v, %q", n, err, buf)
	}
	if n, err := f.ReadAt(buf, 8); n != 3 || err != io.EOF || string(buf[:n]) != "rld" {
		t.Errorf("short ReadAt(8) = %d, %v, %q; want 3, EOF", n, err, buf[:n])
	}
	if n, err := f.ReadAt(buf, 11); n != 0 || err != io.EOF {
		t.Errorf("ReadAt at end = %d, %v; want 0, EOF", n, err)
	}
	if _, err := f.ReadAt(buf, -1); err == nil {
		t.Error("ReadAt(-1) succeeded")
	}
	must(t, f.Close())
}

func testCreateTruncates(t *testing.T, fs FS, dir string) {
	name := filepath.Join(dir, "f")
	writeFile(t, fs, name, "old content")
	f, err := fs.Create(name)
	must(t, err)
	if size, err := f.Size(); err != nil || size != 0 {
		t.Errorf("Size after Create of existing = %d, %v", size, err)
	}
	_, err = f.Write([]byte("new"))
	must(t, err)
	must(t, f.Close())
	if got := readFile(t, fs, name); got != "new" {
		t.Errorf("content = %q", got)
	}
}

func testOpenAppend(t *testing.T, fs FS, dir string) {
	name := filepath.Join(dir, "f")
	writeFile(t, fs, name, "abc")
	f, err := fs.OpenAppend(name)
	must(t, err)
	_, err = f.Write([]byte("def"))
	must(t, err)
	if got := readAll(t, f); got != "abcdef" {
		t.Errorf("content = %q", got)
	}
	must(t, f.Close())
}

func testOpenReadOnly(t *testing.T, fs FS, dir string) {
	name := filepath.Join(dir, "f")
	writeFile(t, fs, name, "abc")
	f, err := fs.Open(name)
	must(t, err)
	if _, err := f.Write([]byte("x")); err == nil {
		t.Error("Write on a file from Open succeeded")
	}
	if err := f.Truncate(0); err == nil {
		t.Error("Truncate on a file from Open succeeded")
	}
	if got := readAll(t, f); got != "abc" {
		t.Errorf("content = %q", got)
	}
	must(t, f.Close())
}

func testNotExist(t *testing.T, fs FS, dir string) {
	missing := filepath.Join(dir, "missing")
	check := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: err = %v, want ErrNotExist", what, err)
		}
	}
	_, err := fs.Open(missing)
	check("Open", err)
	_, err = fs.OpenAppend(missing)
	check("OpenAppend", err)
	_, err = fs.Stat(missing)
	check("Stat", err)
	_, err = fs.List(missing)
	check("List", err)
	check("Remove", fs.Remove(missing))
	check("Rename", fs.Rename(missing, filepath.Join(dir, "other")))
	check("SyncDir", fs.SyncDir(missing))
	_, err = fs.Create(filepath.Join(missing, "f"))
	check("Create in a missing directory", err)
	if err := fs.RemoveAll(missing); err != nil {
		t.Errorf("RemoveAll of a missing name: %v", err)
	}
}

// testReadWhileAppending checks that a reader sees unsynced writes of another
// handle, as the log's readers of an active segment must.
func testReadWhileAppending(t *testing.T, fs FS, dir string) {
	name := filepath.Join(dir, "f")
	w, err := fs.Create(name)
	must(t, err)
	r, err := fs.Open(name)
	must(t, err)
	var want []byte
	for i := range 100 {
		rec := bytes.Repeat([]byte{byte(i)}, i+1)
		_, err := w.Write(rec)
		must(t, err)
		want = append(want, rec...)
		if got := readAll(t, r); got != string(want) {
			t.Fatalf("after write %d the reader sees %d bytes, want %d", i, len(got), len(want))
		}
	}

	// The same with the reader in another goroutine, for the race detector.
	const n = 200
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range n {
			if _, err := w.Write([]byte{byte(i)}); err != nil {
				t.Error(err)
				return
			}
		}
	})
	base := int64(len(want))
	buf := make([]byte, 1)
	for i := int64(0); i < n; {
		nr, err := r.ReadAt(buf, base+i)
		if nr == 1 {
			if buf[0] != byte(i) {
				t.Fatalf("byte %d = %d, want %d", i, buf[0], byte(i))
			}
			i++
			continue
		}
		if err != io.EOF {
			t.Fatal(err)
		}
	}
	wg.Wait()
	must(t, w.Close())
	must(t, r.Close())
}

func testTruncate(t *testing.T, fs FS, dir string) {
	name := filepath.Join(dir, "f")
	f, err := fs.Create(name)
	must(t, err)
	_, err = f.Write([]byte("abcdef"))
	must(t, err)
	must(t, f.Sync())
	must(t, f.Truncate(3))
	if size, err := f.Size(); err != nil || size != 3 {
		t.Errorf("Size after Truncate(3) = %d, %v", size, err)
	}
	_, err = f.Write([]byte("XY"))
	must(t, err)
	if got := readAll(t, f); got != "abcXY" {
		t.Errorf("after Truncate(3) and a write: %q, want %q", got, "abcXY")
	}
	must(t, f.Truncate(7))
	if got := readAll(t, f); got != "abcXY\x00\x00" {
		t.Errorf("after Truncate(7): %q", got)
	}
	must(t, f.Close())

	// The same through OpenAppend.
	f, err = fs.OpenAppend(name)
	must(t, err)
	must(t, f.Truncate(1))
	_, err = f.Write([]byte("z"))
	must(t, err)
	must(t, f.Close())
	if got := readFile(t, fs, name); got != "az" {
		t.Errorf("OpenAppend, Truncate(1), write: %q, want %q", got, "az")
	}
}

func testRename(t *testing.T, fs FS, dir string) {
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	writeFile(t, fs, a, "A")
	must(t, fs.Rename(a, b))
	if _, err := fs.Stat(a); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("old name after Rename: %v", err)
	}
	if got := readFile(t, fs, b); got != "A" {
		t.Errorf("new name holds %q", got)
	}
	// Rename replaces an existing file.
	writeFile(t, fs, a, "A2")
	must(t, fs.Rename(a, b))
	if got := readFile(t, fs, b); got != "A2" {
		t.Errorf("replaced file holds %q", got)
	}
	// Into another directory.
	sub := filepath.Join(dir, "sub")
	must(t, fs.MkdirAll(sub, 0o755))
	must(t, fs.Rename(b, filepath.Join(sub, "c")))
	if got := readFile(t, fs, filepath.Join(sub, "c")); got != "A2" {
		t.Errorf("moved file holds %q", got)
	}
	// A file cannot replace a directory.
	writeFile(t, fs, a, "A3")
	if err := fs.Rename(a, sub); err == nil {
		t.Error("Rename of a file over a directory succeeded")
	}
}

func testRemove(t *testing.T, fs FS, dir string) {
	name := filepath.Join(dir, "f")
	writeFile(t, fs, name, "x")
	must(t, fs.Remove(name))
	if _, err := fs.Stat(name); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Stat after Remove: %v", err)
	}
	sub := filepath.Join(dir, "sub")
	must(t, fs.MkdirAll(filepath.Join(sub, "deeper"), 0o755))
	writeFile(t, fs, filepath.Join(sub, "deeper", "g"), "y")
	if err := fs.Remove(sub); err == nil {
		t.Error("Remove of a non-empty directory succeeded")
	}
	must(t, fs.RemoveAll(sub))
	if _, err := fs.Stat(sub); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Stat after RemoveAll: %v", err)
	}
	empty := filepath.Join(dir, "empty")
	must(t, fs.MkdirAll(empty, 0o755))
	must(t, fs.Remove(empty))
	if names, err := fs.List(dir); err != nil || len(names) != 0 {
		t.Errorf("List after removing everything = %q, %v", names, err)
	}
}

func testList(t *testing.T, fs FS, dir string) {
	for _, n := range []string{"c", "a", "b10", "b2"} {
		writeFile(t, fs, filepath.Join(dir, n), n)
	}
	must(t, fs.MkdirAll(filepath.Join(dir, "sub", "x"), 0o755))
	names, err := fs.List(dir)
	must(t, err)
	if want := []string{"a", "b10", "b2", "c", "sub"}; !slices.Equal(names, want) {
		t.Errorf("List = %q, want %q", names, want)
	}
	if _, err := fs.List(filepath.Join(dir, "a")); err == nil {
		t.Error("List of a file succeeded")
	}
}

func testStat(t *testing.T, fs FS, dir string) {
	name := filepath.Join(dir, "f")
	writeFile(t, fs, name, "12345")
	fi, err := fs.Stat(name)
	must(t, err)
	if fi.Name() != "f" || fi.Size() != 5 || fi.IsDir() || !fi.Mode().IsRegular() {
		t.Errorf("Stat(file) = name %q size %d dir %v mode %v", fi.Name(), fi.Size(), fi.IsDir(), fi.Mode())
	}
	fi, err = fs.Stat(dir)
	must(t, err)
	if !fi.IsDir() || fi.Name() != filepath.Base(dir) {
		t.Errorf("Stat(dir) = name %q dir %v", fi.Name(), fi.IsDir())
	}
}

func testClosed(t *testing.T, fs FS, dir string) {
	f, err := fs.Create(filepath.Join(dir, "f"))
	must(t, err)
	must(t, f.Close())
	if _, err := f.Write([]byte("x")); !errors.Is(err, os.ErrClosed) {
		t.Errorf("Write after Close: %v, want ErrClosed", err)
	}
	if _, err := f.ReadAt(make([]byte, 1), 0); !errors.Is(err, os.ErrClosed) {
		t.Errorf("ReadAt after Close: %v, want ErrClosed", err)
	}
	if err := f.Sync(); !errors.Is(err, os.ErrClosed) {
		t.Errorf("Sync after Close: %v, want ErrClosed", err)
	}
	if err := f.Close(); err == nil {
		t.Error("second Close succeeded")
	}
}

func testSync(t *testing.T, fs FS, dir string) {
	f, err := fs.Create(filepath.Join(dir, "f"))
	must(t, err)
	_, err = f.Write([]byte("x"))
	must(t, err)
	must(t, f.Sync())
	must(t, f.Close())
	must(t, fs.SyncDir(dir))
}

func testMkdirAll(t *testing.T, fs FS, dir string) {
	deep := filepath.Join(dir, "a", "b", "c")
	must(t, fs.MkdirAll(deep, 0o755))
	must(t, fs.MkdirAll(deep, 0o755)) // idempotent
	writeFile(t, fs, filepath.Join(deep, "f"), "x")
	if got := readFile(t, fs, filepath.Join(deep, "f")); got != "x" {
		t.Errorf("file in a made directory holds %q", got)
	}
	file := filepath.Join(dir, "file")
	writeFile(t, fs, file, "x")
	if err := fs.MkdirAll(filepath.Join(file, "sub"), 0o755); err == nil {
		t.Error("MkdirAll under a file succeeded")
	}
}
