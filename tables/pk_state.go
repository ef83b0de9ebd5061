package tables

import "math/bits"

// PKState is one published state of a primary-key table, as the lake
// layer sees it: each bucket's log end and the offsets below it whose
// change records hold a live key's current row. It is immutable: a
// tiering round tiers exactly one state (so the Iceberg snapshot it
// commits is the table as of one write), and a union read filters the
// lake's rows by the state it captured. See docs/lake.md, "Primary-key
// tables".
type PKState struct{ s *pkState }

// PKState returns the state reads of the table see now; ok is false for a
// log table. A primary-key table whose key index awaits its rebuild from
// the lake (during a node's start, ErrKeyIndexRebuilding) has no state
// yet: ok is true and the state is not Valid.
func (t *Table) PKState() (st PKState, ok bool) {
	return PKState{t.pkView()}, t.pk != nil
}

// Valid reports whether the state is one (the zero PKState is not).
func (s PKState) Valid() bool { return s.s != nil }

// Ends returns each bucket's log end the state covers. The caller must not
// change it.
func (s PKState) Ends() []int64 { return s.s.ends }

// Live reports whether the record at offset off of bucket holds its key's
// current row in this state.
func (s PKState) Live(bucket int, off int64) bool {
	return bucket < len(s.s.live) && s.s.live[bucket].has(off)
}

// AnyLive reports whether some record of bucket in [from, to) is live.
func (s PKState) AnyLive(bucket int, from, to int64) bool {
	return bucket < len(s.s.live) && s.s.live[bucket].anyIn(from, to)
}

// LiveKeys is the number of live keys.
func (s PKState) LiveKeys() int64 { return s.s.Live() }

// EachDead calls fn, in increasing order, with each offset of bucket below
// below that is live in prev and not in s: the records that writes between
// the two states superseded or deleted. Unchanged chunks are skipped
// without looking at their bits (states share the chunks no write changed).
func (s PKState) EachDead(prev PKState, bucket int, below int64, fn func(off int64) error) error {
	var old, cur *liveSet
	if bucket < len(prev.s.live) {
		old = prev.s.live[bucket]
	}
	if bucket < len(s.s.live) {
		cur = s.s.live[bucket]
	}
	if old == nil {
		return nil
	}
	for c, oc := range old.chunks {
		if oc == nil {
			continue
		}
		base := int64(c) * liveChunkBits
		if base >= below {
			return nil
		}
		var nc *liveChunk
		if cur != nil && c < len(cur.chunks) {
			nc = cur.chunks[c]
		}
		if nc == oc {
			continue
		}
		for i, w := range oc {
			if nc != nil {
				w &^= nc[i]
			}
			for w != 0 {
				off := base + int64(i)*64 + int64(bits.TrailingZeros64(w))
				w &= w - 1
				if off >= below {
					return nil
				}
				if err := fn(off); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// PKStateBuilder builds a PKState offset by offset: the lake layer
// rebuilds the state its snapshot holds (the live rows of its data files)
// when it opens.
type PKStateBuilder struct {
	ends  []int64
	edits []*liveEdit
}

// NewPKStateBuilder starts an empty state of buckets buckets with the given
// ends (copied).
func NewPKStateBuilder(ends []int64) *PKStateBuilder {
	b := &PKStateBuilder{ends: append([]int64(nil), ends...), edits: make([]*liveEdit, len(ends))}
	for i := range b.edits {
		b.edits[i] = (*liveSet)(nil).edit()
	}
	return b
}

// Set marks the record at offset off of bucket live.
func (b *PKStateBuilder) Set(bucket int, off int64) { b.edits[bucket].set(off) }

// Clear marks the record at offset off of bucket not live.
func (b *PKStateBuilder) Clear(bucket int, off int64) { b.edits[bucket].clear(off) }

// Done returns the state built. The builder must not be used after.
func (b *PKStateBuilder) Done() PKState {
	st := &pkState{ends: b.ends, live: make([]*liveSet, len(b.edits))}
	for i, e := range b.edits {
		st.live[i] = e.done()
	}
	return PKState{st}
}
