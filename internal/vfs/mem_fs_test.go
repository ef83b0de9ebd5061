package vfs

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
)

// memWith returns a MemFS holding dir "d" (durable, from MkdirAll) and, for
// each entry of files, a file with that content, created, synced and made
// durable with SyncDir.
func memWith(t *testing.T, files map[string]string) *MemFS {
	t.Helper()
	fs := NewMem()
	must(t, fs.MkdirAll("d", 0o755))
	for name, data := range files {
		writeFile(t, fs, name, data)
	}
	must(t, fs.SyncDir("d"))
	return fs
}

// content returns the data of name in fs, or "<missing>".
func content(t *testing.T, fs FS, name string) string {
	t.Helper()
	if _, err := fs.Stat(name); errors.Is(err, os.ErrNotExist) {
		return "<missing>"
	}
	return readFile(t, fs, name)
}

func appendTo(t *testing.T, fs FS, name, data string) File {
	t.Helper()
	f, err := fs.OpenAppend(name)
	must(t, err)
	_, err = f.Write([]byte(data))
	must(t, err)
	return f
}

func TestCrashUnsyncedDataLost(t *testing.T) {
	fs := memWith(t, map[string]string{"d/f": "abc"})
	f := appendTo(t, fs, "d/f", "def")
	if got := content(t, fs, "d/f"); got != "abcdef" {
		t.Fatalf("before the crash: %q", got)
	}
	if got := content(t, fs.CrashClone(CrashOptions{}), "d/f"); got != "abc" {
		t.Errorf("after a crash: %q, want the synced %q", got, "abc")
	}
	must(t, f.Sync())
	if got := content(t, fs.CrashClone(CrashOptions{}), "d/f"); got != "abcdef" {
		t.Errorf("after Sync and a crash: %q, want %q", got, "abcdef")
	}
	must(t, f.Close())
}

func TestCrashCreateNeedsSyncDir(t *testing.T) {
	fs := memWith(t, nil)
	writeFile(t, fs, "d/f", "synced data") // file synced, directory not
	if got := content(t, fs.CrashClone(CrashOptions{}), "d/f"); got != "<missing>" {
		t.Errorf("a file created without SyncDir survived: %q", got)
	}
	must(t, fs.SyncDir("d"))
	if got := content(t, fs.CrashClone(CrashOptions{}), "d/f"); got != "synced data" {
		t.Errorf("after SyncDir: %q", got)
	}
}

func TestCrashDirSyncedFileNot(t *testing.T) {
	fs := memWith(t, nil)
	f, err := fs.Create("d/f")
	must(t, err)
	_, err = f.Write([]byte("never synced"))
	must(t, err)
	must(t, fs.SyncDir("d"))
	if got := content(t, fs.CrashClone(CrashOptions{}), "d/f"); got != "" {
		t.Errorf("entry durable, data not: %q, want an empty file", got)
	}
	must(t, f.Close())
}

func TestCrashRenameNeedsSyncDir(t *testing.T) {
	fs := memWith(t, map[string]string{"d/a": "A"})
	must(t, fs.Rename("d/a", "d/b"))
	c := fs.CrashClone(CrashOptions{})
	if a, b := content(t, c, "d/a"), content(t, c, "d/b"); a != "A" || b != "<missing>" {
		t.Errorf("rename before SyncDir: a=%q b=%q, want the old name only", a, b)
	}
	must(t, fs.SyncDir("d"))
	c = fs.CrashClone(CrashOptions{})
	if a, b := content(t, c, "d/a"), content(t, c, "d/b"); a != "<missing>" || b != "A" {
		t.Errorf("rename after SyncDir: a=%q b=%q, want the new name only", a, b)
	}
}

func TestCrashRenameAcrossDirs(t *testing.T) {
	fs := memWith(t, map[string]string{"d/a": "A"})
	must(t, fs.MkdirAll("e", 0o755))
	must(t, fs.Rename("d/a", "e/a"))
	must(t, fs.SyncDir("e")) // the new entry is durable, the removal is not
	c := fs.CrashClone(CrashOptions{})
	if a, b := content(t, c, "d/a"), content(t, c, "e/a"); a != "A" || b != "A" {
		t.Errorf("only the target synced: d/a=%q e/a=%q, want both", a, b)
	}
	must(t, fs.SyncDir("d"))
	c = fs.CrashClone(CrashOptions{})
	if a, b := content(t, c, "d/a"), content(t, c, "e/a"); a != "<missing>" || b != "A" {
		t.Errorf("both synced: d/a=%q e/a=%q", a, b)
	}
}

func TestCrashRemoveNeedsSyncDir(t *testing.T) {
	fs := memWith(t, map[string]string{"d/f": "F"})
	must(t, fs.Remove("d/f"))
	if got := content(t, fs.CrashClone(CrashOptions{}), "d/f"); got != "F" {
		t.Errorf("removed without SyncDir: %q, want the file back", got)
	}
	// A new file under the removed name does not replace the durable one.
	writeFile(t, fs, "d/f", "new")
	if got := content(t, fs.CrashClone(CrashOptions{}), "d/f"); got != "F" {
		t.Errorf("recreated without SyncDir: %q, want the old file", got)
	}
	must(t, fs.SyncDir("d"))
	if got := content(t, fs.CrashClone(CrashOptions{}), "d/f"); got != "new" {
		t.Errorf("recreated and synced: %q", got)
	}
	must(t, fs.RemoveAll("d"))
	if got := content(t, fs.CrashClone(CrashOptions{}), "d/f"); got != "new" {
		t.Errorf("RemoveAll without SyncDir of the parent: %q", got)
	}
	must(t, fs.SyncDir("/"))
	if got := content(t, fs.CrashClone(CrashOptions{}), "d/f"); got != "<missing>" {
		t.Errorf("RemoveAll and SyncDir of the parent: %q", got)
	}
}

func TestCrashTruncateNeedsSync(t *testing.T) {
	fs := memWith(t, map[string]string{"d/f": "abcdef"})
	f, err := fs.OpenAppend("d/f")
	must(t, err)
	must(t, f.Truncate(2))
	_, err = f.Write([]byte("XY"))
	must(t, err)
	if got := content(t, fs.CrashClone(CrashOptions{}), "d/f"); got != "abcdef" {
		t.Errorf("unsynced truncate: %q, want %q", got, "abcdef")
	}
	must(t, f.Sync())
	if got := content(t, fs.CrashClone(CrashOptions{}), "d/f"); got != "abXY" {
		t.Errorf("synced truncate: %q", got)
	}
	must(t, f.Close())

	// Create over an existing file truncates it only once synced.
	g, err := fs.Create("d/f")
	must(t, err)
	if got := content(t, fs.CrashClone(CrashOptions{}), "d/f"); got != "abXY" {
		t.Errorf("unsynced Create over a file: %q", got)
	}
	must(t, g.Close())
}

func TestCrashMkdirAllDurable(t *testing.T) {
	fs := NewMem()
	must(t, fs.MkdirAll("/a/b/c", 0o755))
	names, err := fs.CrashClone(CrashOptions{}).List("a/b")
	must(t, err)
	if !slices.Equal(names, []string{"c"}) {
		t.Errorf("List(a/b) after a crash = %q", names)
	}
}

func TestCrashTornPrefix(t *testing.T) {
	const synced, unsynced = "abc", "defghijklmnop"
	fs := memWith(t, map[string]string{"d/f": synced})
	f := appendTo(t, fs, "d/f", unsynced)
	defer func() { must(t, f.Close()) }()

	if got := content(t, fs.CrashClone(CrashOptions{KeepUnsynced: true}), "d/f"); got != synced+unsynced {
		t.Errorf("KeepUnsynced without Rand: %q, want everything", got)
	}
	lengths := map[int]bool{}
	for seed := range uint64(50) {
		r := rand.New(rand.NewPCG(seed, 0))
		got := content(t, fs.CrashClone(CrashOptions{KeepUnsynced: true, Rand: r}), "d/f")
		if !strings.HasPrefix(got, synced) || !strings.HasPrefix(synced+unsynced, got) {
			t.Fatalf("seed %d: %q is not the synced data plus a prefix of the rest", seed, got)
		}
		lengths[len(got)] = true
	}
	if len(lengths) < 5 {
		t.Errorf("50 seeds gave only %d distinct lengths: the tear point is not random", len(lengths))
	}
}

func TestCrashTornGarbage(t *testing.T) {
	const synced, unsynced = "abc", "defghijklmnop"
	fs := memWith(t, map[string]string{"d/f": synced})
	f := appendTo(t, fs, "d/f", unsynced)
	defer func() { must(t, f.Close()) }()
	garbled := 0
	for seed := range uint64(50) {
		r := rand.New(rand.NewPCG(seed, 1))
		got := content(t, fs.CrashClone(CrashOptions{KeepUnsynced: true, Rand: r, TornGarbage: true}), "d/f")
		if len(got) < len(synced) || len(got) > len(synced+unsynced) || got[:len(synced)] != synced {
			t.Fatalf("seed %d: %q does not keep the synced data intact", seed, got)
		}
		if tail := got[len(synced):]; tail != "" {
			if strings.HasPrefix(unsynced, tail) {
				t.Fatalf("seed %d: kept tail %q was not garbled", seed, tail)
			}
			garbled++
		}
	}
	if garbled == 0 {
		t.Error("no seed kept any of the tail")
	}
}

func TestCrashCloneDeterministic(t *testing.T) {
	fs := memWith(t, map[string]string{"d/a": "1", "d/b": "2", "d/c": "3"})
	for _, n := range []string{"d/a", "d/b", "d/c"} {
		must(t, appendTo(t, fs, n, strings.Repeat("x", 100)).Close())
	}
	clone := func() string {
		r := rand.New(rand.NewPCG(7, 7))
		c := fs.CrashClone(CrashOptions{KeepUnsynced: true, Rand: r, TornGarbage: true})
		return content(t, c, "d/a") + "|" + content(t, c, "d/b") + "|" + content(t, c, "d/c")
	}
	if a, b := clone(), clone(); a != b {
		t.Errorf("the same seed gave different clones:\n%q\n%q", a, b)
	}
}

func TestCrashCloneIndependent(t *testing.T) {
	fs := memWith(t, map[string]string{"d/f": "abc"})
	c := fs.CrashClone(CrashOptions{})
	must(t, appendTo(t, c, "d/f", "clone").Close())
	must(t, appendTo(t, fs, "d/f", "orig").Close())
	if got := content(t, fs, "d/f"); got != "abcorig" {
		t.Errorf("original: %q", got)
	}
	if got := content(t, c, "d/f"); got != "abcclone" {
		t.Errorf("clone: %q", got)
	}
}

func TestRemovedFileStaysOpen(t *testing.T) {
	fs := memWith(t, map[string]string{"d/f": "abc"})
	f, err := fs.OpenAppend("d/f")
	must(t, err)
	must(t, fs.Remove("d/f"))
	_, err = f.Write([]byte("def"))
	must(t, err)
	if got := readAll(t, f); got != "abcdef" {
		t.Errorf("removed file through its handle: %q", got)
	}
	must(t, f.Close())
}

func TestInjectError(t *testing.T) {
	errBoom := errors.New("boom")
	fs := memWith(t, nil)
	fs.InjectError(FailNth(OpWrite, 3, errBoom))
	f, err := fs.Create("d/f")
	must(t, err)
	for i, s := range []string{"a", "b", "c", "d"} {
		_, err := f.Write([]byte(s))
		if (i == 2) != errors.Is(err, errBoom) {
			t.Errorf("write %d: err = %v", i+1, err)
		}
	}
	if got := readAll(t, f); got != "abd" {
		t.Errorf("a failed write had an effect: %q", got)
	}

	var seen []string
	var mu sync.Mutex
	fs.InjectError(func(op Op, name string) error {
		mu.Lock()
		seen = append(seen, fmt.Sprintf("%v %s", op, name))
		mu.Unlock()
		if op == OpSyncDir {
			return errBoom
		}
		return nil
	})
	must(t, f.Sync())
	err = fs.SyncDir("d")
	var pe *os.PathError
	if !errors.Is(err, errBoom) || !errors.As(err, &pe) || pe.Op != "syncdir" || pe.Path != "d" {
		t.Errorf("SyncDir: %v, want an *os.PathError wrapping boom", err)
	}
	if want := []string{"sync d/f", "syncdir d"}; !slices.Equal(seen, want) {
		t.Errorf("hook saw %q, want %q", seen, want)
	}
	if got := content(t, fs.CrashClone(CrashOptions{}), "d/f"); got != "<missing>" {
		t.Errorf("a failed SyncDir made the entry durable: %q", got)
	}

	fs.InjectError(nil)
	must(t, fs.SyncDir("d"))
	must(t, f.Close())
}

// LimitSpace: writes take from the room left, the one that does not fit
// writes what does and fails with ENOSPC, and more room lets writes through
// again.
func TestLimitSpace(t *testing.T) {
	fs := memWith(t, nil)
	var free atomic.Int64
	free.Store(5)
	fs.LimitSpace(&free)
	f, err := fs.Create("d/f")
	must(t, err)
	_, err = f.Write([]byte("abc"))
	must(t, err)
	n, err := f.Write([]byte("defg"))
	var pe *os.PathError
	if n != 2 || !errors.Is(err, syscall.ENOSPC) || !errors.As(err, &pe) || pe.Op != "write" {
		t.Fatalf("write on a filling disk: %d, %v; want 2 bytes and ENOSPC", n, err)
	}
	if n, err := f.Write([]byte("x")); n != 0 || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("write on a full disk: %d, %v", n, err)
	}
	must(t, f.Sync())
	must(t, f.Truncate(3))
	if free.Load() != 0 {
		t.Fatalf("truncate gave back space: %d", free.Load())
	}
	free.Store(10)
	_, err = f.Write([]byte("h"))
	must(t, err)
	if got := readAll(t, f); got != "abch" || free.Load() != 9 {
		t.Errorf("file holds %q, %d bytes free; want abch, 9", got, free.Load())
	}
	fs.LimitSpace(nil)
	_, err = f.Write(make([]byte, 100))
	must(t, errors.Join(err, f.Close()))
}

// TestMemConcurrent drives every kind of operation from several goroutines at
// once; it asserts little and exists for the race detector.
func TestMemConcurrent(t *testing.T) {
	fs := memWith(t, nil)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			name := fmt.Sprintf("d/f%d", w)
			f, err := fs.Create(name)
			if err != nil {
				t.Error(err)
				return
			}
			r, err := fs.Open(name)
			if err != nil {
				t.Error(err)
				return
			}
			buf := make([]byte, 8)
			for i := range 200 {
				_, err := f.Write([]byte("12345678"))
				if err == nil && i%10 == 0 {
					err = f.Sync()
				}
				if err == nil && i%50 == 0 {
					err = f.Truncate(int64(i))
				}
				if err == nil {
					_, err = r.ReadAt(buf, int64(i))
				}
				if err == nil && i%20 == 0 {
					err = fs.SyncDir("d")
				}
				if err == nil && i%40 == 0 {
					err = fs.Rename(name, name+".tmp")
					if err == nil {
						err = fs.Rename(name+".tmp", name)
					}
				}
				if err != nil && err != io.EOF { // a read past a truncated end
					t.Error(err)
					return
				}
			}
			if err := errors.Join(f.Close(), r.Close()); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Go(func() {
		r := rand.New(rand.NewPCG(1, 2))
		for range 50 {
			c := fs.CrashClone(CrashOptions{KeepUnsynced: true, Rand: r, TornGarbage: true})
			if _, err := c.List("d"); err != nil {
				t.Error(err)
			}
			if _, err := fs.List("d"); err != nil {
				t.Error(err)
			}
		}
	})
	wg.Wait()
}
