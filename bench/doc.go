// Package bench is Lakestream's benchmark suite: each workload measures a
// Lakestream node, in this process, against baselines, on the same data,
// through the same client code, and reports every figure as the median of
// several runs with the min–max, and as a ratio to each baseline.
//
//	Run(ctx, Config) ─► one in-process node (127.0.0.1:0, a temp data dir),
//	   │                one ceiling server (ceiling.go), and the baselines'
//	   │                servers (baselines.go: postgres.go, kafka.go,
//	   │                fluss.go with its Java driver, fluss_driver.go; their
//	   │                own processes, process groups stopped at the end)
//	   ├ ingest.go     ADBC bulk ingest (flightsql ExecuteIngest), N writers,
//	   │               per batch size, vs the ceiling discarding DoPut data,
//	   │               PostgreSQL COPY, Kafka produce and Fluss append
//	   │               (acks=all); plain Flight DoPut (doput.go) vs the
//	   │               ceiling
//	   ├ scan.go       fresh log scan, every endpoint, client decodes, vs the
//	   │               ceiling streaming the same records (plain and encoded
//	   │               with the table's codec)
//	   ├ query.go      GROUP BY queries over Flight SQL vs DuckDB in-process
//	   │               on a native table of the same rows (duckdb.go) and
//	   │               PostgreSQL
//	   ├ subscribe.go  end-to-end latency, ingest ack → row received by a
//	   │               changes() subscriber, at a target rate and at the
//	   │               highest sustainable rate, vs Kafka's produce ack →
//	   │               record consumed (feeds.go) and Fluss's append ack →
//	   │               row polled
//	   ├ pk.go         (not in DefaultWorkloads) a primary-key table: upsert
//	   │               ingest vs PostgreSQL's staging COPY + INSERT … ON
//	   │               CONFLICT (pk_pg.go), prepared point and batch
//	   │               lookups vs PostgreSQL's and a no-op RPC, a GROUP BY
//	   │               over the state vs DuckDB, the key index's disk size
//	   ├ cluster.go    (not in DefaultWorkloads) a three-node cluster in
//	   │               this process: ingest into a bucket's leader and
//	   │               subscription latency on the leader and a follower,
//	   │               vs the single node and Kafka on three brokers
//	   │               (replication factor 3, acks=all)
//	   ├ lake*.go      on a node of their own each (node.TieringManual: the
//	   │               workload runs the rounds): tiering throughput vs
//	   │               pqarrow, commit, round and plan time over
//	   │               Config.LakeRounds rounds with and without maintenance;
//	   │               union and "t$lake" scans vs the ceiling, union GROUP
//	   │               BY vs DuckDB on the same Parquet files plus the tail
//	   ▼ report.go     table, results.json; html.go: results.html
//
// A baseline that is not selected or cannot start (its jars not cached in
// the short mode, say) is listed in the report as missing with the reason,
// never left out. docs/benchmarks.md describes every workload and keeps
// the latest figures.
//
// bench is a library: `lakestream bench` (cmd/lakestream/bench.go) only binds
// flags to Config. Every node it measures is started by node.Start, never
// wired here (the main node and the ceiling in child processes of their own
// when Config.ServerCommand is set, server.go, so that their CPU per row is
// measured apart from the clients'): the workloads talk to a node as a client does, over Flight
// SQL, except that the lake workloads run tiering rounds and maintenance,
// plan union reads and read the Iceberg tables through node's accessors
// (Node.Lake, Node.Resolver, Node.LakeCatalog, Node.Tables). Of Lakestream's
// packages it imports node; tiering for the maintenance policy it sets in
// node.Config; internal/scan for the request of a timed union plan; and
// internal/arrowmsg to encode the ceiling's batches exactly as the log
// stores them. It must not import the parts node wires (catalog,
// columnarlog, tables, flightsrv, planner): internal/archtest checks it.
package bench
