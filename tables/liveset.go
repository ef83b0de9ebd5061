package tables

import "math/bits"

// liveChunkBits is the number of offsets one chunk of a live set covers
// (8 KiB of bits): a write copies only the chunks it changes.
const liveChunkBits = 1 << 16

type liveChunk [liveChunkBits / 64]uint64

// liveSet marks the offsets of one bucket's log whose change records hold
// a live key's current row (+I or +U). A liveSet is immutable once
// published: writers derive the next version with edit, copying only the
// chunks they change, so a read keeps the version it captured while
// writes go on.
//
// Invariant: count is the number of marked offsets.
type liveSet struct {
	chunks []*liveChunk // chunk i covers [i*liveChunkBits, (i+1)*liveChunkBits); nil: none marked
	count  int64
}

func (s *liveSet) has(off int64) bool {
	c := off / liveChunkBits
	if s == nil || off < 0 || c >= int64(len(s.chunks)) || s.chunks[c] == nil {
		return false
	}
	i := off % liveChunkBits
	return s.chunks[c][i/64]&(1<<(i%64)) != 0
}

// anyIn reports whether an offset in [from, to) is marked.
func (s *liveSet) anyIn(from, to int64) bool {
	if s == nil {
		return false
	}
	for off := max(from, 0); off < to; {
		c := off / liveChunkBits
		if c >= int64(len(s.chunks)) {
			return false
		}
		end := min(to, (c+1)*liveChunkBits)
		if ch := s.chunks[c]; ch != nil {
			for i := off % liveChunkBits; i < end-c*liveChunkBits; {
				w := ch[i/64] >> (i % 64)
				n := min(64-i%64, end-c*liveChunkBits-i)
				if n < 64 {
					w &= 1<<n - 1
				}
				if w != 0 {
					return true
				}
				i += n
			}
		}
		off = end
	}
	return false
}

// first is the lowest marked offset, or -1.
func (s *liveSet) first() int64 {
	if s == nil {
		return -1
	}
	for c, ch := range s.chunks {
		if ch == nil {
			continue
		}
		for i, w := range ch {
			if w != 0 {
				return int64(c)*liveChunkBits + int64(i)*64 + int64(bits.TrailingZeros64(w))
			}
		}
	}
	return -1
}

// liveEdit builds the next version of a live set.
type liveEdit struct {
	next   *liveSet
	copied map[int64]bool // chunks of next that are its own
}

func (s *liveSet) edit() *liveEdit {
	n := &liveSet{}
	if s != nil {
		n.chunks = append([]*liveChunk(nil), s.chunks...)
		n.count = s.count
	}
	return &liveEdit{next: n, copied: map[int64]bool{}}
}

func (e *liveEdit) chunk(off int64) (*liveChunk, int64) {
	c := off / liveChunkBits
	for int64(len(e.next.chunks)) <= c {
		e.next.chunks = append(e.next.chunks, nil)
	}
	if !e.copied[c] {
		ch := new(liveChunk)
		if old := e.next.chunks[c]; old != nil {
			*ch = *old
		}
		e.next.chunks[c] = ch
		e.copied[c] = true
	}
	return e.next.chunks[c], off % liveChunkBits
}

func (e *liveEdit) set(off int64) {
	ch, i := e.chunk(off)
	if ch[i/64]&(1<<(i%64)) == 0 {
		ch[i/64] |= 1 << (i % 64)
		e.next.count++
	}
}

func (e *liveEdit) clear(off int64) {
	if !e.next.has(off) {
		return
	}
	ch, i := e.chunk(off)
	ch[i/64] &^= 1 << (i % 64)
	e.next.count--
}

func (e *liveEdit) done() *liveSet { return e.next }

// word is the i-th 64-bit word of the set's bitmap: offsets [64i, 64i+64).
func (s *liveSet) word(i int64) uint64 {
	c := i / (liveChunkBits / 64)
	if s == nil || i < 0 || c >= int64(len(s.chunks)) || s.chunks[c] == nil {
		return 0
	}
	return s.chunks[c][i%(liveChunkBits/64)]
}

// bits returns the marks of offsets [from, to) as keepBits (bit i for
// from+i) in dst's storage, and how many are set.
func (s *liveSet) bits(from, to int64, dst keepBits) (keepBits, int) {
	n := max(0, to-from)
	dst = append(dst[:0], make(keepBits, (n+63)/64)...)
	kept := 0
	sh := uint(from % 64)
	for i := range dst {
		w0 := (from + int64(i)*64) / 64
		w := s.word(w0) >> sh
		if sh != 0 {
			w |= s.word(w0+1) << (64 - sh)
		}
		if rest := n - int64(i)*64; rest < 64 {
			w &= 1<<rest - 1
		}
		dst[i] = w
		kept += bits.OnesCount64(w)
	}
	return dst, kept
}
