package tables

import (
	"container/list"
	"slices"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
)

// Cache keeps the decoded columns of recently read log batches. The fresh
// tail of a table is read far more often than it is written — by every
// query and every subscriber — and decompressing it is most of the cost of
// reading it, so each column of a batch is decompressed once while it stays
// in the cache. Stored batches never change (offsets are not reused), so an
// entry never goes stale; a table's entries go when it is dropped or when
// they are least recently used and the cache is over its size.
//
// The cache is safe for concurrent use. Arrays handed out are retained for
// the caller.
type Cache struct {
	max int64

	mu   sync.Mutex
	size int64
	lru  list.List // of *cacheEntry, most recently used first
	m    map[cacheKey]*list.Element

	hits, misses int64
}

type cacheKey struct {
	table  int64
	bucket int32
	col    int32
	offset int64
}

type cacheEntry struct {
	key   cacheKey
	arr   arrow.Array
	bytes int64
	// keep, for the live rows of a primary-key table's batch, are the
	// live bits they were filtered by (pk_livecache.go).
	keep keepBits
}

// NewCache returns a cache of at most maxBytes of decoded data; nil (no
// caching) when maxBytes <= 0.
func NewCache(maxBytes int64) *Cache {
	if maxBytes <= 0 {
		return nil
	}
	return &Cache{max: maxBytes, m: map[cacheKey]*list.Element{}}
}

// get returns the cached column, retained, or nil.
func (c *Cache) get(k cacheKey) arrow.Array {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[k]
	if !ok {
		c.misses++
		return nil
	}
	c.hits++
	c.lru.MoveToFront(e)
	arr := e.Value.(*cacheEntry).arr
	arr.Retain()
	return arr
}

// put adds a column (the cache retains it), evicting the least recently
// used columns to stay within size. A column larger than a quarter of the
// cache is not kept: it would only push out many others.
func (c *Cache) put(k cacheKey, arr arrow.Array) {
	bytes := int64(arr.Data().SizeInBytes())
	if bytes > c.max/4 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[k]; ok {
		return // a concurrent reader decoded it too
	}
	arr.Retain()
	c.m[k] = c.lru.PushFront(&cacheEntry{key: k, arr: arr, bytes: bytes})
	c.size += bytes
	for c.size > c.max {
		c.removeLocked(c.lru.Back())
	}
}

// getLive returns the cached live rows under k, retained, when they were
// filtered by the live bits keep; nil otherwise.
func (c *Cache) getLive(k cacheKey, keep keepBits) arrow.Array {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[k]
	if !ok || !slices.Equal(e.Value.(*cacheEntry).keep, keep) {
		c.misses++
		return nil
	}
	c.hits++
	c.lru.MoveToFront(e)
	arr := e.Value.(*cacheEntry).arr
	arr.Retain()
	return arr
}

// putLive caches live rows filtered by the live bits keep (which the
// cache then owns), replacing those of other bits.
func (c *Cache) putLive(k cacheKey, keep keepBits, arr arrow.Array) {
	bytes := int64(arr.Data().SizeInBytes()) + int64(len(keep))*8
	if bytes > c.max/4 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.m[k]; ok {
		c.removeLocked(el)
	}
	arr.Retain()
	c.m[k] = c.lru.PushFront(&cacheEntry{key: k, arr: arr, bytes: bytes, keep: keep})
	c.size += bytes
	for c.size > c.max {
		c.removeLocked(c.lru.Back())
	}
}

func (c *Cache) removeLocked(el *list.Element) {
	e := el.Value.(*cacheEntry)
	c.lru.Remove(el)
	delete(c.m, e.key)
	c.size -= e.bytes
	e.arr.Release()
}

// dropTable removes a table's columns.
func (c *Cache) dropTable(id int64) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for el := c.lru.Front(); el != nil; {
		next := el.Next()
		if el.Value.(*cacheEntry).key.table == id {
			c.removeLocked(el)
		}
		el = next
	}
}

// purge empties the cache.
func (c *Cache) purge() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for el := c.lru.Front(); el != nil; el = c.lru.Front() {
		c.removeLocked(el)
	}
}

// The lake side (package tiering) keeps whole columns of its data files in
// the same cache, keyed by table, file (a number the lake gives each data
// file) and column; bucket -1 tells them from log batches.

// GetLake returns a cached column of a lake data file, retained, or nil.
func (c *Cache) GetLake(table, file int64, col int) arrow.Array {
	if c == nil {
		return nil
	}
	return c.get(cacheKey{table: table, bucket: -1, col: int32(col), offset: file})
}

// PutLake caches a column of a lake data file.
func (c *Cache) PutLake(table, file int64, col int, arr arrow.Array) {
	if c != nil {
		c.put(cacheKey{table: table, bucket: -1, col: int32(col), offset: file}, arr)
	}
}

// MaxBytes is the cache's size; 0 for a nil cache.
func (c *Cache) MaxBytes() int64 {
	if c == nil {
		return 0
	}
	return c.max
}

// CacheStats are a cache's counters.
type CacheStats struct {
	Bytes, MaxBytes int64
	Columns         int
	Hits, Misses    int64
}

// Stats returns the cache's counters; the zero value for a nil cache.
func (c *Cache) Stats() CacheStats {
	if c == nil {
		return CacheStats{}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return CacheStats{Bytes: c.size, MaxBytes: c.max, Columns: len(c.m), Hits: c.hits, Misses: c.misses}
}
