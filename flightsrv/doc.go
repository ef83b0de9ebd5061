// Package flightsrv is Lakestream's front door: an Arrow Flight SQL service
// (statements, prepared statements, bulk ingest, metadata) plus plain Flight
// DoPut and DoGet with Lakestream's own descriptors and tickets.
//
// It holds no table logic of its own: writes go through tables.Appender,
// and every read through a tables.View (a plain scan's endpoints and
// tickets are the View's lake files and log ranges; queries run in the
// engine, whose tables are views too). Scans are served by forwarding the
// stored, already compressed Arrow messages as FlightData, with column
// projection done on the encoded bytes; a client that cannot read
// compressed bodies (the JDBC driver) gets them re-encoded uncompressed
// (plain.go, the lakestream-compression header). Every incoming message is
// checked (sizes, buffer bounds, claimed uncompressed sizes) before
// anything is decoded. Every result stream runs under a node-wide memory
// budget, in a window of its own, and is cut off when its client stops
// reading (pipe.go, window.go, budget.go). Primary-key tables (pk.go,
// lookup.go): DELETE and UPDATE run their selection in the engine and the
// table applies it; point and batch lookups are answered by Table.Lookup
// without a scan; their plain scans stream each bucket's live rows
// (tables.Table.ReadRange decodes them), since their log holds the
// changelog. The DDL that needs the engine (CREATE TABLE ... AS, CREATE
// VIEW) is ddl.go; SHOW and DESCRIBE are answered from the catalog in
// show.go; views in GetTables, views.go. errors.go is the one place that
// maps errors to gRPC status codes. writer.go reads the headers of an
// idempotent write (lakestream-writer-id, lakestream-writer-seq), which
// every call that ingests rows (bulk ingest, a path DoPut, INSERT) passes
// to the table's appender. observe.go is the interceptor around
// every call: its request id (the lakestream-request-id trailer), its log
// line when it fails or is slow, and the Observer the node counts calls
// with. limits.go caps what one client holds at once (a user's running
// queries, a connection's subscriptions and prepared statements), and
// audit.go records every DDL statement in the audit log. docs/flight.md
// documents tickets, descriptors, headers and the memory of streams;
// docs/operations.md the log; docs/security.md the limits and the audit.
//
// flightsrv imports tables, planner (and its engine's error types),
// columnarlog, catalog, auth and audit; only node imports it.
package flightsrv
