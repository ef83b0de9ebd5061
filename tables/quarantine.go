package tables

import (
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// ErrQuarantined is returned for every read and write of a quarantined
// table: one the node could not open at start-up, or whose lake is lost.
// The node serves its other tables; the error names the table and the
// reason, and retrying does not help until an operator repairs the table
// (and restarts the node) or drops it.
var ErrQuarantined = errors.New("table quarantined")

// Part is what of a table made it quarantined.
type Part string

// The parts of a table that can be quarantined.
const (
	// PartDefinition: its stored definition does not load
	// (catalog.BrokenTable).
	PartDefinition Part = "definition"
	// PartLog: its log could not be opened, or its directory is missing.
	PartLog Part = "log"
	// PartLake: its lake (Iceberg) table is lost or cannot be opened, so a
	// read of the log alone would be missing the tiered rows
	// (QuarantineLake).
	PartLake Part = "lake"
)

// Quarantined is a quarantined table.
type Quarantined struct {
	ID    int64
	Table string // db.name
	Part  Part
	Err   error // why
}

func (q Quarantined) error() error {
	// The reason is text, not wrapped: a client is told that the table is
	// quarantined, whatever the reason wraps (the lake's ErrTableExists,
	// a not-found).
	return fmt.Errorf("table %q: %w (its %s: %v); the node serves the other tables: repair it and restart the node, or DROP TABLE it",
		q.Table, ErrQuarantined, q.Part, q.Err)
}

// Orphan is a data directory without a catalog entry. Lakestream never
// deletes one it cannot prove is garbage: a lost or replaced catalog.db
// makes every table directory look like this (docs/architecture.md,
// "Start-up", says how an operator removes one).
type Orphan struct {
	ID  int64
	Dir string
}

// droppedSuffix marks a table directory whose DROP has begun: it is
// renamed to "<id>.dropped" before the catalog change, so that a directory
// of that name whose table is not in the catalog is provably garbage.
const droppedSuffix = ".dropped"

// Quarantined returns the quarantined tables, ordered by name.
func (s *Store) Quarantined() []Quarantined {
	s.mu.Lock()
	out := make([]Quarantined, 0, len(s.quarantined))
	for _, q := range s.quarantined {
		out = append(out, q)
	}
	s.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Table < out[j].Table })
	return out
}

// Orphans returns the data directories that have no catalog entry, found
// at start-up, ordered by id.
func (s *Store) Orphans() []Orphan {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Orphan(nil), s.orphans...)
}

// QuarantineLake quarantines table id because of its lake: the lake layer
// (the tiering service) found its Iceberg table lost, or could not open
// it. Reads and writes of the table answer ErrQuarantined from then on;
// its log stays open and whole (retention keeps a table's untiered rows).
// It returns the error reads now get.
func (s *Store) QuarantineLake(id int64, reason error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	name := strconv.FormatInt(id, 10)
	if t := s.open[id]; t != nil {
		name = t.Name()
	}
	q := Quarantined{ID: id, Table: name, Part: PartLake, Err: reason}
	s.quarantined[id] = q
	s.cfg.Logger.Error("table quarantined: its lake is lost or cannot be opened; reads and writes of it are refused", "table", name, "error", reason)
	return q.error()
}

// quarantineLocked records that table (id, name) could not be opened.
func (s *Store) quarantineLocked(id int64, name string, part Part, err error) {
	s.quarantined[id] = Quarantined{ID: id, Table: name, Part: part, Err: err}
	s.cfg.Logger.Error("table quarantined: it could not be opened; the node serves the others", "table", name, "part", part, "error", err)
}

// sweep looks at every entry of the tables directory before any table is
// opened. known are the ids the catalog has (loaded or broken).
//
//   - "<id>.dropped" of a table the catalog no longer has: its DROP
//     committed, the directory is garbage and is deleted.
//   - "<id>.dropped" of a table the catalog still has: its DROP did not
//     commit; the directory is renamed back.
//   - "<id>" of a table the catalog does not have: an orphan, kept and
//     reported (Orphans), never deleted.
//
// Nothing here stops the node: what cannot be done is logged.
func (s *Store) sweep(known map[int64]bool) error {
	fs := s.cfg.Log.FS
	names, err := fs.List(s.cfg.Dir)
	if err != nil {
		return fmt.Errorf("list %s: %w", s.cfg.Dir, err)
	}
	present := make(map[string]bool, len(names))
	for _, n := range names {
		present[n] = true
	}
	for _, n := range names {
		base, dropped := strings.CutSuffix(n, droppedSuffix)
		id, err := strconv.ParseInt(base, 10, 64)
		if err != nil || id <= 0 {
			continue // not a table's
		}
		path := filepath.Join(s.cfg.Dir, n)
		switch {
		case dropped && !known[id]:
			s.cfg.Logger.Info("removing the data of a dropped table", "dir", path)
			if err := fs.RemoveAll(path); err != nil {
				s.cfg.Logger.Error("the data of a dropped table could not be removed; it is retried at the next start", "dir", path, "error", err)
			}
		case dropped && present[base]:
			s.cfg.Logger.Error("a table has both a directory and a dropped one; both are kept", "dir", path)
		case dropped:
			s.cfg.Logger.Warn("restoring the directory of a table whose DROP did not complete", "dir", path)
			if err := s.renameDir(path, s.dir(id)); err != nil {
				s.cfg.Logger.Error("the directory of a table whose DROP did not complete could not be restored", "dir", path, "error", err)
			}
		case !known[id]:
			s.orphans = append(s.orphans, Orphan{ID: id, Dir: path})
			s.cfg.Logger.Warn("data directory without a catalog entry kept: not deleted, as it cannot be proven garbage (see docs/architecture.md, Start-up)", "dir", path)
		}
	}
	return nil
}

// renameDir renames a table directory and syncs the tables directory, so
// that the rename is durable before what depends on it.
func (s *Store) renameDir(from, to string) error {
	if err := s.cfg.Log.FS.Rename(from, to); err != nil {
		return err
	}
	return s.cfg.Log.FS.SyncDir(s.cfg.Dir)
}
