package tiering

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/lakestream/lakestream/columnarlog"
	"github.com/lakestream/lakestream/tables"
)

// RoundResult says what one tiering round did.
type RoundResult struct {
	// From and To are each bucket's tiered offset before and after.
	From, To []int64
	// Rows is the number of rows committed to the lake.
	Rows int64
	// Truncated is set when the round stopped at MaxRoundRows with more
	// committed rows left to tier.
	Truncated bool
	// Commit is the time the Iceberg commit took.
	Commit time.Duration
}

// maxCommitAttempts bounds the rounds retried after commit conflicts.
const maxCommitAttempts = 5

// Round runs one tiering round of a table now: everything committed in its
// log above the tiered offsets (up to MaxRoundRows) goes into one Iceberg
// commit with the new offsets. It is the table's only committer while it
// runs.
func (s *Service) Round(ctx context.Context, tableID int64) (RoundResult, error) {
	lt := s.lookup(tableID)
	if lt == nil {
		return RoundResult{}, errDropped
	}
	lt.mu.Lock()
	defer lt.mu.Unlock()
	if s.lookup(tableID) != lt {
		return RoundResult{}, errDropped
	}
	if err := s.takeOver(ctx, lt); err != nil {
		return RoundResult{}, err
	}
	res, err := s.round(ctx, lt)
	if errors.Is(err, ErrNotCommitter) {
		// Not a failure of the table's tiering: another node commits it.
		lt.lastErr.Store(nil)
		return res, err
	}
	if err != nil {
		msg := err.Error()
		lt.lastErr.Store(&msg)
		return res, err
	}
	lt.lastErr.Store(nil)
	lt.rounds.Add(1)
	lt.rowsTiered.Add(res.Rows)
	lt.lastRound.Store(time.Now().UnixNano())
	if s.cfg.OnRound != nil && res.Rows > 0 {
		s.cfg.OnRound(lt.t.Name(), res)
	}
	return res, nil
}

// takeOver checks, with Config.Leases, that this node holds the table's
// committer lease, and on a lease newly taken reads the table's lake state
// back from the catalog first: the previous holder's last commit is the
// state to go on from. lt.mu is held.
func (s *Service) takeOver(ctx context.Context, lt *lakeTable) error {
	if s.cfg.Leases == nil {
		return nil
	}
	l, ok := s.lease(lt.t.Def().ID)
	if !ok {
		return fmt.Errorf("%w: table %s", ErrNotCommitter, lt.t.Name())
	}
	if lt.leaseToken == l.Token {
		return nil
	}
	if err := s.reload(ctx, lt); err != nil {
		return err
	}
	lt.leaseToken = l.Token
	return nil
}

func (s *Service) round(ctx context.Context, lt *lakeTable) (RoundResult, error) {
	for attempt := 1; ; attempt++ {
		// A node fenced out by a newer committer writes no file (lease.go);
		// commitRound checks again right before the commit.
		if _, err := s.checkFence(lt); err != nil {
			return RoundResult{}, err
		}
		res, err := s.tryRound(ctx, lt)
		if !errors.Is(err, table.ErrCommitFailed) || attempt == maxCommitAttempts {
			return res, err
		}
		// A clean conflict: someone else committed to the Iceberg table
		// (maintenance run elsewhere, a lake engine's own writes). Nothing of
		// this round is in the table; reload and redo it on the new state.
		lt.conflicts.Add(1)
		s.cfg.Logger.Info("tiering commit conflict, retrying", "table", lt.t.Name(), "attempt", attempt, "error", err)
		if err := s.reload(ctx, lt); err != nil {
			return res, err
		}
	}
}

// reload reads the table's Iceberg state back from the catalog.
func (s *Service) reload(ctx context.Context, lt *lakeTable) error {
	tbl, err := s.cat.LoadTable(ctx, lt.ident)
	if err != nil {
		return fmt.Errorf("reload lake table %s: %w", lt.t.Name(), err)
	}
	st, err := s.newState(ctx, tbl, lt.t)
	lt.foreign.Store(errors.Is(err, ErrForeignSnapshot))
	if err != nil {
		// The state kept is the last one Lakestream committed or loaded:
		// reads go on there, never merging another engine's rows.
		return fmt.Errorf("lake table %s: %w", lt.t.Name(), err)
	}
	lt.state.Store(st)
	return nil
}

func (s *Service) tryRound(ctx context.Context, lt *lakeTable) (RoundResult, error) {
	if lt.foreign.Load() {
		// Stopped by another engine's snapshot: write nothing until the
		// catalog shows it undone.
		if err := s.reload(ctx, lt); err != nil {
			return RoundResult{}, err
		}
	}
	t := lt.t
	def := t.Def()
	st := lt.state.Load()
	tbl := st.tbl
	// Columns added since the Iceberg schema was last evolved.
	if len(tbl.Schema().Fields()) < len(def.Columns) {
		var err error
		if tbl, err = s.evolve(ctx, tbl, def); err != nil {
			return RoundResult{}, fmt.Errorf("evolve lake schema of %s: %w", def.FullName(), err)
		}
		st = st.withTable(tbl)
		lt.state.Store(st)
	}
	if st.pk != nil {
		return s.tryPKRound(ctx, lt, st)
	}
	remote, err := s.remoteBuckets(ctx, t) // remote.go
	if err != nil {
		return RoundResult{}, fmt.Errorf("tier %s: %w", def.FullName(), err)
	}
	ends := slices.Clone(t.Log().CommittedEnds())
	res := RoundResult{From: st.offsets, To: append([]int64(nil), st.offsets...)}
	var backlog int64
	for b, end := range ends {
		if remote != nil && remote[b] {
			// Its end is the serving node's, known once read.
			ends[b] = st.offsets[b]
			continue
		}
		if end < st.offsets[b] {
			if s.cfg.Leases == nil {
				return res, fmt.Errorf("table %s bucket %d: the lake is tiered to offset %d but the log ends at %d: the log lost acknowledged rows", def.FullName(), b, st.offsets[b], end)
			}
			// In a cluster this replica's high watermark is behind the
			// previous committer's: the bucket waits until it catches up.
			ends[b] = st.offsets[b]
		}
		backlog += ends[b] - st.offsets[b]
	}
	if backlog == 0 && remote == nil {
		return res, nil
	}
	// Bound the round: each bucket gets its share of MaxRoundRows.
	perBucket := max(1, s.cfg.MaxRoundRows/int64(len(ends)))
	limits := make([]int64, len(ends))
	for b, end := range ends {
		if remote != nil && remote[b] {
			limits[b] = st.offsets[b] + perBucket
			continue
		}
		limits[b] = min(end, st.offsets[b]+perBucket)
		if limits[b] < end {
			res.Truncated = true
		}
	}
	w, err := newLakeWriter(ctx, tbl, s.cfg.Mem)
	if err != nil {
		return res, fmt.Errorf("tier %s: %w", def.FullName(), err)
	}
	files, err := s.writeRound(ctx, t, w, remote, st.offsets, limits, &res)
	if err != nil {
		if !errors.Is(err, errFault) {
			w.abort()
		}
		return res, fmt.Errorf("tier %s: write: %w", def.FullName(), err)
	}
	if res.Rows == 0 {
		return res, nil
	}
	tx := tbl.NewTransaction()
	summary := iceberg.Properties{offsetsKey: formatOffsets(res.To)}
	if err := tx.AddDataFiles(ctx, files, summary, table.WithoutDuplicateCheck(), table.WithoutAutoNameMapping()); err != nil {
		w.abort()
		return res, fmt.Errorf("tier %s: %w", def.FullName(), err)
	}
	next, err := s.commitRound(ctx, lt, tx, w, iceberg.Properties{offsetsKey: formatOffsets(res.To)}, &res)
	if err != nil || next == nil {
		return res, err
	}
	lt.lastCommitNs.Store(int64(res.Commit))
	lt.state.Store(&lakeState{tbl: next, offsets: res.To})
	return res, nil
}

// commitRound sets props (the tiered offsets among them) on tx, which
// holds a round's files written by w, and commits it, with the fault hooks
// around the commit; res.To is the round's offsets and res.Commit gets the
// commit's time. A clean conflict aborts w. When the commit's fate is
// unknown (an error after the catalog may have taken it) the table's
// offsets tell: if they are the round's, the commit was taken, the state
// is reloaded and next is nil.
func (s *Service) commitRound(ctx context.Context, lt *lakeTable, tx *table.Transaction, w *lakeWriter, props iceberg.Properties, res *RoundResult) (next *table.Table, err error) {
	name := lt.t.Def().FullName()
	token, err := s.checkFence(lt) // lease.go
	if err != nil {
		w.abort()
		return nil, err
	}
	if token != "" {
		props = maps.Clone(props)
		props[committerKey] = token
	}
	if err := tx.SetProperties(props); err != nil {
		w.abort()
		return nil, err
	}
	if f := s.cfg.faults.beforeCommit; f != nil {
		if err := f(); err != nil {
			return nil, fmt.Errorf("%w: %w", errFault, err)
		}
	}
	start := time.Now()
	next, err = tx.Commit(ctx)
	res.Commit = time.Since(start)
	err = asConflict(err)
	if err != nil && !errors.Is(err, table.ErrCommitFailed) {
		rerr := s.reload(ctx, lt)
		if rerr == nil && equalOffsets(lt.state.Load().offsets, res.To) {
			s.cfg.Logger.Warn("tiering commit reported an error but is in the table", "table", name, "error", err)
			return nil, nil
		}
		if errors.Is(rerr, ErrForeignSnapshot) {
			// Another engine committed: nothing of this round is in the
			// table (its files are orphans), and the table says why.
			w.abort()
			return nil, rerr
		}
		return nil, fmt.Errorf("tier %s: commit: %w", name, err)
	}
	if err != nil {
		w.abort() // a clean conflict: nothing of this round is in the table
		return nil, err
	}
	if f := s.cfg.faults.afterCommit; f != nil {
		if err := f(); err != nil {
			return nil, err
		}
	}
	return next, nil
}

// asConflict marks a commit refused by one of its requirements as a clean
// conflict (table.ErrCommitFailed): iceberg-go's SQL catalog checks them
// against the table's current metadata before it writes anything, and
// reports a failed one without that mark. The one that fails in practice
// is the round's assertion that the current snapshot is the one it tiered
// from: another node committed to a shared lake meanwhile.
func asConflict(err error) error {
	if err != nil && !errors.Is(err, table.ErrCommitFailed) && strings.Contains(err.Error(), "requirement failed:") {
		return fmt.Errorf("%w: %w", table.ErrCommitFailed, err)
	}
	return err
}

// writeRound writes every bucket b's offsets [from[b], limit[b]) to w,
// whole batches only, and records in res.To[b] the offset after the last
// batch written and in res.Rows their number. The buckets marked remote
// are read from other nodes (writeRemote), up to their high watermark
// there; one that reaches its limit marks the round Truncated. It returns
// the data files written.
func (s *Service) writeRound(ctx context.Context, t *tables.Table, w *lakeWriter, remote []bool, from, limits []int64, res *RoundResult) ([]iceberg.DataFile, error) {
	to, rows := res.To, &res.Rows
	cols := make([]int, t.Schema().NumFields())
	for i := range cols {
		cols[i] = i
	}
	for b := range from {
		if limits[b] <= from[b] {
			continue
		}
		if remote != nil && remote[b] {
			end, err := s.writeRemote(ctx, t, w, b, from[b], limits[b], rows)
			if err != nil {
				return nil, err
			}
			to[b] = end
			if end >= limits[b] {
				res.Truncated = true
			}
			continue
		}
		r := tables.Range{Bucket: b, From: from[b], To: limits[b]}
		err := t.ReadBatches(ctx, r, func(batch columnarlog.Batch) error {
			rec, err := t.DecodeBatch(batch, cols)
			if err != nil {
				return err
			}
			defer rec.Release()
			changes, err := batch.ChangeTypes()
			if err != nil {
				return err
			}
			lake, err := conformLakeRecord(rec, w.schema, s.cfg.Mem)
			if err != nil {
				return err
			}
			defer lake.Release()
			if err := w.writeLog(lake, b, batch.BaseOffset(), batch.CommitTimestamp(), changes); err != nil {
				return err
			}
			to[b] = batch.NextOffset()
			*rows += rec.NumRows()
			return nil
		})
		if err != nil {
			return nil, err
		}
		if f := s.cfg.faults.midRound; f != nil {
			if err := f(b); err != nil {
				return nil, fmt.Errorf("%w: %w", errFault, err)
			}
		}
	}
	return w.finish()
}

// errFault marks the error of a test's fault hook: the round stops there
// with no clean-up, as a crash would.
var errFault = errors.New("fault injected")

func equalOffsets(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
