#include <string.h>

#include "cabi.h"

// ls_string_t is duckdb_string_t (duckdb.h, part of the stable C API): 16
// bytes, a uint32 length, then either the bytes inlined and zero-padded
// (length <= 12) or a 4-byte prefix and a pointer into the vector's heap.
typedef struct {
	uint32_t length;
	char inlined[12];
} ls_string_t;

#define LS_INLINE_LENGTH 12

// ls_valid_utf8 reports whether str is well-formed UTF-8 (RFC 3629: no
// overlong forms, no surrogates, nothing above U+10FFFF), which DuckDB
// requires of every VARCHAR. ASCII runs are checked 8 bytes at a time.
static bool ls_valid_utf8(const unsigned char *s, uint64_t len) {
	uint64_t i = 0;
	while (i < len) {
		if (i + 8 <= len) {
			uint64_t w;
			memcpy(&w, s + i, 8);
			if ((w & 0x8080808080808080ULL) == 0) {
				i += 8;
				continue;
			}
		}
		unsigned char c = s[i];
		if (c < 0x80) {
			i++;
			continue;
		}
		uint64_t n;
		uint32_t min, cp;
		if ((c & 0xE0) == 0xC0) {
			n = 1, min = 0x80, cp = c & 0x1F;
		} else if ((c & 0xF0) == 0xE0) {
			n = 2, min = 0x800, cp = c & 0x0F;
		} else if ((c & 0xF8) == 0xF0) {
			n = 3, min = 0x10000, cp = c & 0x07;
		} else {
			return false;
		}
		if (i + n >= len) { // truncated sequence
			return false;
		}
		for (uint64_t k = 1; k <= n; k++) {
			unsigned char cc = s[i + k];
			if ((cc & 0xC0) != 0x80) {
				return false;
			}
			cp = (cp << 6) | (cc & 0x3F);
		}
		if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
			return false;
		}
		i += n + 1;
	}
	return true;
}

// ls_ascii reports whether s[0:len] is all ASCII, 8 bytes at a time.
static bool ls_ascii(const unsigned char *s, uint64_t len) {
	uint64_t acc = 0, i = 0;
	for (; i + 8 <= len; i += 8) {
		uint64_t w;
		memcpy(&w, s + i, 8);
		acc |= w;
	}
	for (; i < len; i++) {
		acc |= s[i];
	}
	return (acc & 0x8080808080808080ULL) == 0;
}

// ls_assign_string writes one value: short strings straight into the
// vector's data, longer ones through DuckDB, which copies them into the
// vector's string heap. Writing inlined strings directly is ~5x faster for
// the short strings (names, kinds, codes) that dominate tables (measured
// with BenchmarkGroupBy). VARCHAR values are validated here once, so DuckDB
// is called without its own check.
static inline bool ls_assign_string(void *vector, ls_string_t *out, uint64_t index, const char *str, uint64_t len,
                                    bool utf8) {
	if (utf8 && !ls_valid_utf8((const unsigned char *)str, len)) {
		return false;
	}
	if (len <= LS_INLINE_LENGTH) {
		ls_string_t *s = &out[index];
		memset(s, 0, sizeof(*s));
		s->length = (uint32_t)len;
		if (len > 0) {
			memcpy(s->inlined, str, len);
		}
		return true;
	}
	duckdb_unsafe_vector_assign_string_element_len(vector, index, str, len);
	return true;
}

// ls_is_null reports whether Arrow validity bit i (LSB first) is clear; no
// bitmap means no nulls. The bytes under a null slot are undefined in Arrow,
// so null values are neither checked nor copied.
static inline bool ls_is_null(const uint8_t *validity, uint64_t i) {
	return validity != NULL && (validity[i >> 3] & (1u << (i & 7))) == 0;
}

// ls_assign_strings32 copies n Arrow utf8/binary values (int32 offsets,
// already positioned at the first value; validity bits from vbit on) into
// rows dst.. of a VARCHAR or BLOB vector whose data is out. One cgo call per
// column and batch instead of one per value: the per-call cost of cgo
// (~50 ns) would dominate short strings. It returns the index of the first
// value that is not valid UTF-8 (utf8 set: a VARCHAR column), or -1.
int64_t ls_assign_strings32(void *vector, void *out, uint64_t dst, const int32_t *offsets, const char *data, uint64_t n,
                            const uint8_t *validity, uint64_t vbit, bool utf8) {
	// The values of a batch are contiguous: one ASCII pass over all of them
	// replaces the per-value check in the common case.
	if (utf8 && ls_ascii((const unsigned char *)data + offsets[0], (uint64_t)(offsets[n] - offsets[0]))) {
		utf8 = false;
	}
	for (uint64_t i = 0; i < n; i++) {
		int32_t start = offsets[i];
		if (ls_is_null(validity, vbit + i)) {
			memset(&((ls_string_t *)out)[dst + i], 0, sizeof(ls_string_t));
			continue;
		}
		if (!ls_assign_string(vector, (ls_string_t *)out, dst + i, data + start, (uint64_t)(offsets[i + 1] - start),
		                      utf8)) {
			return (int64_t)i;
		}
	}
	return -1;
}

// ls_assign_strings64 is ls_assign_strings32 for large_utf8/large_binary.
int64_t ls_assign_strings64(void *vector, void *out, uint64_t dst, const int64_t *offsets, const char *data, uint64_t n,
                            const uint8_t *validity, uint64_t vbit, bool utf8) {
	if (utf8 && ls_ascii((const unsigned char *)data + offsets[0], (uint64_t)(offsets[n] - offsets[0]))) {
		utf8 = false;
	}
	for (uint64_t i = 0; i < n; i++) {
		int64_t start = offsets[i];
		if (ls_is_null(validity, vbit + i)) {
			memset(&((ls_string_t *)out)[dst + i], 0, sizeof(ls_string_t));
			continue;
		}
		if (!ls_assign_string(vector, (ls_string_t *)out, dst + i, data + start, (uint64_t)(offsets[i + 1] - start),
		                      utf8)) {
			return (int64_t)i;
		}
	}
	return -1;
}

void ls_release_schema(struct ArrowSchema *schema) {
	if (schema != NULL && schema->release != NULL) {
		schema->release(schema);
	}
}

void ls_release_array(struct ArrowArray *array) {
	if (array != NULL && array->release != NULL) {
		array->release(array);
	}
}
