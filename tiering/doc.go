// Package tiering keeps each Lakestream table's history as an Apache Iceberg
// table, and is the lake layer of package tables: Service implements
// tables.Lake, so that reads of the store's tables find each table's lake
// snapshot, data files, engine parts and history through it.
//
// The contract (docs/lake.md): every acknowledged row is, for a reader, in
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
//     A partition's files are in a directory whose name reads the same
//     taken as written or URL-decoded (lakepath.go), so that every reader
//     finds a file where its manifest entry says.
//   - A primary-key table's round (pkround.go) tiers one published state
//     of the table whole: its change records as data files, plus position
//     delete files that hide every row but each live key's current one, in
//     the same commit. The lake's own state (live offsets) and an index of
//     its runs (offset -> data file, row) are kept per table (pklake.go),
//     rebuilt from the lake when it is loaded; LiveRows (pklive.go) reads
//     the live rows with their offsets. Its compaction (pkcompact.go)
//     applies the deletes to files older than log.retention; younger small
//     files and the delete files are merged without changing a row
//     (pkmerge.go), so the history stays exact.
//   - Reads (union.go, lakefiles.go): the lake state and its offsets are
//     read together (lakeReader.Snapshot), which tables.View pairs with the
//     log ranges above them; a snapshot's files are planned by id, with
//     pushed filters pruning files for the engine, or read whole for plain
//     scans (a ticket's paths are checked against the snapshot).
//   - The log keeps every segment at or above the tiered offset; below it,
//     segments go once older than log.retention (tables.Store retention).
//   - A subscription that starts below the retained log reads the bucket's
//     rows from the lake in offset order, placed by the files' row maps,
//     then continues in the log (history.go, tables.History).
//   - Maintenance (maintain.go) keeps commit and planning time flat; its
//     compaction concatenates row maps with the rows.
//   - Relocate (relocate.go, relocate_files.go) points the embedded lake's
//     tables at their files again after the data directory was moved or
//     copied: new manifests, manifest lists and metadata, then a
//     compare-and-swap of each catalog row; a table it could not relocate
//     is quarantined (ErrLakeElsewhere), never read at the old place.
//
// tiering imports tables, columnarlog, catalog and internal/...; it must
// not import flightsrv, planner, node or cmd.
package tiering
