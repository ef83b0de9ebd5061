package tables

import (
	"context"
	"time"
)

// RepairLogs asks every open table's log that refuses writes after a failed
// write (a full disk, a failed fsync) to repair itself
// (columnarlog.TableLog.Repair), and returns how many still refuse them.
// A log is repaired by its next write anyway; this covers tables that get
// none, so that health reports clear once the cause is gone.
func (s *Store) RepairLogs() int {
	failing := 0
	for _, t := range s.Tables() {
		if t.log.Err() == nil {
			continue
		}
		if err := t.log.Repair(); err != nil {
			failing++
			s.cfg.Logger.Warn("table log still refuses writes", "table", t.Name(), "error", err)
			continue
		}
		s.cfg.Logger.Info("table log takes writes again", "table", t.Name())
	}
	return failing
}

// RunRepair runs RepairLogs every interval until ctx ends.
func (s *Store) RunRepair(ctx context.Context, every time.Duration) {
	runEvery(ctx, every, func() { s.RepairLogs() })
}
