package tables

import (
	"context"
	"math"
	"time"

	"github.com/lakestream/lakestream/columnarlog"
)

// ApplyRetention deletes, in every table, the log segments older than the
// table's log.retention. A table tiered into the lake (datalake.enabled)
// keeps every segment not yet tiered (below the bucket's tiered offset),
// whatever its age, since the log is then the only copy; with no tiered
// offset known yet, it keeps them all.
// A primary-key table without a lake also keeps every segment from the one
// holding its oldest live record on (retention never removes a key's
// current row). With a lake, its floor is the tiered offset as for a log
// table: old live rows are then in the lake only, where reads find them
// (View) and from where a key index rebuild loads them (pk.go, rebuild).
// It returns the number of segments deleted.
func (s *Store) ApplyRetention() (int, error) {
	s.mu.Lock()
	open := make([]*Table, 0, len(s.open))
	for _, t := range s.open {
		open = append(open, t)
	}
	s.mu.Unlock()
	deleted := 0
	for _, t := range open {
		def := t.Def()
		tiered := t.Tiered()
		for b := 0; b < t.log.Buckets(); b++ {
			floor := int64(math.MaxInt64)
			if def.Options.DatalakeEnabled {
				floor = 0
				if b < len(tiered) {
					floor = tiered[b]
				}
			}
			if st := t.pkView(); st != nil && !def.Options.DatalakeEnabled {
				// A primary-key table's live records are its state: the
				// segments holding one are kept, whatever their age.
				if first := st.live[b].first(); first >= 0 {
					floor = min(floor, first)
				} else {
					floor = min(floor, st.ends[b])
				}
			}
			n, err := t.log.Bucket(b).ApplyRetention(columnarlog.Retention{MaxAge: def.Options.LogRetention, Floor: floor})
			deleted += n
			if err != nil {
				return deleted, err
			}
		}
	}
	return deleted, nil
}

// RunRetention applies retention every interval until ctx ends.
func (s *Store) RunRetention(ctx context.Context, every time.Duration) {
	runEvery(ctx, every, func() {
		if n, err := s.ApplyRetention(); err != nil {
			s.cfg.Logger.Error("log retention", "error", err)
		} else if n > 0 {
			s.cfg.Logger.Info("log retention deleted segments", "segments", n)
		}
	})
}

// runEvery runs fn every interval until ctx ends: the loop of the store's
// background jobs, each its own goroutine.
func runEvery(ctx context.Context, every time.Duration, fn func()) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			fn()
		}
	}
}
