package bucket

import (
	"encoding/binary"
	"math"
	"math/bits"
)

// Of returns Iceberg's bucket for a 32-bit hash: the sign bit dropped, then
// modulo n, which must be positive. With Hash it buckets a single value.
func Of(hash uint32, n int) int32 {
	return int32((hash & math.MaxInt32) % uint32(n))
}

// hashLong is murmur3_x86_32, seed 0, of v as 8 little-endian bytes: the
// hash of every Iceberg int, long, date, time and timestamp. It is two block
// mixes and the finalizer rather than an encode and murmur3.SeedSum32, whose
// general loop and tail cost more than the 8-byte case needs: 1.3-1.8x
// faster in BenchmarkHashLong. feedLongs and feedDivided spell it out inline;
// tests check both against SeedSum32.
func hashLong(v int64) uint32 {
	return fmix(mix(mix(0, uint32(v)), uint32(uint64(v)>>32)) ^ 8)
}

// murmur3_x86_32 block constants.
const (
	c1 uint32 = 0xcc9e2d51
	c2 uint32 = 0x1b873593
)

// stream is murmur3_x86_32 (seed 0) fed piecewise: the hash of a key of
// several columns, one column at a time, without building each row's
// concatenated bytes. twmb/murmur3 has a streaming digest, but only behind
// hash.Hash32, one allocation and one interface call per row; this is 16
// bytes a row in one slice per batch. Tests check it against
// murmur3.SeedSum32 of the concatenation.
type stream struct {
	h1    uint32
	tail  uint32 // ntail pending bytes, little-endian
	ntail uint8
	null  bool // a key column was null: the row goes to bucket 0
	n     uint32
}

func mix(h1, k1 uint32) uint32 {
	k1 *= c1
	k1 = bits.RotateLeft32(k1, 15)
	k1 *= c2
	h1 ^= k1
	h1 = bits.RotateLeft32(h1, 13)
	return h1*5 + 0xe6546b64
}

// writeLong feeds v as 8 little-endian bytes.
func (s *stream) writeLong(v int64) {
	if s.ntail == 0 { // whole blocks: the usual case, all-long keys
		s.h1 = mix(mix(s.h1, uint32(v)), uint32(uint64(v)>>32))
		s.n += 8
		return
	}
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(v))
	write(s, b[:])
}

// write feeds b.
func write[T []byte | string](s *stream, b T) {
	s.n += uint32(len(b))
	i := 0
	for ; s.ntail > 0 && s.ntail < 4 && i < len(b); i++ {
		s.tail |= uint32(b[i]) << (8 * s.ntail)
		s.ntail++
	}
	if s.ntail == 4 {
		s.h1 = mix(s.h1, s.tail)
		s.tail, s.ntail = 0, 0
	}
	for ; i+4 <= len(b); i += 4 {
		s.h1 = mix(s.h1, uint32(b[i])|uint32(b[i+1])<<8|uint32(b[i+2])<<16|uint32(b[i+3])<<24)
	}
	for ; i < len(b); i++ {
		s.tail |= uint32(b[i]) << (8 * s.ntail)
		s.ntail++
	}
}

// sum finishes the hash.
func (s *stream) sum() uint32 {
	h1 := s.h1
	if s.ntail > 0 {
		k1 := s.tail * c1
		k1 = bits.RotateLeft32(k1, 15)
		k1 *= c2
		h1 ^= k1
	}
	return fmix(h1 ^ s.n)
}

// fmix is murmur3's finalizer; the caller has xored in the length.
func fmix(h uint32) uint32 {
	h ^= h >> 16
	h *= 0x85ebca6b
	h ^= h >> 13
	h *= 0xc2b2ae35
	h ^= h >> 16
	return h
}

// minimalBytes trims a big-endian two's-complement integer to its shortest
// form, as Java's BigInteger.toByteArray gives it: Iceberg hashes a decimal's
// unscaled value so. It drops each leading byte that only repeats the sign
// of the next.
func minimalBytes(b []byte) []byte {
	for len(b) > 1 && ((b[0] == 0x00 && b[1] < 0x80) || (b[0] == 0xff && b[1] >= 0x80)) {
		b = b[1:]
	}
	return b
}

// decimalBytes64 writes v into scratch as minimal big-endian two's
// complement; decimal32 and decimal64 values go through it widened.
func decimalBytes64(scratch *[32]byte, v int64) []byte {
	binary.BigEndian.PutUint64(scratch[:8], uint64(v))
	return minimalBytes(scratch[:8])
}

func decimalBytes128(scratch *[32]byte, hi int64, lo uint64) []byte {
	binary.BigEndian.PutUint64(scratch[:8], uint64(hi))
	binary.BigEndian.PutUint64(scratch[8:16], lo)
	return minimalBytes(scratch[:16])
}

// decimalBytes256 takes the four 64-bit words least significant first, as
// decimal256.Num stores them.
func decimalBytes256(scratch *[32]byte, w [4]uint64) []byte {
	for i := range 4 {
		binary.BigEndian.PutUint64(scratch[8*i:], w[3-i])
	}
	return minimalBytes(scratch[:32])
}
