package keyindex

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

func TestIndex(t *testing.T) {
	fs := vfs.NewMem()
	x, err := Open("/kv", 3, Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	if c, err := x.Covered(1); err != nil || c != 0 {
		t.Fatalf("covered of a new index: %d, %v", c, err)
	}
	b := x.NewBatch(1, 0)
	b.Set([]byte("a"), 10, []byte("row-a"))
	b.Set([]byte("c"), 11, []byte("row-c"))
	b.Set([]byte("b"), 12, []byte("row-b"))
	if err := b.Commit(13); err != nil {
		t.Fatal(err)
	}
	b = x.NewBatch(2, 0) // the same key in another bucket
	b.Set([]byte("a"), 1, []byte("other"))
	if err := b.Commit(2); err != nil {
		t.Fatal(err)
	}
	get := func(bucket int, keys ...string) string {
		t.Helper()
		ks := make([][]byte, len(keys))
		for i, k := range keys {
			ks[i] = []byte(k)
		}
		out := ""
		err := x.Get(bucket, ks, func(i int, e Entry) error {
			out += fmt.Sprintf("%s=%d:%s ", keys[i], e.Offset, e.Row)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		// GetOne of each key finds what Get found.
		one := ""
		for _, k := range keys {
			err := x.GetOne(bucket, []byte(k), func(e Entry) error {
				one += fmt.Sprintf("%s=%d:%s ", k, e.Offset, e.Row)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		if one != out {
			t.Errorf("GetOne of each of %v: %q, Get: %q", keys, one, out)
		}
		return out
	}
	if got, want := get(1, "a", "aa", "b", "c", "d"), "a=10:row-a b=12:row-b c=11:row-c "; got != want {
		t.Errorf("get: %q, want %q", got, want)
	}
	if got, want := get(2, "a", "b"), "a=1:other "; got != want {
		t.Errorf("get bucket 2: %q, want %q", got, want)
	}
	b = x.NewBatch(1, 0)
	b.Delete([]byte("b"))
	if err := b.Commit(14); err != nil {
		t.Fatal(err)
	}
	var scanned []string
	err = x.Scan(1, func(key []byte, e Entry) error {
		scanned = append(scanned, fmt.Sprintf("%s=%d", key, e.Offset))
		return nil
	})
	if err != nil || fmt.Sprint(scanned) != "[a=10 c=11]" {
		t.Errorf("scan: %v, %v", scanned, err)
	}
	if c, _ := x.Covered(1); c != 14 {
		t.Errorf("covered %d, want 14", c)
	}
	if err := x.Reset(1, 5); err != nil {
		t.Fatal(err)
	}
	if got := get(1, "a", "c"); got != "" {
		t.Errorf("after reset: %q", got)
	}
	if c, _ := x.Covered(1); c != 5 {
		t.Errorf("covered after reset %d, want 5", c)
	}
	if got := get(2, "a"); got != "a=1:other " {
		t.Errorf("reset of bucket 1 touched bucket 2: %q", got)
	}
	if err := x.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	if err := x.Get(1, [][]byte{[]byte("a")}, nil); !errors.Is(err, ErrClosed) {
		t.Errorf("get after close: %v", err)
	}
	// Reopened, it holds what was committed.
	x, err = Open("/kv", 3, Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	if got := get(2, "a"); got != "a=1:other " {
		t.Errorf("after reopen: %q", got)
	}
}

// TestKeyLayout pins the index key and value bytes (docs/format/keyindex.md).
func TestKeyLayout(t *testing.T) {
	if got := fmt.Sprintf("% x", RowKey(nil, 3, []byte{0x80, 5})); got != "6b 00 03 80 05" {
		t.Errorf("row key % x", got)
	}
	x, err := Open("/kv", 4, Options{FS: vfs.NewMem()})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	b := x.NewBatch(3, 0)
	b.Set([]byte{1}, 0x0102, []byte{0xAA})
	if err := b.Commit(1); err != nil {
		t.Fatal(err)
	}
	v, closer, err := x.mu.db.Get(RowKey(nil, 3, []byte{1}))
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprintf("% x", v); got != "02 01 00 00 00 00 00 00 aa" {
		t.Errorf("value %s", got)
	}
	closer.Close()
	if got := fmt.Sprintf("% x", bucketPrefix(prefixCovered, 258)); got != "63 01 02" {
		t.Errorf("covered key %s", got)
	}
}

// A damaged index is ErrCorrupt, so that its owner rebuilds it.
func TestOpenDamaged(t *testing.T) {
	fs := vfs.NewMem()
	x, err := Open("/kv", 1, Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	names, err := fs.List("/kv")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if strings.HasPrefix(n, "MANIFEST") {
			f, err := fs.Create("/kv/"+n, vfs.WriteCategoryUnspecified)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.Write([]byte("not a manifest, not at all")); err != nil {
				t.Fatal(err)
			}
			f.Close()
		}
	}
	if _, err := Open("/kv", 1, Options{FS: fs}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("open of a damaged index: %v, want ErrCorrupt", err)
	}
}
