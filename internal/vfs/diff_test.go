package vfs

import (
	"fmt"
	"go/parser"
	"go/token"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestDifferentialOS applies the same random operation sequences to the real
// filesystem and to MemFS and compares every outcome: MemFS is only a useful
// stand-in if it fails where the OS fails and reads what the OS reads.
//
// There is at most one writable handle at a time: with two, a Create handle
// (no O_APPEND, as specified) writes at its own offset on the OS while MemFS
// always appends, and the log never has two writers on one file.
func TestDifferentialOS(t *testing.T) {
	for seed := range uint64(100) {
		t.Run(strconv.FormatUint(seed, 10), func(t *testing.T) {
			d := &diffRun{t: t, r: rand.New(rand.NewPCG(seed, 99))}
			d.fs[0], d.dir[0] = OS(), t.TempDir()
			mem := NewMem()
			must(t, mem.MkdirAll("/x", 0o755))
			d.fs[1], d.dir[1] = mem, "/x"
			for step := range 60 {
				d.step(step)
			}
			d.closeWriter()
			for _, n := range diffNames {
				d.compareRead(n)
			}
		})
	}
}

var diffNames = []string{"a", "b", "s", "s/a", "s/c"}

type diffRun struct {
	t   *testing.T
	r   *rand.Rand
	fs  [2]FS
	dir [2]string
	w   [2]File // the one writable handle, or nils
	log []string
}

func (d *diffRun) name() string { return diffNames[d.r.IntN(len(diffNames))] }

// same fails unless both implementations succeeded or both failed.
func (d *diffRun) same(what string, errs [2]error) bool {
	d.t.Helper()
	d.log = append(d.log, fmt.Sprintf("%s: os=%v mem=%v", what, errs[0], errs[1]))
	if (errs[0] == nil) != (errs[1] == nil) {
		d.t.Fatalf("outcomes differ; history:\n%s", strings.Join(d.log, "\n"))
	}
	return errs[0] == nil
}

// each runs fn against both implementations.
func (d *diffRun) each(fn func(i int, fs FS, dir string) error) [2]error {
	var errs [2]error
	for i := range 2 {
		errs[i] = fn(i, d.fs[i], d.dir[i])
	}
	return errs
}

func (d *diffRun) step(step int) {
	d.t.Helper()
	switch op := d.r.IntN(10); {
	case op == 0 && d.w[0] == nil:
		n := d.name()
		d.same("create "+n, d.each(func(i int, fs FS, dir string) (err error) {
			d.w[i], err = fs.Create(filepath.Join(dir, n))
			return err
		}))
	case op == 1 && d.w[0] == nil:
		n := d.name()
		d.same("openappend "+n, d.each(func(i int, fs FS, dir string) (err error) {
			d.w[i], err = fs.OpenAppend(filepath.Join(dir, n))
			return err
		}))
	case op == 2 && d.w[0] != nil:
		b := []byte(strings.Repeat(strconv.Itoa(step%10), 1+d.r.IntN(5)))
		d.same("write", d.each(func(i int, _ FS, _ string) error {
			_, err := d.w[i].Write(b)
			return err
		}))
	case op == 3 && d.w[0] != nil:
		size := int64(d.r.IntN(12))
		d.same(fmt.Sprint("truncate ", size), d.each(func(i int, _ FS, _ string) error {
			return d.w[i].Truncate(size)
		}))
	case op == 4 && d.w[0] != nil:
		d.closeWriter()
	case op == 5:
		from, to := d.name(), d.name()
		d.same("rename "+from+" "+to, d.each(func(_ int, fs FS, dir string) error {
			return fs.Rename(filepath.Join(dir, from), filepath.Join(dir, to))
		}))
	case op == 6:
		n := d.name()
		d.same("remove "+n, d.each(func(_ int, fs FS, dir string) error {
			return fs.Remove(filepath.Join(dir, n))
		}))
	case op == 7:
		d.same("mkdirall s", d.each(func(_ int, fs FS, dir string) error {
			return fs.MkdirAll(filepath.Join(dir, "s"), 0o755)
		}))
	case op == 8:
		d.compareRead(d.name())
	case op == 9:
		d.compareList()
	}
}

func (d *diffRun) closeWriter() {
	if d.w[0] == nil {
		return
	}
	d.same("close", d.each(func(i int, _ FS, _ string) error {
		err := d.w[i].Close()
		d.w[i] = nil
		return err
	}))
}

// compareRead compares Stat and, for files, the content of name.
func (d *diffRun) compareRead(n string) {
	d.t.Helper()
	var got [2]string
	ok := d.same("stat "+n, d.each(func(i int, fs FS, dir string) error {
		fi, err := fs.Stat(filepath.Join(dir, n))
		if err != nil {
			return err
		}
		got[i] = fmt.Sprintf("dir=%v size=%d", fi.IsDir(), fi.Size())
		if fi.IsDir() {
			got[i] = "dir" // directory sizes are the OS's business
			return nil
		}
		f, err := fs.Open(filepath.Join(dir, n))
		if err != nil {
			return err
		}
		buf := make([]byte, fi.Size())
		if _, err := f.ReadAt(buf, 0); err != nil && len(buf) > 0 {
			return err
		}
		got[i] += " " + string(buf)
		return f.Close()
	}))
	if ok && got[0] != got[1] {
		d.t.Fatalf("%s: os %q, mem %q; history:\n%s", n, got[0], got[1], strings.Join(d.log, "\n"))
	}
}

func (d *diffRun) compareList() {
	d.t.Helper()
	var got [2][]string
	ok := d.same("list", d.each(func(i int, fs FS, dir string) (err error) {
		got[i], err = fs.List(dir)
		return err
	}))
	if ok && !slices.Equal(got[0], got[1]) {
		d.t.Fatalf("list: os %q, mem %q; history:\n%s", got[0], got[1], strings.Join(d.log, "\n"))
	}
}

// TestImportsNoProjectPackage keeps vfs at the bottom of the package graph.
func TestImportsNoProjectPackage(t *testing.T) {
	files, err := filepath.Glob("*.go")
	must(t, err)
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		must(t, err)
		f, err := parser.ParseFile(token.NewFileSet(), name, src, parser.ImportsOnly)
		must(t, err)
		for _, imp := range f.Imports {
			if strings.HasPrefix(imp.Path.Value, `"github.com/lakestream/`) {
				t.Errorf("%s imports %s; vfs must import nothing of the project", name, imp.Path.Value)
			}
		}
	}
}
