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
	opts := &pebble.Options{FS: o.FS, Cache: o.Cache, FormatMajorVersion: pebble.FormatNewest, Logger: logger{o.Logger}}
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
		return fmt.Errorf("format version %x, this build reads %d", v, formatVersion)
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
// bucket's new covered offset by Commit. A Batch is used by one goroutine.
type Batch struct {
	x      *Index
	bucket int
	ops    []op
	buf    []byte
}

type op struct {
	key, val []byte // val nil: delete
}

// NewBatch returns an empty batch of bucket.
func (x *Index) NewBatch(bucket int) *Batch { return &Batch{x: x, bucket: bucket} }

// Set makes key's entry (offset, row).
func (b *Batch) Set(key []byte, offset int64, row []byte) {
	start := len(b.buf)
	b.buf = RowKey(b.buf, b.bucket, key)
	mid := len(b.buf)
	b.buf = binary.LittleEndian.AppendUint64(b.buf, uint64(offset))
	b.buf = append(b.buf, row...)
	b.ops = append(b.ops, op{key: b.buf[start:mid:mid], val: b.buf[mid:len(b.buf):len(b.buf)]})
}

// Delete removes key's entry.
func (b *Batch) Delete(key []byte) {
	start := len(b.buf)
	b.buf = RowKey(b.buf, b.bucket, key)
	b.ops = append(b.ops, op{key: b.buf[start:len(b.buf):len(b.buf)]})
}

// Len is the number of changes in the batch.
func (b *Batch) Len() int { return len(b.ops) }

// Commit applies the batch and sets the bucket's covered offset, not
// synced (the log is the durable copy), and empties the batch.
func (b *Batch) Commit(covered int64) error {
	return b.x.use(func(db *pebble.DB) error {
		pb := db.NewBatch()
		defer pb.Close()
		for _, o := range b.ops {
			var err error
			if o.val == nil {
				err = pb.Delete(o.key, nil)
			} else {
				err = pb.Set(o.key, o.val, nil)
			}
			if err != nil {
				return err
			}
		}
		if err := pb.Set(bucketPrefix(prefixCovered, b.bucket), binary.LittleEndian.AppendUint64(nil, uint64(covered)), nil); err != nil {
			return err
		}
		b.ops, b.buf = b.ops[:0], b.buf[:0]
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
