// Package columnarlog is Lakestream's log: the durable, append-only store of
// each table's recent rows, per bucket, as encoded Arrow record batches.
//
// # What it owns
//
//   - The batch format (batch.go, stats.go): a fixed header the server stamps
//     (offset, commit timestamp, leader epoch) ahead of a CRC-32C that covers
//     the rest, a header CRC-32C over the stamped fields, optional column
//     statistics and change types, and one encapsulated Arrow IPC message
//     that the log stores and forwards as bytes, never decoding it.
//   - Segments and sparse indexes (segment.go, files.go): a bucket's Log is a
//     run of segment files named by the offset of their first row; a sealed
//     segment has an offset index and a time index beside it, which are a
//     cache rebuilt from the segment when missing or damaged, and a snapshot
//     of the idempotent writers.
//   - Appends (log.go, commit.go): a Log stamps and writes a batch under its
//     lock, then acknowledges it once an fsync covers it; concurrent
//     appenders share one fsync (group commit).
//   - The commit record of a multi-bucket round (table.go): a TableLog makes a
//     write spanning several buckets atomic. Writes go to the bucket logs
//     unsynced; a commit round appends to the table's commit file the end
//     offset of every bucket and fsyncs that record and the bucket data in
//     parallel, and only then are the round's writes visible and
//     acknowledged. A write or round that fails (a full disk, an I/O error)
//     makes it refuse writes until the next write repairs it: the commit
//     file is rewritten with the committed ends, and every bucket cut back to
//     its committed end, without a restart.
//   - Recovery (open.go, table.go): open checks the active segment batch by
//     batch and cuts a torn or damaged tail, then a TableLog cuts every bucket
//     back to the ends of the last commit record whose data every bucket
//     holds (the one before the last when a crash cut the last round short).
//   - Retention (retention.go): deleting the oldest sealed segments, never at
//     or above the floor the caller gives (the offset up to which the table
//     was tiered into the lake).
//   - Readers and notification (reader.go): a Reader returns committed
//     batches from an offset, as stored, each checked as it is read from
//     disk; Notify is closed when the committed offset moves, Done when the
//     log closes, so readers wait without polling.
//   - Replication (replica.go, epochs.go, highwater.go), for a TableLog
//     opened with Options.Replicated: per bucket a leader-epoch history (BecomeLeader,
//     EndForEpoch, Divergence), follower appends that store a leader's
//     batches unchanged (AppendReplica), truncation of a divergent tail
//     (Truncate), and a high watermark (SetHighWatermark, checkpointed)
//     that bounds what readers see, while replica readers
//     (NewReplicaReader, NotifyDurable) read up to the durable end for
//     followers to fetch. Who leads, and the network, are the caller's.
//
// columnarlog imports only the standard library, internal/vfs (every file
// access goes through a vfs.FS, so crash and I/O-error tests run on a MemFS)
// and internal/invariants. It knows nothing of SQL, Iceberg or the lake, the
// network, or Arrow's data: those sit above it (tables, tiering, flightsrv)
// and internal/arrowmsg reads the messages. TestImports checks it.
//
// # On disk
//
//	<table>/commits                 commit records, one per round
//	<table>/high-watermarks         replicated: the buckets' high watermarks, checkpointed
//	<table>/<bucket>/               0, 1, ...: one Log per bucket
//	    <base offset, 20 digits>.log      batches back to back
//	    <base>.index, <base>.timeindex    sparse indexes of a sealed segment
//	    <base>.writers                    idempotent writers' state at base
//	    leader-epochs                     replicated: the leader-epoch history
//	    restart                           replicated: a restart under way (RestartAt)
//
// docs/format/log.md specifies every file with its bytes; TestBatchBytesPinned
// and TestStatsBytesPinned pin the batch format, TestReplicaFilesPinned the
// replication files.
//
// # Invariants
//
// Each is stated where it is enforced and checked there under the
// invariants build tag (make test sets it):
//
//   - Offsets count rows, per bucket, densely from 0: a batch's base offset
//     is its log's end.
//   - Segments tile the log: base offsets strictly increase, each sealed
//     segment ends where the next begins, only the last is active.
//   - Index entries are sorted by offset, file position and commit
//     timestamp; commit timestamps never decrease within a log.
//   - Committed <= high watermark <= durable end <= written end, per
//     bucket (the high watermark is the durable end in a log that is not
//     replicated). Committed and the high watermark never move back. A
//     TableLog's committed ends never move back, and each is at most its
//     bucket's Committed; its durable ends never move back except by
//     Truncate, never below the high watermark.
//   - Leader epochs never decrease within a log, and its epoch history
//     agrees with its batch headers (but for a last epoch with no batch).
//   - A reader returns only committed batches, and never one wholly below
//     the offset it was opened at; a replica reader, only durable ones.
//   - Retention deletes only sealed segments wholly below its floor.
//   - After recovery, a TableLog's bucket ends exactly at its committed end.
//
// Bytes on disk are data, not invariants: a torn or damaged file is an error
// wrapping ErrCorrupt, or a tail cut by recovery, never a panic. Every batch
// is checked where it is read from disk (both CRCs, its sections, and that
// it starts where the one before it ended) by recovery, readers and time
// lookups alike; a damaged segment is a *CorruptionError naming the file,
// the position and the offset, never a short or altered result.
// TestEveryFlippedByteIsFound damages a log one byte at a time to hold
// every reader to that.
//
// # Lock order
//
//	TableLog.wmu → TableLog.hmu → Log.cutMu → Log.mu → groupCommit.mu
//
// TableLog.wmu orders writes across buckets: a write appends its parts to
// every bucket under it, and a commit round reads the bucket ends under it,
// taking each bucket's Log.mu in turn, never two at once. Log.mu guards a
// bucket's segment list, its end and every segment's fields (a segment has no
// lock of its own; readers hold it by reference count), and is held across a
// batch's write and a roll's fsync. A groupCommit's mutex is innermost: taken
// under Log.mu to reset it at recovery and under TableLog.wmu to read or
// clear its error (Err, a repair), and released by wait while the round it
// leads runs, so the round takes the locks above it afresh. TableLog.cmu,
// which guards the commit file, is taken with no other lock of the package
// held, but by a repair, which rewrites the commit file under TableLog.wmu
// while no round runs (TableLog.wmu → TableLog.cmu), and by Truncate, which
// does so under TableLog.wmu and TableLog.hmu (→ TableLog.cmu). TableLog.hmu
// orders a replicated table's high-watermark moves, its checkpoint and
// Truncate's check that it cuts nothing below them. Log.cutMu is held
// shared by a Reader for each Next and exclusively by Truncate's cut, so
// that no read overlaps a cut. Below them all are the filesystem's locks.
//
// # Durability
//
// With Options.Sync SyncAlways (the default), an acknowledged append
// survives a crash: Log.Append returns once an fsync covers the batch, and
// TableLog.Append once the round's commit record and the data of every
// bucket it wrote are synced. After a crash a TableLog's write is there
// whole or not at all. Recovery drops only writes that were never
// acknowledged, with one exception it cannot tell apart: damage to the data
// or the record of the last round, which looks like a round cut short.
// Damage elsewhere (a sealed segment, a commit record followed by others, a
// bucket short of a record it must hold) is reported as ErrCorrupt (a
// *CorruptionError for a segment), not repaired, and the file is left as it
// is. With SyncNever, acknowledged data survives a process crash but
// not a machine crash.
//
// A TableLog write refused by a failure is not acknowledged, and never
// becomes visible, then or after a crash: a commit round commits up to the
// end of the last whole write, and the repair that follows a failure
// rewrites the commit file before it cuts the refused writes, so no record
// names them. Offsets the refused writes had go to later writes, which no
// reader can tell, since readers stop at the committed ends. A Log alone
// (Log.Append) has no repair: a failed write or sync makes it refuse writes
// until it is reopened.
//
// # Replication
//
// In a replicated TableLog, AppendReplica is durable on return as Append
// is, through a commit round. Truncate rewrites the commit file before it
// cuts the bucket, so that recovery cuts it there too, and cuts the epoch
// history after it; a new epoch's history entry is written before its
// batches. So the history is never behind the batches but by a cut that a
// crash interrupted, which leaves the uncut batches in the active segment:
// open checks the history against the active segment's batches and
// rebuilds it from the headers when they disagree. Every batch carries its
// epoch, so the history is a cache, like the indexes. The high-watermark
// checkpoint lags the high watermarks (CheckpointHighWatermarks, Close):
// after a crash readers see less until the leader moves it again, never
// more than was replicated.
package columnarlog
