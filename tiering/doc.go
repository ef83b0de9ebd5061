// Package tiering keeps each Lakestream table's history as an Apache Iceberg
// table and serves log and lake as one table.
//
// The contract is DESIGN §5: every acknowledged row is, for a reader, in
// exactly one place — in the lake, or in the log tail at or above its
// bucket's tiered offset.
//
//   - A Service runs one committer per table (tierer.go). A round reads
//     each bucket's log from its tiered offset up to the committed end,
//     writes Parquet data files, one per partition, each with its row map
//     in the footer (lakefile.go, rowmap.go), and commits them together
//     with the new tiered offsets (table property and snapshot summary
//     "lakestream.tiered-offsets") in one Iceberg commit. After a crash the
//     offsets are read back from the table: files written by an uncommitted
//     round are orphans, never rows.
//   - A union read (union.go) captures the table's Iceberg state and its
//     offsets O[b] together, then each bucket's committed end H[b], and reads
//     the snapshot plus the log ranges [O[b], H[b]).
//   - The log keeps every segment at or above the tiered offset; below it,
//     segments go once older than log.retention (tables.Store retention).
//   - A subscription that starts below the retained log reads the bucket's
//     rows from the lake in offset order, placed by the files' row maps,
//     then continues in the log (history.go, tables.History).
//   - Maintenance (maintain.go) keeps commit and planning time flat; its
//     compaction concatenates row maps with the rows.
package tiering
