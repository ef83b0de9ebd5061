package tables

import (
	"bytes"
	"context"
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/lakestream/lakestream/internal/bucket"
	"github.com/lakestream/lakestream/internal/rowenc"
	"github.com/lakestream/lakestream/internal/scan"
	"github.com/lakestream/lakestream/tables/keyindex"
)

// Lookup returns the current rows of the keys in keys (a record of the
// key columns, by name), from the key index without a scan: one row per
// key found, in input order (a key given twice is returned twice),
// projected to the table's columns cols (nil: all). Many keys per call
// are cheap: they are encoded column by column from keys' arrays, sorted
// and read through one iterator per bucket; one key is one point read.
func (t *Table) Lookup(ctx context.Context, keys arrow.RecordBatch, cols []int) (arrow.RecordBatch, error) {
	if t.pk == nil {
		return nil, fmt.Errorf("lookup in %s: %w", t.Name(), ErrNotPrimaryKey)
	}
	def := t.Def()
	p := t.pk
	if p.stale.Load() {
		p.mu.Lock()
		err := p.resyncLocked(ctx)
		p.mu.Unlock()
		if err != nil {
			return nil, err
		}
	}
	lay, err := p.layout(def)
	if err != nil {
		return nil, err
	}
	out := lay.schema
	if cols != nil {
		if out, err = scan.ProjectSchema(lay.schema, cols); err != nil {
			return nil, fmt.Errorf("lookup in %s: %w", def.FullName(), err)
		}
	}
	kl, err := lay.lookupLayout()
	if err != nil {
		return nil, fmt.Errorf("lookup in %s: %w", def.FullName(), err)
	}
	keyCols := kl.columns(keys)
	if keyCols == nil {
		// Keys of other types (or with nulls, or misnamed): conformPK
		// casts them or says what is wrong with them.
		rec, _, err := conformPK(def, keys, t.mem, true)
		if err != nil {
			return nil, err
		}
		defer rec.Release()
		keyCols = make([]arrow.Array, len(lay.keyCols))
		for j, c := range lay.keyCols {
			keyCols[j] = rec.Column(c)
		}
	}
	n := int(keys.NumRows())
	rows := make([]lookupRow, n) // by input row
	if err := p.lookupRows(ctx, lay, kl, keyCols, rows); err != nil {
		return nil, fmt.Errorf("lookup in %s: %w", def.FullName(), err)
	}
	rb := array.NewRecordBuilder(t.mem, out)
	defer rb.Release()
	found := 0
	for _, r := range rows {
		if r.found {
			found++
		}
	}
	rb.Reserve(found)
	var scratch []rowenc.Value // one row's values, reused
	for _, r := range rows {
		if !r.found {
			continue
		}
		if scratch, err = lay.codec.AppendRowTo(rb.Fields(), cols, r.row, scratch); err != nil {
			return nil, fmt.Errorf("lookup in %s: key index row: %w", def.FullName(), err)
		}
	}
	return rb.NewRecordBatch(), nil
}

// lookupRow is the index row of one looked-up key.
type lookupRow struct {
	row   []byte
	found bool
}

// lookupLayout is what a lookup needs beyond the layout: the key columns'
// fields, and an assigner of buckets over a record of the key columns
// alone (the bucket key is a subset of the key, and a row's bucket depends
// only on its bucket key values and their types).
type lookupLayout struct {
	fields   []arrow.Field
	keySch   *arrow.Schema
	assigner *bucket.Assigner // nil: one bucket
}

func (l *pkLayout) lookupLayout() (*lookupLayout, error) {
	if kl := l.lookup.Load(); kl != nil {
		return kl, nil
	}
	kl := &lookupLayout{}
	for _, c := range l.keyCols {
		kl.fields = append(kl.fields, l.schema.Field(c))
	}
	kl.keySch = arrow.NewSchema(kl.fields, nil)
	if l.assigner != nil {
		var pos []int
		for _, c := range l.def.BucketKeyIndexes() {
			j := slices.Index(l.keyCols, c)
			if j < 0 {
				return nil, fmt.Errorf("bucket key column %q is not a key column", l.schema.Field(c).Name)
			}
			pos = append(pos, j)
		}
		a, err := bucket.NewAssigner(kl.keySch, pos, l.assigner.N())
		if err != nil {
			return nil, err
		}
		kl.assigner = a
	}
	l.lookup.Store(kl)
	return kl, nil
}

// columns returns the key columns of keys in key order when keys has
// those alone, each by its name, of its type and without nulls; nil
// otherwise.
func (kl *lookupLayout) columns(keys arrow.RecordBatch) []arrow.Array {
	in := keys.Schema()
	if in.NumFields() != len(kl.fields) {
		return nil // conformPK refuses the columns that are not keys
	}
	out := make([]arrow.Array, len(kl.fields))
	for j, f := range kl.fields {
		i := scan.FieldIndex(in, f.Name)
		if i < 0 {
			return nil
		}
		c := keys.Column(i)
		if !arrow.TypeEqual(c.DataType(), f.Type) || c.NullN() > 0 {
			return nil
		}
		out[j] = c
	}
	return out
}

// lookupRows reads the index rows of the keys in keyCols (the key
// columns, in key order) into rows by input row: one point read for one
// key, else the keys of each bucket encoded into one arena, sorted, and
// read through one iterator, the buckets in parallel.
func (p *pkTable) lookupRows(ctx context.Context, lay *pkLayout, kl *lookupLayout, keyCols []arrow.Array, rows []lookupRow) error {
	n := len(rows)
	if n == 0 {
		return nil
	}
	encode := func(dst []byte, r int) []byte {
		for j, c := range keyCols {
			dst = lay.keyEnc[j](dst, c, r)
		}
		return dst
	}
	var ids []int32
	if kl.assigner != nil {
		rec := array.NewRecordBatch(kl.keySch, keyCols, int64(n))
		ids = kl.assigner.Assign(rec, nil)
		rec.Release()
	}
	bucketOf := func(r int) int {
		if ids == nil {
			return 0
		}
		return int(ids[r])
	}
	if n == 1 {
		var kb [64]byte
		return p.idx.GetOne(bucketOf(0), encode(kb[:0], 0), func(e keyindex.Entry) error {
			rows[0] = lookupRow{row: bytes.Clone(e.Row), found: true}
			return nil
		})
	}
	// Rows by bucket, each with its key in one shared arena.
	nb := p.t.log.Buckets()
	counts := make([]int, nb+1)
	for r := range n {
		counts[bucketOf(r)+1]++
	}
	for b := range nb {
		counts[b+1] += counts[b]
	}
	refs := make([]rowRef, n)
	next := slices.Clone(counts[:nb])
	first := encode(nil, 0)
	arena := make([]byte, 0, n*len(first)+64)
	for r := range n {
		start := len(arena)
		arena = encode(arena, r)
		b := bucketOf(r)
		refs[next[b]] = rowRef{row: int32(r), key: arena[start:len(arena):len(arena)]}
		next[b]++
	}
	var used []int
	for b := range nb {
		if counts[b+1] > counts[b] {
			used = append(used, b)
		}
	}
	return parallel(ctx, len(used), func(i int) error {
		b := used[i]
		return p.lookupBucket(b, refs[counts[b]:counts[b+1]], rows)
	})
}

// lookupBucket reads the rows of one bucket's keys, in key order, into
// rows by input row; the rows found share one arena.
func (p *pkTable) lookupBucket(b int, refs []rowRef, rows []lookupRow) error {
	slices.SortFunc(refs, func(x, y rowRef) int { return bytes.Compare(x.key, y.key) })
	keys := make([][]byte, len(refs))
	for i, r := range refs {
		keys[i] = r.key
	}
	var arena []byte
	return p.idx.Get(b, keys, func(i int, e keyindex.Entry) error {
		if arena == nil {
			arena = make([]byte, 0, len(refs)*(len(e.Row)+len(e.Row)/2))
		}
		start := len(arena)
		arena = append(arena, e.Row...)
		rows[refs[i].row] = lookupRow{row: arena[start:len(arena):len(arena)], found: true}
		return nil
	})
}
