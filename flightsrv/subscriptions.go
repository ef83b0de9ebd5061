package flightsrv

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/lakestream/lakestream/tables"
)

// subscriptions are the change streams being served, for their lag.
type subscriptions struct {
	mu struct {
		sync.Mutex
		open map[*subscription]struct{}
	}
}

// subscription is one change stream: the buckets it follows, where each
// started, and the rows its followers have read since, filtered out or
// not. Rows arrive in offset order per bucket, so its position in the
// table's log is the sum of its starts plus the rows read.
type subscription struct {
	t       *tables.Table
	buckets []int
	from    int64 // sum of the buckets' start offsets
	read    atomic.Int64
	started time.Time
}

// open registers a stream following ranges of t; close it when it ends.
func (s *subscriptions) open(t *tables.Table, ranges []tables.Range) *subscription {
	sub := &subscription{t: t, started: time.Now()}
	for _, r := range ranges {
		sub.buckets = append(sub.buckets, r.Bucket)
		sub.from += r.From
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.open == nil {
		s.mu.open = map[*subscription]struct{}{}
	}
	s.mu.open[sub] = struct{}{}
	return sub
}

func (s *subscriptions) close(sub *subscription) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.mu.open, sub)
}

// Subscription is the state of one change stream.
type Subscription struct {
	Table   string // db.table
	Buckets []int
	// Read is the rows read since the start; LagRows the rows committed
	// to its buckets and not read yet.
	Read, LagRows int64
	Started       time.Time
}

// Subscriptions reports the change streams being served.
func (s *Server) Subscriptions() []Subscription {
	s.subs.mu.Lock()
	open := make([]*subscription, 0, len(s.subs.mu.open))
	for sub := range s.subs.mu.open {
		open = append(open, sub)
	}
	s.subs.mu.Unlock()
	out := make([]Subscription, 0, len(open))
	for _, sub := range open {
		ends := sub.t.Log().CommittedEnds()
		var end int64
		for _, b := range sub.buckets {
			if b < len(ends) {
				end += ends[b]
			}
		}
		read := sub.read.Load()
		out = append(out, Subscription{Table: sub.t.Name(), Buckets: sub.buckets, Read: read,
			LagRows: max(0, end-sub.from-read), Started: sub.started})
	}
	return out
}
