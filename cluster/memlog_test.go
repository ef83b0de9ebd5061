package cluster

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"sync"

	"github.com/lakestream/lakestream/columnarlog"
)

// memLog is an in-memory Log for the replication tests: batches as bytes,
// an epoch history, a high watermark.
type memLog struct {
	mu      sync.Mutex
	batches [][]byte
	end, hw int64
	start   int64 // RestartAt's
	epoch   int32
	history []epochEntry
	notify  chan struct{}
}

type epochEntry struct {
	epoch int32
	start int64
}

func newMemLog() *memLog { return &memLog{epoch: -1, notify: make(chan struct{})} }

// The stamped fields' places in a batch header (docs/format/log.md).
const (
	hdrBaseOffset  = 0
	hdrLeaderEpoch = 21
)

// appendLeader appends a batch of n records stamped with the log's epoch,
// as a leader does, and returns the new end.
func (m *memLog) appendLeader(n int, payload string) int64 {
	buf, start := columnarlog.StartBatch(nil)
	buf = append(buf, payload...)
	b, err := columnarlog.FinishBatch(buf[start:], columnarlog.Header{RecordCount: int32(n)})
	if err != nil {
		panic(err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	binary.LittleEndian.PutUint64(b[hdrBaseOffset:], uint64(m.end))
	binary.LittleEndian.PutUint32(b[hdrLeaderEpoch:], uint32(m.epoch))
	m.storeLocked(b)
	return m.end
}

func (m *memLog) storeLocked(b []byte) {
	bt := columnarlog.Batch(b)
	if e := bt.LeaderEpoch(); len(m.history) == 0 || m.history[len(m.history)-1].epoch < e {
		m.history = append(m.history, epochEntry{e, bt.BaseOffset()})
	}
	m.batches = append(m.batches, slices.Clone(b))
	m.end = bt.NextOffset()
	close(m.notify)
	m.notify = make(chan struct{})
}

func (m *memLog) Start() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.start
}

func (m *memLog) RestartAt(start int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if start < m.end {
		return fmt.Errorf("restart at %d below the end %d", start, m.end)
	}
	m.batches, m.history = nil, nil
	m.start, m.end, m.hw = start, start, max(m.hw, start)
	close(m.notify)
	m.notify = make(chan struct{})
	return nil
}
func (m *memLog) Durable() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.end
}
func (m *memLog) NotifyDurable() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.notify
}

func (m *memLog) Read(from int64, maxBytes int) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []byte
	found := false
	for _, b := range m.batches {
		base := columnarlog.Batch(b).BaseOffset()
		if base == from {
			found = true
		}
		if base >= from && (len(out) == 0 || len(out)+len(b) <= maxBytes) {
			out = append(out, b...)
		}
	}
	if !found && from < m.end {
		return nil, fmt.Errorf("offset %d is not a batch boundary", from)
	}
	return out, nil
}

func (m *memLog) AppendReplica(batches []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for len(batches) > 0 {
		b := columnarlog.Batch(batches)
		if b.BaseOffset() != m.end {
			return fmt.Errorf("batch at %d, log end %d", b.BaseOffset(), m.end)
		}
		if len(m.history) > 0 && b.LeaderEpoch() < m.history[len(m.history)-1].epoch {
			return fmt.Errorf("batch of epoch %d after epoch %d", b.LeaderEpoch(), m.history[len(m.history)-1].epoch)
		}
		m.storeLocked(batches[:b.Size()])
		batches = batches[b.Size():]
	}
	return nil
}

func (m *memLog) Truncate(to int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if to < m.hw {
		return fmt.Errorf("truncate to %d below the high watermark %d", to, m.hw)
	}
	keep := m.batches[:0]
	for _, b := range m.batches {
		if columnarlog.Batch(b).BaseOffset() < to {
			keep = append(keep, b)
		}
	}
	m.batches = keep
	m.end = m.start
	if len(keep) > 0 {
		m.end = columnarlog.Batch(keep[len(keep)-1]).NextOffset()
	}
	if m.end != to {
		return fmt.Errorf("truncate to %d: not a batch boundary (cut to %d)", to, m.end)
	}
	for len(m.history) > 0 && m.history[len(m.history)-1].start >= to {
		m.history = m.history[:len(m.history)-1]
	}
	return nil
}

func (m *memLog) BecomeLeader(epoch int32) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.history) > 0 && epoch < m.history[len(m.history)-1].epoch {
		return fmt.Errorf("epoch %d below the log's %d", epoch, m.history[len(m.history)-1].epoch)
	}
	m.epoch = epoch
	if len(m.history) == 0 || m.history[len(m.history)-1].epoch < epoch {
		m.history = append(m.history, epochEntry{epoch, m.end})
	}
	return nil
}

func (m *memLog) LastEpoch() int32 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.history) == 0 {
		return -1
	}
	return m.history[len(m.history)-1].epoch
}

func (m *memLog) EndForEpoch(epoch int32) (int32, int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := len(m.history) - 1; i >= 0; i-- {
		if m.history[i].epoch <= epoch {
			if i == len(m.history)-1 {
				return m.history[i].epoch, m.end
			}
			return m.history[i].epoch, m.history[i+1].start
		}
	}
	return -1, -1
}

// Divergence asks the leader for the follower's last epoch, then for its
// own largest epoch at or below each answer, until the two agree, as the
// real log does.
func (m *memLog) Divergence(ask func(int32) (int32, int64, error)) (int64, error) {
	m.mu.Lock()
	if len(m.history) == 0 {
		defer m.mu.Unlock()
		return m.end, nil
	}
	floor := max(m.history[0].start, m.hw)
	e := m.history[len(m.history)-1].epoch
	m.mu.Unlock()
	for {
		el, endL, err := ask(e)
		if err != nil {
			return 0, err
		}
		if el < 0 {
			return floor, nil
		}
		ef, endF := m.EndForEpoch(el)
		switch {
		case ef == el:
			return max(min(endL, endF), m.HighWatermark()), nil
		case ef < 0:
			return floor, nil
		}
		e = ef
	}
}

func (m *memLog) HighWatermark() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.hw
}

func (m *memLog) SetHighWatermark(hw int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if hw > m.hw {
		m.hw = min(hw, m.end)
	}
}

// bytesBelow is the log's stored bytes of the batches below offset.
func (m *memLog) bytesBelow(offset int64) []byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []byte
	for _, b := range m.batches {
		if columnarlog.Batch(b).NextOffset() <= offset {
			out = append(out, b...)
		}
	}
	return out
}

// directTransport calls the leaders' Replicas in the same process, by
// address; a cut address answers with an error, as an unreachable node.
type directTransport struct {
	mu    sync.Mutex
	nodes map[string]*Replicas
	cut   map[string]bool
}

func (d *directTransport) node(addr string) (*Replicas, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cut[addr] || d.nodes[addr] == nil {
		return nil, fmt.Errorf("%s unreachable", addr)
	}
	return d.nodes[addr], nil
}

func (d *directTransport) Fetch(ctx context.Context, addr string, q FetchRequest) (FetchResponse, error) {
	r, err := d.node(addr)
	if err != nil {
		return FetchResponse{}, err
	}
	// Like a gRPC call, the caller's context ends the wait.
	done := make(chan FetchResponse, 1)
	go func() { done <- r.fetch(ctx, q) }()
	var resp FetchResponse
	select {
	case resp = <-done:
	case <-ctx.Done():
		return FetchResponse{}, ctx.Err()
	}
	if _, err := d.node(addr); err != nil {
		return FetchResponse{}, err // cut while the fetch waited: the answer is lost
	}
	resp.Batches = bytes.Clone(resp.Batches)
	return resp, nil
}

func (d *directTransport) EndForEpoch(ctx context.Context, addr string, q EpochRequest) (EpochResponse, error) {
	r, err := d.node(addr)
	if err != nil {
		return EpochResponse{}, err
	}
	return r.endForEpoch(q), nil
}
