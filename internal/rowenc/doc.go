// Package rowenc encodes single rows of Arrow columns as bytes, for the key
// index of primary-key tables (docs/format/keyindex.md):
//
//   - the key encoding (key.go) is order-preserving: comparing two encoded
//     keys bytewise orders them as their values do, column by column, so an
//     index sorted by encoded key is sorted by key, and a prefix of the key
//     columns is a prefix of the bytes;
//   - the row encoding (row.go) is compact and self-describing in its column
//     count, so a row stored under an older schema (fewer columns) decodes
//     with the columns added since as nulls.
//
// Both decode straight into Arrow builders (build.go), with no intermediate
// Go values. A row is handled as []Value, each the encoded bytes of one
// column (Raw), which the merge engines read through the typed accessors of
// value.go.
//
// rowenc imports no other Lakestream package.
package rowenc
