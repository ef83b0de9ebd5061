#include "cabi.h"

// ls_assign_strings32 copies n Arrow utf8/binary values (int32 offsets,
// already positioned at the first value) into rows dst.. of a VARCHAR or BLOB
// vector. One cgo call per column and batch instead of one per value: the
// per-call cost of cgo (~50 ns) would otherwise dominate short strings.
void ls_assign_strings32(void *vector, uint64_t dst, const int32_t *offsets, const char *data, uint64_t n) {
	for (uint64_t i = 0; i < n; i++) {
		int32_t start = offsets[i];
		duckdb_vector_assign_string_element_len(vector, dst + i, data + start, (uint64_t)(offsets[i + 1] - start));
	}
}

// ls_assign_strings64 is ls_assign_strings32 for large_utf8/large_binary.
void ls_assign_strings64(void *vector, uint64_t dst, const int64_t *offsets, const char *data, uint64_t n) {
	for (uint64_t i = 0; i < n; i++) {
		int64_t start = offsets[i];
		duckdb_vector_assign_string_element_len(vector, dst + i, data + start, (uint64_t)(offsets[i + 1] - start));
	}
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
