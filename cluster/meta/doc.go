// Package meta is the metadata store of a cluster: the decisions that nodes
// must agree on, kept in one linearizable store and changed only by
// conditional writes. Gossip (package membership) tells who is alive; this
// store says who leads.
//
// It owns:
//
//   - each bucket's replicas (placement order), leader, leader epoch and
//     in-sync replica set (Bucket), with a version that every write raises;
//   - named leases with fencing tokens (the controller lease; a table's
//     tiering committer lease);
//   - a change counter that nodes poll to learn that something changed.
//
// Three implementations pass one conformance suite: Postgres (a cluster:
// every node opens the same database, --meta postgres://…), SQLite (one
// node: a file of its own in the data directory) and Mem (in memory, for
// the tests of the code above, with handles for several nodes).
// docs/cluster.md describes the store.
//
// # The compare-and-set rule
//
// UpdateBucket writes only if the stored Version equals the given one and
// the epoch rule holds (the epoch never decreases; a leader change raises
// it); otherwise it returns *ConflictError with the stored bucket. A node
// cut off from the others can thus never install a second leader: its
// write names a version that the store has moved past, or an epoch that is
// not above the one the new leader got.
//
// Each write is one transaction with its condition in the statement that
// writes (UPDATE … WHERE version = ? AND epoch rule, checking rows
// affected). On PostgreSQL the transactions run at READ COMMITTED, and
// every write transaction first locks the one row of the change counter
// (SELECT … FOR UPDATE): writes are thereby serialized, each statement
// after the lock sees all earlier commits, writes cannot deadlock, and the
// counter's order is the commit order. SERIALIZABLE was the alternative;
// it would add serialization failures that every caller must retry, for
// no gain on a store that writes a few rows a second. On SQLite every
// write transaction begins IMMEDIATE, which takes the database's one write
// lock: the same serialization.
//
// # Leases
//
// AcquireLease decides on the store's clock (PostgreSQL's clock_timestamp(),
// SQLite's Options.Now) and returns Expires on the caller's clock: the time
// the call began plus the ttl. The store's expiry is computed from a later
// instant, so the holder stops acting before the store would give the
// lease to anyone else, as long as the two clocks run at the same rate. A
// new holder's token is one more than the lease's last token (tokens are
// kept across releases); a renewal keeps the token.
//
// meta imports no project package above internal/: it knows nothing of
// tables, logs, membership or the network.
package meta
