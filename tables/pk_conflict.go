package tables

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lakestream/lakestream/tables/keyindex"
)

// ErrWriteConflict is returned by DeleteSince and OverwriteSince when a
// row they were computed from changed after the state they name: the
// statement should read again and retry. It is transient.
var ErrWriteConflict = errors.New("a concurrent write changed a row the statement read")

// DeleteSince is Delete, refused with ErrWriteConflict (nothing written)
// when one of the keys' rows was written after since: a DELETE whose
// predicate was evaluated over since (or a later state) then deletes only
// rows it saw. A key without a row is not a conflict (it is not deleted).
func (t *Table) DeleteSince(ctx context.Context, keys arrow.RecordBatch, since PKState) (int64, error) {
	return t.delete(ctx, keys, since)
}

// OverwriteSince is Overwrite, refused with ErrWriteConflict (nothing
// written) when one of the rows' keys was written after since or has no
// row: an UPDATE computed its new rows from the rows it read, so a row
// changed or deleted since must be read again (no lost update).
func (t *Table) OverwriteSince(ctx context.Context, rows arrow.RecordBatch, since PKState) (int64, error) {
	return t.overwrite(ctx, rows, since)
}

// checkSince reports ErrWriteConflict when an input with a since state
// touches a key written at or after that state's end of its bucket (or,
// for an overwrite, a key without a row). It runs under p.mu, before the
// write reads the index for its changes.
func (p *pkTable) checkSince(ctx context.Context, lay *pkLayout, inputs []pkInput) error {
	for _, in := range inputs {
		if !in.since.Valid() {
			continue
		}
		ends := in.since.Ends()
		n := p.t.log.Buckets()
		refs := make([][]rowRef, n)
		var arena []byte
		for r, b := range lay.buckets(in.rec, nil) {
			start := len(arena)
			arena = lay.key(arena, in.rec.Columns(), r)
			refs[b] = append(refs[b], rowRef{row: int32(r), key: arena[start:len(arena):len(arena)]})
		}
		used := nonEmpty(refs)
		err := parallel(ctx, len(used), func(i int) error {
			b := used[i]
			rs := refs[b]
			slices.SortFunc(rs, func(x, y rowRef) int { return bytes.Compare(x.key, y.key) })
			keys := make([][]byte, len(rs))
			for j, r := range rs {
				keys[j] = r.key
			}
			found := 0
			err := p.idx.Get(b, keys, func(j int, e keyindex.Entry) error {
				found++
				if b >= len(ends) || e.Offset >= ends[b] {
					return fmt.Errorf("%w (bucket %d offset %d)", ErrWriteConflict, b, e.Offset)
				}
				return nil
			})
			if err == nil && in.op == opOverwrite && found < len(keys) {
				err = fmt.Errorf("%w: a row was deleted", ErrWriteConflict)
			}
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil
}
