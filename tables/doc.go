// Package tables serves the tables of one node: it is the one owner of how
// rows go into a table and how a read of a table is captured.
//
//   - Writes: Appender (append.go) is the one way in. It conforms Arrow
//     records to the definition it was created with (conform.go: names,
//     safe casts; conform_types.go: view, large, dictionary and extension
//     layouts made plain), splits them by bucket with the Iceberg bucket hash,
//     encodes each piece once as a compressed log batch with statistics
//     (table.go) and appends them as one atomic write per MaxWriteBytes;
//     a write whose table changed underneath it is refused
//     (ErrSchemaChanged) rather than stored under the wrong schema. With a
//     Writer, the appender's rows are one idempotent call (writers.go):
//     stored once however often it is sent, checked against the table's
//     state of the writer, which the log gives back at open.
//   - Reads: a View (view.go) captures what one read covers — the lake
//     snapshot with its tiered offsets, then the log ranges above them —
//     and every reader goes through it: plain scans (the stored bytes, for
//     the zero-copy Flight path), the query engine (scan.Table, through
//     Store.Table), "t$lake", "t$changelog" (changelog.go) and subscription
//     starts (start.go, follow.go, history.go). A Pin (pin.go) is a view
//     that travels in a Flight ticket and is read later, or in parts.
//   - Primary-key tables (pk*.go): a write is an upsert by key through the
//     table's merge engine (tables/merge) that appends the changes it makes
//     (+I, -U/+U, -D) to the log, then updates the table's key index
//     (tables/keyindex, derived from the log and replayed from it on open)
//     and its live sets (liveset.go), so that every read of the table layer
//     returns one row per live key; Lookup reads the index alone.
//   - The lake is attached, not built in: the tiering service implements
//     Lake (lake.go) and is asked for each table's lake snapshot, files,
//     engine parts and history. Log retention (retention.go) keeps every
//     offset the lake does not hold yet.
//
// tables imports the storage below it (columnarlog, catalog, internal/...)
// and nothing above: not flightsrv, planner, tiering or node. See
// docs/architecture.md for the data flow and the consistency argument.
package tables
