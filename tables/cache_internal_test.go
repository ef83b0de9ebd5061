package tables

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// The cache evicts the least recently used columns to stay within its
// size, and releases what it drops.
func TestCacheEvictsLeastRecentlyUsed(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	col := func() (a *array.Int64) {
		b := array.NewInt64Builder(mem)
		defer b.Release()
		for i := 0; i < 100; i++ {
			b.Append(int64(i))
		}
		return b.NewInt64Array()
	}
	probe := col()
	one := int64(probe.Data().SizeInBytes())
	probe.Release()
	c := NewCache(4 * one)
	for i := int64(0); i < 4; i++ {
		a := col()
		c.put(cacheKey{offset: i}, a)
		a.Release()
	}
	if a := c.get(cacheKey{offset: 0}); a == nil { // 0 is now the most recent
		t.Fatal("offset 0 not cached")
	} else {
		a.Release()
	}
	a := col()
	c.put(cacheKey{offset: 4}, a) // evicts 1, the least recently used
	a.Release()
	if st := c.Stats(); st.Bytes > st.MaxBytes || st.Columns != 4 {
		t.Fatalf("stats %+v", st)
	}
	for off, want := range map[int64]bool{0: true, 1: false, 2: true, 3: true, 4: true} {
		got := c.get(cacheKey{offset: off})
		if (got != nil) != want {
			t.Errorf("offset %d cached %v, want %v", off, got != nil, want)
		}
		if got != nil {
			got.Release()
		}
	}
	c.purge()
	mem.AssertSize(t, 0)
}
