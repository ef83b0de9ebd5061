package tables

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/lakestream/lakestream/catalog"
)

// Sync brings the open tables in step with the catalog after another
// process changed it — the nodes of a cluster share one catalog
// (docs/cluster.md): a table the catalog has and the store has not open
// is opened, with an empty log when this node has no directory for it
// yet (its rows come from the bucket's leader); a table the store has
// open and the catalog no longer has is dropped here as DROP TABLE does
// (its data and its lake go); a newer definition (ADD COLUMN) replaces the
// open one's. A table that does not open is quarantined, as at start-up.
func (s *Store) Sync(ctx context.Context) error {
	s.ddl.Lock()
	defer s.ddl.Unlock()
	defs, err := s.cat.AllTables(ctx)
	if err != nil {
		return fmt.Errorf("sync tables: %w", err)
	}
	broken, err := s.cat.BrokenTables(ctx)
	if err != nil {
		return fmt.Errorf("sync tables: %w", err)
	}
	known := make(map[int64]bool, len(defs)+len(broken))
	for _, b := range broken {
		known[b.ID] = true
	}
	var errs []error
	for _, def := range defs {
		known[def.ID] = true
		s.mu.Lock()
		t, open := s.open[def.ID]
		_, quarantined := s.quarantined[def.ID]
		s.mu.Unlock()
		switch {
		case open:
			if def.SchemaID > t.Def().SchemaID {
				t.setDef(def)
				if h := s.ddlHook(); h != nil {
					errs = append(errs, h.TableAltered(ctx, def))
				}
			}
			continue
		case quarantined:
			continue
		}
		errs = append(errs, s.openCreated(ctx, def))
	}
	// Tables dropped elsewhere: the catalog no longer has them.
	var gone []*catalog.Table
	s.mu.Lock()
	for id, t := range s.open {
		if !known[id] {
			gone = append(gone, t.Def())
		}
	}
	s.mu.Unlock()
	for _, def := range gone {
		s.cfg.Logger.Info("table dropped by another node", "table", def.FullName())
		ids := []int64{def.ID}
		errs = append(errs, s.drop(ctx, ids, func() ([]*catalog.Table, error) { return []*catalog.Table{def}, nil }))
	}
	return errors.Join(errs...)
}

// openCreated opens a table another node created.
func (s *Store) openCreated(ctx context.Context, def *catalog.Table) error {
	began := time.Now()
	_, err := s.cfg.Log.FS.Stat(s.dir(def.ID))
	t, err := s.openLog(def, errors.Is(err, os.ErrNotExist))
	s.mu.Lock()
	if err != nil {
		s.quarantineLocked(def.ID, def.FullName(), PartLog, err)
		s.mu.Unlock()
		return nil // reported as a quarantine, as at start-up
	}
	s.open[def.ID] = t
	s.mu.Unlock()
	s.cfg.Logger.Info("table created by another node opened", "table", def.FullName(), "buckets", def.Options.BucketNum,
		"elapsed", time.Since(began).Round(time.Microsecond))
	if h := s.ddlHook(); h != nil {
		return h.TableCreated(ctx, def)
	}
	return nil
}
