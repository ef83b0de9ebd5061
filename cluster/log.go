package cluster

import "github.com/lakestream/lakestream/columnarlog"

// Log is one bucket's log as replication uses it: the leader reads its
// durable batches for followers, a follower appends them unchanged and cuts
// a divergent tail, and both move the high watermark that readers stop at.
// columnarlog's replicated TableLog gives it per bucket (logs.go).
type Log interface {
	// Start is the first retained offset; Durable the end of what is
	// durable on this node, and NotifyDurable is closed when it moves.
	Start() int64
	Durable() int64
	NotifyDurable() <-chan struct{}
	// Read returns whole durable batches from offset from (a batch
	// boundary), up to about maxBytes (at least one batch when any is
	// there), as stored.
	Read(from int64, maxBytes int) ([]byte, error)
	// AppendReplica stores the leader's batches, whose first starts at
	// Durable(), exactly as they are; durable on return.
	AppendReplica(batches []byte) error
	// Truncate cuts the log back to offset to, never below the high
	// watermark.
	Truncate(to int64) error
	// RestartAt empties the log and starts it again at offset start, at or
	// above its end: a follower whose end is below the leader's start
	// (retention deleted the leader's segments past it) fetches from
	// there. The epoch history starts empty; the high watermark moves up
	// to start.
	RestartAt(start int64) error
	// BecomeLeader starts epoch: appends from now on are stamped with it
	// and the epoch history records where it began.
	BecomeLeader(epoch int32) error
	// LastEpoch is the epoch of the last entry of the epoch history (-1
	// when empty); EndForEpoch is where epoch ended: the largest epoch at
	// most epoch in the history and its end offset, (-1, -1) when none.
	LastEpoch() int32
	EndForEpoch(epoch int32) (int32, int64)
	// Divergence is the offset the log must be cut back to before it
	// fetches from a new leader: the end of the longest prefix it shares
	// with the leader's log, found by asking the leader where epochs end
	// (endForEpoch) until the two epoch histories agree (Kafka's KIP-279).
	Divergence(endForEpoch func(epoch int32) (int32, int64, error)) (int64, error)
	// HighWatermark is what readers see up to; SetHighWatermark moves it
	// up (never down), at most to Durable().
	HighWatermark() int64
	SetHighWatermark(hw int64)
}

// batchesEnd is the offset after the last whole batch in b, and how many
// whole batches b holds; a partial batch at the end is an error.
func batchesEnd(b []byte) (next int64, n int, err error) {
	for len(b) > 0 {
		bt, rest, ok := columnarlog.CutBatch(b)
		if !ok {
			return 0, 0, errShortFrame
		}
		next = bt.NextOffset()
		n++
		b = rest
	}
	return next, n, nil
}
