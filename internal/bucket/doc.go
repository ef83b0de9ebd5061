// Package bucket is Lakestream's bucketing function: Iceberg's bucket
// transform, applied to Arrow columns. A row's log bucket is
// bucket(N, key) as the Iceberg spec defines it (Appendix B, "32-bit hash
// requirements"), so that the log's buckets line up with the lake table's
// bucket(N, col) partitions and a union read can pair log bucket b with lake
// partition b.
//
// The hash is murmur3_x86_32, seed 0, over the value's bytes:
//
//	int, long, and Arrow int8..int64, uint8..uint32   8-byte little-endian int64
//	date (date32; date64 cut to days)             days since epoch as long
//	time (time32, time64)                             microseconds of day as long
//	timestamp, timestamptz (any unit)                 microseconds since epoch as long
//	string, binary, fixed, their large and view forms the bytes
//	decimal (32, 64, 128, 256 bits)                   unscaled value, minimal big-endian two's complement
//
// and bucket = (hash & math.MaxInt32) % N. Nanoseconds are floored to
// microseconds, as Iceberg does for timestamp_ns; whoever writes such values
// to the lake as microseconds must floor them too, or instants before 1970
// that are not whole microseconds land in a neighbouring bucket. Floats, booleans, uint64 and
// nested types cannot be bucket keys: Iceberg does not bucket the first two,
// and has no type that holds the others.
//
// This package owns the hash and the split of a batch by bucket; which
// columns form a table's key, and N, are the catalog's. It imports no other
// Lakestream package.
package bucket
