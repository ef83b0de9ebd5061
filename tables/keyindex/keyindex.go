// Package keyindex is the key index of a primary-key table: one pebble
// database per table, holding for each bucket every live key's current row
// (encoded by internal/rowenc) and the log offset of the changelog record
// that holds it, plus the log offset up to which the index covers each
// bucket's log. docs/format/keyindex.md has the byte layout.
//
// The index is derived data: the table's log is the source of truth. Writes
// to the index are not synced; after a crash the index may lag the log,
// and the table (tables/pk*.go) replays the log above Covered. keyindex
// knows nothing of logs, tables or SQL; it imports no Lakestream package.
package keyindex

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// Key prefixes (part of the format).
const (
	prefixRow     = 'k' // 'k' | bucket u16 BE | key  ->  offset u64 LE | row
	prefixCovered = 'c' // 'c' | bucket u16 BE       ->  next offset u64 LE
	keyVersion    = "v" // "v"                       ->  formatVersion u32 LE
	formatVersion = 1
	// MaxBuckets is the most buckets an index holds (u16 bucket numbers).
	MaxBuckets = 1<<16 - 1
)

// MemTableBytes is the size of one memtable of an index; an index holds
// at most 4 (one being written, the others being flushed).
const MemTableBytes = 32 << 20

// ErrCorrupt marks an index that does not open because its files are
// damaged (or of another format version); it can be deleted and rebuilt.
var ErrCorrupt = errors.New("key index is damaged")

// ErrClosed is returned by an index used after Close.
var ErrClosed = errors.New("key index is closed")

// Options configure an index. Zero fields take their defaults.
type Options struct {
	// FS is the filesystem. Default: the operating system's.
	FS vfs.FS
	// Cache is the block cache, shared by every index of a store. Default:
	// a cache of 8 MiB of this index's own.
	Cache *pebble.Cache
	// Logger receives pebble's messages: its informational ones at debug
	// level. Default: none.
	Logger *slog.Logger
}

// logger adapts a *slog.Logger to pebble's Logger.
type logger struct{ l *slog.Logger }

func (l logger) Infof(format string, args ...any)  { l.l.Debug(fmt.Sprintf(format, args...)) }
func (l logger) Errorf(format string, args ...any) { l.l.Error(fmt.Sprintf(format, args...)) }

// Fatalf reports an error pebble cannot go on from (a broken invariant of
// its own); it must not return.
func (l logger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	l.l.Error(msg)
	panic("key index: " + msg)
}

// Index is the key index of one table. It is safe for concurrent use;
// Close waits for the calls in flight.
type Index struct {
	mu struct {
		sync.RWMutex
		db *pebble.DB // nil once closed
	}
	buckets int
}

// Open opens (or creates) the index in dir for a table of buckets buckets.
func Open(dir string, buckets int, o Options) (*Index, error) {
	if buckets < 1 || buckets > MaxBuckets {
		return nil, fmt.Errorf("open key index %s: %d buckets, want 1..%d", dir, buckets, MaxBuckets)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	opts := &pebble.Options{
		FS: o.FS, Cache: o.Cache, FormatMajorVersion: pebble.FormatNewest, Logger: logger{o.Logger},
		// A 64Ki-row write is a few MiB of index entries: with pebble's
		// 4 MiB default every write would flush a memtable and start a
		// compaction. The memory this bounds (per table) is in
		// docs/architecture.md.
		MemTableSize:                MemTableBytes,
		MemTableStopWritesThreshold: 4,
		L0StopWritesThreshold:       24,
		CompactionConcurrencyRange:  func() (int, int) { return 1, 2 },
	}
	if opts.FS == nil {
		opts.FS = vfs.Default
	}
	for i := range opts.Levels {
		// Whole-key Bloom filters (the default Comparer's Split keeps the
		// whole key as the prefix): SeekPrefixGE of an absent key skips
		// the table without reading a block.
		opts.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
	}
	if opts.Cache == nil {
		opts.Cache = pebble.NewCache(8 << 20)
		defer opts.Cache.Unref() // the DB holds its own reference
	}
	db, err := pebble.Open(dir, opts)
	if pebble.IsCorruptionError(err) {
		return nil, fmt.Errorf("open key index %s: %w: %w", dir, ErrCorrupt, err)
	}
	if err != nil {
		return nil, fmt.Errorf("open key index %s: %w", dir, err)
	}
	x := &Index{buckets: buckets}
	x.mu.db = db
	if err := x.checkVersion(); err != nil {
		return nil, errors.Join(fmt.Errorf("open key index %s: %w", dir, err), db.Close())
	}
	return x, nil
}

func (x *Index) checkVersion() error {
	db := x.mu.db
	v, closer, err := db.Get([]byte(keyVersion))
	if errors.Is(err, pebble.ErrNotFound) {
		return db.Set([]byte(keyVersion), binary.LittleEndian.AppendUint32(nil, formatVersion), pebble.Sync)
	}
	if err != nil {
		return err
	}
	defer closer.Close()
	if len(v) != 4 || binary.LittleEndian.Uint32(v) != formatVersion {
		return fmt.Errorf("%w: format version %x, this build reads %d", ErrCorrupt, v, formatVersion)
	}
	return nil
}

// Close closes the index once the calls in flight are done.
func (x *Index) Close() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.mu.db == nil {
		return nil
	}
	err := x.mu.db.Close()
	x.mu.db = nil
	return err
}

// use runs fn with the open database, holding it open.
func (x *Index) use(fn func(db *pebble.DB) error) error {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if x.mu.db == nil {
		return ErrClosed
	}
	return fn(x.mu.db)
}

func bucketPrefix(p byte, bucket int) []byte {
	return []byte{p, byte(bucket >> 8), byte(bucket)}
}

// RowKey appends the index key of an encoded key in bucket to dst.
func RowKey(dst []byte, bucket int, key []byte) []byte {
	return append(append(dst, bucketPrefix(prefixRow, bucket)...), key...)
}

// Covered is the offset up to which the index covers bucket's log: every
// change record below it is applied, none at or above it. 0 for a new
// index.
func (x *Index) Covered(bucket int) (int64, error) {
	var off int64
	err := x.use(func(db *pebble.DB) error {
		v, closer, err := db.Get(bucketPrefix(prefixCovered, bucket))
		if errors.Is(err, pebble.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		defer closer.Close()
		if len(v) != 8 {
			return fmt.Errorf("key index: covered offset of bucket %d is %d bytes, want 8", bucket, len(v))
		}
		off = int64(binary.LittleEndian.Uint64(v))
		return nil
	})
	return off, err
}

// Entry is one live key's index entry.
type Entry struct {
	Offset int64  // of the change record holding the row
	Row    []byte // the encoded row
}

func decodeValue(v []byte) (Entry, error) {
	if len(v) < 8 {
		return Entry{}, fmt.Errorf("key index: value of %d bytes, want 8 or more", len(v))
	}
	return Entry{Offset: int64(binary.LittleEndian.Uint64(v)), Row: v[8:]}, nil
}

// Get looks up keys of bucket (encoded keys, sorted ascending) through
// one iterator, calling found for each key present with its entry, whose
// Row is valid only during the call.
func (x *Index) Get(bucket int, keys [][]byte, found func(i int, e Entry) error) error {
	return x.use(func(db *pebble.DB) error {
		it, err := db.NewIter(&pebble.IterOptions{
			LowerBound: bucketPrefix(prefixRow, bucket),
			UpperBound: bucketPrefix(prefixRow, bucket+1),
		})
		if err != nil {
			return err
		}
		var buf []byte
		for i, k := range keys {
			buf = RowKey(buf[:0], bucket, k)
			if !it.SeekPrefixGE(buf) || string(it.Key()) != string(buf) {
				continue
			}
			v, err := it.ValueAndErr()
			if err != nil {
				return errors.Join(err, it.Close())
			}
			e, err := decodeValue(v)
			if err == nil {
				err = found(i, e)
			}
			if err != nil {
				return errors.Join(err, it.Close())
			}
		}
		return it.Close()
	})
}

// GetOne looks up one key of bucket, calling found with its entry (whose
// Row is valid only during the call) when it is present. It costs less
// than a Get of one key: pebble's point read builds no iterator over the
// levels, and reads a level's table only when its Bloom filter lets the
// key through.
func (x *Index) GetOne(bucket int, key []byte, found func(e Entry) error) error {
	var kb [64]byte
	k := RowKey(kb[:0], bucket, key)
	return x.use(func(db *pebble.DB) error {
		v, closer, err := db.Get(k)
		if errors.Is(err, pebble.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		e, err := decodeValue(v)
		if err == nil {
			err = found(e)
		}
		return errors.Join(err, closer.Close())
	})
}

// Scan calls fn with every entry of bucket, in key order; key and Row are
// valid only during the call.
func (x *Index) Scan(bucket int, fn func(key []byte, e Entry) error) error {
	return x.use(func(db *pebble.DB) error {
		it, err := db.NewIter(&pebble.IterOptions{
			LowerBound: bucketPrefix(prefixRow, bucket),
			UpperBound: bucketPrefix(prefixRow, bucket+1),
		})
		if err != nil {
			return err
		}
		for ok := it.First(); ok; ok = it.Next() {
			v, err := it.ValueAndErr()
			if err != nil {
				return errors.Join(err, it.Close())
			}
			e, err := decodeValue(v)
			if err == nil {
				err = fn(it.Key()[3:], e)
			}
			if err != nil {
				return errors.Join(err, it.Close())
			}
		}
		return it.Close()
	})
}

// Batch is a set of changes of one bucket, applied atomically with the
// bucket's new covered offset by Commit. A Batch is used by one goroutine,
// and is committed or discarded before the index is closed.
type Batch struct {
	x      *Index
	bucket int
	pb     *pebble.Batch // nil until the first change
	n      int
	size   int // the size hint of NewBatch
	err    error
}

// NewBatch returns an empty batch of bucket, with room for about size
// bytes of keys and rows.
func (x *Index) NewBatch(bucket int, size int) *Batch {
	return &Batch{x: x, bucket: bucket, size: size}
}

func (b *Batch) batch() *pebble.Batch {
	if b.pb == nil && b.err == nil {
		b.err = b.x.use(func(db *pebble.DB) error {
			b.pb = db.NewBatchWithSize(b.size)
			return nil
		})
	}
	return b.pb
}

// Set makes key's entry (offset, row).
func (b *Batch) Set(key []byte, offset int64, row []byte) {
	pb := b.batch()
	if pb == nil {
		return
	}
	op := pb.SetDeferred(3+len(key), 8+len(row))
	copy(op.Key, bucketPrefix(prefixRow, b.bucket))
	copy(op.Key[3:], key)
	binary.LittleEndian.PutUint64(op.Value, uint64(offset))
	copy(op.Value[8:], row)
	if err := op.Finish(); err != nil && b.err == nil {
		b.err = err
	}
	b.n++
}

// Delete removes key's entry.
func (b *Batch) Delete(key []byte) {
	pb := b.batch()
	if pb == nil {
		return
	}
	op := pb.DeleteDeferred(3 + len(key))
	copy(op.Key, bucketPrefix(prefixRow, b.bucket))
	copy(op.Key[3:], key)
	if err := op.Finish(); err != nil && b.err == nil {
		b.err = err
	}
	b.n++
}

// Len is the number of changes in the batch.
func (b *Batch) Len() int { return b.n }

// Commit applies the batch and sets the bucket's covered offset, not
// synced (the log is the durable copy), and empties the batch.
func (b *Batch) Commit(covered int64) error {
	pb := b.batch()
	err := b.err
	b.pb, b.n, b.err = nil, 0, nil
	if err != nil {
		if pb != nil {
			pb.Close()
		}
		return err
	}
	defer pb.Close()
	return b.x.use(func(db *pebble.DB) error {
		if err := pb.Set(bucketPrefix(prefixCovered, b.bucket), binary.LittleEndian.AppendUint64(nil, uint64(covered)), nil); err != nil {
			return err
		}
		return pb.Commit(pebble.NoSync)
	})
}

// Reset empties bucket: its entries are deleted and its covered offset
// set to from, before the bucket is rebuilt from the log.
func (x *Index) Reset(bucket int, from int64) error {
	return x.use(func(db *pebble.DB) error {
		pb := db.NewBatch()
		defer pb.Close()
		if err := pb.DeleteRange(bucketPrefix(prefixRow, bucket), bucketPrefix(prefixRow, bucket+1), nil); err != nil {
			return err
		}
		if err := pb.Set(bucketPrefix(prefixCovered, bucket), binary.LittleEndian.AppendUint64(nil, uint64(from)), nil); err != nil {
			return err
		}
		return pb.Commit(pebble.NoSync)
	})
}

// Flush makes every committed change durable (for a clean close, so that
// the next open replays nothing).
func (x *Index) Flush() error {
	return x.use(func(db *pebble.DB) error { return db.Flush() })
}

// DiskBytes is the size of the index's files.
func (x *Index) DiskBytes() int64 {
	var n int64
	_ = x.use(func(db *pebble.DB) error {
		m := db.Metrics()
		n = int64(m.DiskSpaceUsage())
		return nil
	})
	return n
}
