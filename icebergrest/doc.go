// Package icebergrest serves the node's lake as an Apache Iceberg REST
// catalog (docs/lake.md, "The REST catalog"): GET /v1/config, the
// namespaces (Lakestream databases), and list and load of the tiered
// tables, whose LoadTableResult carries the metadata location and metadata
// of the lake state Lakestream last committed — the one `"t$lake"` reads.
//
// It is read-only: every write the REST spec defines (create, commit,
// drop, rename, register, namespace changes) is refused with 403 and a
// message saying to write through Lakestream, since the lake table's rows
// and offsets must stay the log's (docs/lake.md, "External engines").
// Callers are authenticated before the handler (node/security.go); a user
// sees and loads only the tables it may SELECT (auth.Authorize), and a
// namespace only when it holds one.
//
// icebergrest imports auth and catalog; the lake is behind the Lake
// interface (the node adapts the tiering service to it). It must not import
// node, flightsrv, planner, tables or tiering.
package icebergrest
