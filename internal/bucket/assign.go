package bucket

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// Hash returns the Iceberg 32-bit hash of arr's value at i, and false if that
// value is null. It is for single values (routing one key, tests); Assign is
// the batch path. It panics if arr's type fails CheckType.
func Hash(arr arrow.Array, i int) (uint32, bool) {
	spec, err := specOf(arr.DataType())
	if err != nil {
		panic("bucket: Hash: " + err.Error())
	}
	one := array.NewSlice(arr, int64(i), int64(i+1))
	defer one.Release()
	var st [1]stream
	feed(&sink{streams: st[:]}, one, spec)
	if st[0].null {
		return 0, false
	}
	return st[0].sum(), true
}

// Assigner computes the bucket of every row of a batch. It is immutable and
// safe for concurrent use; build one per table schema.
//
// A key of one column gives Iceberg's bucket(N, col) exactly. A key of
// several columns hashes the concatenation of each column's bytes, encoded
// as above, which is deterministic but matches no Iceberg transform: Iceberg
// buckets one column at a time, so a lake partitioned by a multi-column key
// will not line up with the log's buckets. A row with a null in any key
// column goes to bucket 0.
type Assigner struct {
	n     uint32
	cols  []int
	specs []colSpec
	types []arrow.DataType
}

// NewAssigner returns an Assigner for n buckets keyed by the columns of
// schema at keyCols. It reports every problem it finds, not just the first.
func NewAssigner(schema *arrow.Schema, keyCols []int, n int) (*Assigner, error) {
	var errs []error
	if n < 1 || n > math.MaxInt32 {
		errs = append(errs, fmt.Errorf("bucket count %d is outside [1, %d]", n, math.MaxInt32))
	}
	if len(keyCols) == 0 {
		errs = append(errs, errors.New("no key columns: an unkeyed table spreads batches without an Assigner"))
	}
	a := &Assigner{n: uint32(n), cols: slices.Clone(keyCols)}
	for j, c := range keyCols {
		if c < 0 || c >= schema.NumFields() {
			errs = append(errs, fmt.Errorf("key column %d: schema has %d columns", c, schema.NumFields()))
			continue
		}
		if slices.Contains(keyCols[:j], c) {
			errs = append(errs, fmt.Errorf("key column %d given twice", c))
		}
		f := schema.Field(c)
		spec, err := specOf(f.Type)
		if err != nil {
			errs = append(errs, fmt.Errorf("key column %d (%s): %w", c, f.Name, err))
		}
		a.specs = append(a.specs, spec)
		a.types = append(a.types, f.Type)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return a, nil
}

// N is the number of buckets.
func (a *Assigner) N() int { return int(a.n) }

// Assign returns the bucket of each row of rec, in out's storage when it is
// large enough. rec must have the schema the Assigner was built for (at
// least, the same key column types); anything else is a caller bug and
// panics.
//
// With one key column, each row is hashed and bucketed in one loop per
// column type. With several, each row's hash is streamed column by column,
// which costs one slice of 16 bytes a row per call.
func (a *Assigner) Assign(rec arrow.RecordBatch, out []int32) []int32 {
	rows := int(rec.NumRows())
	out = slices.Grow(out[:0], rows)[:rows]
	s := sink{n: a.n, out: out}
	if len(a.cols) > 1 {
		s.streams = make([]stream, rows)
	}
	for j, c := range a.cols {
		col := rec.Column(c)
		if !arrow.TypeEqual(col.DataType(), a.types[j]) {
			panic(fmt.Sprintf("bucket: Assign: column %d is %s, the Assigner was built for %s", c, col.DataType(), a.types[j]))
		}
		feed(&s, col, a.specs[j])
	}
	for i := range s.streams {
		if s.streams[i].null {
			out[i] = 0
		} else {
			out[i] = Of(s.streams[i].sum(), int(a.n))
		}
	}
	return out
}
