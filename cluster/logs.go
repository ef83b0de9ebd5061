package cluster

import (
	"fmt"

	"github.com/lakestream/lakestream/columnarlog"
)

// bucketLog is one bucket of a replicated columnarlog.TableLog as a Log.
type bucketLog struct {
	t *columnarlog.TableLog
	b int
}

// BucketLog returns bucket b of t, which must be opened with
// Options.Replicated, as replication's Log.
func BucketLog(t *columnarlog.TableLog, b int) Log { return bucketLog{t, b} }

func (l bucketLog) log() *columnarlog.Log              { return l.t.Bucket(l.b) }
func (l bucketLog) Start() int64                       { return l.log().Start() }
func (l bucketLog) Durable() int64                     { return l.log().Durable() }
func (l bucketLog) NotifyDurable() <-chan struct{}     { return l.log().NotifyDurable() }
func (l bucketLog) Truncate(to int64) error            { return l.t.Truncate(l.b, to) }
func (l bucketLog) RestartAt(start int64) error        { return l.t.RestartAt(l.b, start) }
func (l bucketLog) BecomeLeader(epoch int32) error     { return l.log().BecomeLeader(epoch) }
func (l bucketLog) HighWatermark() int64               { return l.t.HighWatermark(l.b) }
func (l bucketLog) SetHighWatermark(hw int64)          { l.t.SetHighWatermark(l.b, hw) }
func (l bucketLog) EndForEpoch(e int32) (int32, int64) { return l.log().EndForEpoch(e) }

func (l bucketLog) Divergence(ask func(int32) (int32, int64, error)) (int64, error) {
	return l.log().Divergence(ask)
}

func (l bucketLog) LastEpoch() int32 {
	h := l.log().EpochHistory()
	if len(h) == 0 {
		return -1
	}
	return h[len(h)-1].Epoch
}

// Read reads whole batches from from, about maxBytes of them, through a
// replica reader (up to the durable end).
func (l bucketLog) Read(from int64, maxBytes int) ([]byte, error) {
	r, err := l.log().NewReplicaReader(from)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	batches, _, err := r.Next(nil, maxBytes)
	if err != nil {
		return nil, err
	}
	if len(batches) == 0 {
		return nil, nil
	}
	if got := batches[0].BaseOffset(); got != from {
		return nil, fmt.Errorf("offset %d is inside the batch at %d, not at a batch boundary", from, got)
	}
	// The reader returns maxBytes or more: keep to maxBytes, the first
	// batch whatever its size.
	n, keep := 0, 0
	for _, b := range batches {
		if keep > 0 && n+b.Size() > maxBytes {
			break
		}
		n += b.Size()
		keep++
	}
	out := make([]byte, 0, n)
	for _, b := range batches[:keep] {
		out = append(out, b...)
	}
	return out, nil
}

// AppendReplica splits the frame's stored batches and appends them.
func (l bucketLog) AppendReplica(frame []byte) error {
	var batches []columnarlog.Batch
	for len(frame) > 0 {
		b, rest, ok := columnarlog.CutBatch(frame)
		if !ok {
			return errShortFrame
		}
		batches = append(batches, b)
		frame = rest
	}
	return l.t.AppendReplica(l.b, batches)
}
