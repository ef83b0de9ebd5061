package tables

import (
	"context"
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/lakestream/lakestream/internal/scan"
	"github.com/lakestream/lakestream/tables/keyindex"
)

// prefixChunkRows bounds the rows of one record LookupPrefix sends.
const prefixChunkRows = 64 << 10

// LookupPrefix sends the current rows of every key that begins with one
// of prefixes — a record of the leading primary-key columns (the first k,
// by name, 1 <= k <= the key's length) — read from the key index without
// a scan: for each prefix row in order, its keys in key order, projected
// to the table's columns cols (nil: all), in records of at most 64k rows
// that send must not keep. When the prefix columns hold the bucket key,
// each prefix reads one bucket (one seek and the range); otherwise every
// bucket is sought.
func (t *Table) LookupPrefix(ctx context.Context, prefixes arrow.RecordBatch, cols []int, send func(arrow.RecordBatch) error) error {
	if t.pk == nil {
		return fmt.Errorf("lookup in %s: %w", t.Name(), ErrNotPrimaryKey)
	}
	def := t.Def()
	p := t.pk
	if p.stale.Load() {
		p.mu.Lock()
		err := p.resyncLocked(ctx)
		p.mu.Unlock()
		if err != nil {
			return err
		}
	}
	lay, err := p.layout(def)
	if err != nil {
		return err
	}
	cols = scan.Columns(cols, lay.schema.NumFields())
	out, err := scan.ProjectSchema(lay.schema, cols)
	if err != nil {
		return fmt.Errorf("lookup in %s: %w", def.FullName(), err)
	}
	k := int(prefixes.NumCols())
	if k < 1 || k > len(lay.keyCols) {
		return &SchemaError{def.FullName(), "", fmt.Sprintf("a prefix lookup takes 1 to %d leading primary key columns (%s), not %d", len(lay.keyCols), joinNames(def.PrimaryKey), k)}
	}
	// The prefix columns, conformed to the key's types, in a record of
	// the table's schema (the other columns null) for the bucket assigner.
	full := make([]arrow.Array, lay.schema.NumFields())
	for _, c := range lay.keyCols[:k] {
		f := lay.schema.Field(c)
		i := scan.FieldIndex(prefixes.Schema(), f.Name)
		if i < 0 {
			return &SchemaError{def.FullName(), f.Name, "missing: a prefix lookup takes the leading primary key columns (" + joinNames(def.PrimaryKey[:k]) + ")"}
		}
		if err := array.ValidateFull(prefixes.Column(i)); err != nil {
			return &SchemaError{def.FullName(), f.Name, "invalid data: " + err.Error()}
		}
		col, err := conformColumn(f, prefixes.Column(i), t.mem)
		if err != nil {
			return &SchemaError{def.FullName(), f.Name, "primary key column: " + err.Error()}
		}
		if col.NullN() > 0 {
			col.Release()
			return &SchemaError{def.FullName(), f.Name, "a key value is NULL: no key has it"}
		}
		full[c] = col
	}
	for c, a := range full {
		if a == nil {
			full[c] = array.MakeArrayOfNull(t.mem, lay.schema.Field(c).Type, int(prefixes.NumRows()))
		}
	}
	rec := array.NewRecordBatch(lay.schema, full, prefixes.NumRows())
	for _, a := range full {
		a.Release()
	}
	defer rec.Release()
	var ids []int32
	if bk := def.BucketKeyIndexes(); lay.assigner != nil && isSubset(bk, lay.keyCols[:k]) {
		ids = lay.assigner.Assign(rec, nil)
	}

	rb := array.NewRecordBuilder(t.mem, out)
	defer rb.Release()
	rows := 0
	flush := func() error {
		if rows == 0 {
			return nil
		}
		r := rb.NewRecordBatch()
		defer r.Release()
		rows = 0
		return send(r)
	}
	var key []byte
	for r := 0; r < int(rec.NumRows()); r++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		key = key[:0]
		for j, c := range lay.keyCols[:k] {
			key = lay.keyEnc[j](key, rec.Column(c), r)
		}
		buckets := []int{0}
		switch {
		case ids != nil:
			buckets[0] = int(ids[r])
		case lay.assigner != nil:
			buckets = buckets[:0]
			for b := range t.log.Buckets() {
				buckets = append(buckets, b)
			}
		}
		for _, b := range buckets {
			err := p.idx.ScanPrefix(b, key, func(_ []byte, e keyindex.Entry) error {
				if _, err := lay.codec.AppendRowTo(rb.Fields(), cols, e.Row, nil); err != nil {
					return fmt.Errorf("key index row: %w", err)
				}
				if rows++; rows == prefixChunkRows {
					return flush()
				}
				return nil
			})
			if err != nil {
				return fmt.Errorf("lookup in %s: %w", def.FullName(), err)
			}
		}
	}
	return flush()
}

func isSubset(sub, of []int) bool {
	for _, c := range sub {
		if !slices.Contains(of, c) {
			return false
		}
	}
	return true
}
