// cabi.h declares the few DuckDB C API functions that planner/duck calls
// directly, plus its own C helpers (cabi.c).
//
// Why not include duckdb.h: the header lives in the duckdb-go-bindings
// module, whose directory cgo cannot name portably. The declarations below
// use opaque pointers, which are ABI-compatible with DuckDB's handle typedefs
// (each handle is a pointer to a struct). The symbols come from the static
// library that duckdb-go-bindings links into every binary that imports it.
//
// Why call these directly at all: the bindings wrap the Arrow conversion
// functions only behind the duckdb_arrow build tag, and Lakestream is built
// with a plain `go build`.

#ifndef LAKESTREAM_DUCK_CABI_H
#define LAKESTREAM_DUCK_CABI_H

#include <stdint.h>
#include <stdbool.h>
#include <stdlib.h>

#ifndef ARROW_C_DATA_INTERFACE
#define ARROW_C_DATA_INTERFACE

#define ARROW_FLAG_DICTIONARY_ORDERED 1
#define ARROW_FLAG_NULLABLE 2
#define ARROW_FLAG_MAP_KEYS_SORTED 4

struct ArrowSchema {
	const char *format;
	const char *name;
	const char *metadata;
	int64_t flags;
	int64_t n_children;
	struct ArrowSchema **children;
	struct ArrowSchema *dictionary;
	void (*release)(struct ArrowSchema *);
	void *private_data;
};

struct ArrowArray {
	int64_t length;
	int64_t null_count;
	int64_t offset;
	int64_t n_buffers;
	int64_t n_children;
	const void **buffers;
	struct ArrowArray **children;
	struct ArrowArray *dictionary;
	void (*release)(struct ArrowArray *);
	void *private_data;
};

#endif // ARROW_C_DATA_INTERFACE

// DuckDB C API (duckdb.h, "arrow" and "vector" modules), opaque handles.
// duckdb_error_data duckdb_to_arrow_schema(duckdb_arrow_options, duckdb_logical_type *, const char **, idx_t,
//                                          struct ArrowSchema *)
void *duckdb_to_arrow_schema(void *arrow_options, void **types, const char **names, uint64_t column_count,
                             struct ArrowSchema *out_schema);
// duckdb_error_data duckdb_data_chunk_to_arrow(duckdb_arrow_options, duckdb_data_chunk, struct ArrowArray *)
void *duckdb_data_chunk_to_arrow(void *arrow_options, void *chunk, struct ArrowArray *out_array);
// void duckdb_unsafe_vector_assign_string_element_len(duckdb_vector, idx_t, const char *, idx_t)
void duckdb_unsafe_vector_assign_string_element_len(void *vector, uint64_t index, const char *str, uint64_t len);

// Helpers in cabi.c.
int64_t ls_assign_strings32(void *vector, void *out, uint64_t dst, const int32_t *offsets, const char *data, uint64_t n,
                            const uint8_t *validity, uint64_t vbit, bool utf8);
int64_t ls_assign_strings64(void *vector, void *out, uint64_t dst, const int64_t *offsets, const char *data, uint64_t n,
                            const uint8_t *validity, uint64_t vbit, bool utf8);
void ls_release_schema(struct ArrowSchema *schema);
void ls_release_array(struct ArrowArray *array);

// Callbacks exported from Go (callbacks.go). Their C signatures must match
// the ones cgo generates for the //export functions.
void lsReplacementScan(void *info, void *table_name, void *data);
void lsTableBind(void *info);
void lsTableInit(void *info);
void lsTableLocalInit(void *info);
void lsTableFunc(void *info, void *output);
void lsDeleteHandle(void *data);

#endif // LAKESTREAM_DUCK_CABI_H
