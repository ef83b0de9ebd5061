package keyindex

import (
	"errors"

	"github.com/cockroachdb/pebble/v2"
)

// ScanPrefix calls fn, in key order, with every entry of bucket whose
// encoded key begins with prefix (the encodings of the leading key columns:
// each column's encoding is self-delimiting, so a prefix of columns is a
// prefix of bytes). key and Row are valid only during the call. The Bloom
// filters are over whole keys and do not help here: the scan seeks once
// and reads the range.
func (x *Index) ScanPrefix(bucket int, prefix []byte, fn func(key []byte, e Entry) error) error {
	lower := RowKey(nil, bucket, prefix)
	upper := successor(lower)
	if upper == nil {
		upper = bucketPrefix(prefixRow, bucket+1)
	}
	return x.use(func(db *pebble.DB) error {
		it, err := db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
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

// successor is the smallest key greater than every key that begins with
// p, or nil when there is none (p is all 0xFF).
func successor(p []byte) []byte {
	s := append([]byte(nil), p...)
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] != 0xFF {
			s[i]++
			return s[:i+1]
		}
	}
	return nil
}
