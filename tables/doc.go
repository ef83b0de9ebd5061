// Package tables serves the tables of one node from their columnar logs: it
// opens a table's bucket logs, turns Arrow records into log batches (schema
// check and safe casts, bucketing by the Iceberg bucket hash, compression
// once at write time) and reads them back, either as the stored bytes for
// the zero-copy Flight path or decoded, as a scan.Table for the planner.
//
// It sits between the network and SQL layers above (flightsrv, planner) and
// the storage below (columnarlog, catalog); it imports neither of the former.
package tables
