package tables

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lakestream/lakestream/catalog"
	"github.com/lakestream/lakestream/columnarlog"
)

// Config configures a Store. Zero fields take their defaults.
type Config struct {
	// Dir holds one directory per table, named by the table's id.
	Dir string
	// Log is the base options of every bucket log; SegmentBytes comes
	// from each table's log.segment.bytes.
	Log columnarlog.Options
	// Limits bound writes.
	Limits Limits
	// Mem allocates decoded and encoded data. Default: Go's allocator.
	Mem memory.Allocator
	// CacheBytes bounds the decoded columns of recently read batches kept
	// in memory (Cache), shared by every table. Default 1 GiB; negative
	// disables the cache.
	CacheBytes int64
	Logger     *slog.Logger
}

// Store holds the open tables of a node. It is safe for concurrent use.
type Store struct {
	cfg   Config
	cat   *catalog.Catalog
	cache *Cache

	lake atomic.Pointer[lakeRef] // SetLake

	mu   sync.Mutex
	open map[int64]*Table
}

// DDLHook is told of each table change once the catalog holds it (the
// lake, Lake, uses it to keep the Iceberg table in step).
type DDLHook interface {
	// TableCreated runs after CREATE TABLE; an error undoes the CREATE.
	TableCreated(ctx context.Context, def *catalog.Table) error
	// TableAltered runs after ADD COLUMN.
	TableAltered(ctx context.Context, def *catalog.Table) error
	// TableDropped runs after DROP TABLE (also of a DROP DATABASE CASCADE).
	TableDropped(ctx context.Context, def *catalog.Table) error
	// DatabaseDropped runs after DROP DATABASE, once its tables are dropped.
	DatabaseDropped(ctx context.Context, db string) error
}

// ddlHook is the lake's, or nil.
func (s *Store) ddlHook() DDLHook {
	if l := s.lakeLayer(); l != nil {
		return l
	}
	return nil
}

// Tables returns the open tables.
func (s *Store) Tables() []*Table {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*Table, 0, len(s.open))
	for _, t := range s.open {
		out = append(out, t)
	}
	return out
}

// Open opens every table of the catalog, recovering its logs, and removes
// the directories of tables that no longer exist (a DROP TABLE interrupted
// after its catalog change).
func Open(ctx context.Context, cat *catalog.Catalog, cfg Config) (*Store, error) {
	if cfg.Mem == nil {
		cfg.Mem = memory.DefaultAllocator
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Limits.MaxWriteBytes == 0 {
		cfg.Limits.MaxWriteBytes = 256 << 20
	}
	cfg.Log.EnsureDefaults()
	if cfg.Log.Logger == nil {
		cfg.Log.Logger = cfg.Logger
	}
	if cfg.CacheBytes == 0 {
		cfg.CacheBytes = 1 << 30
	}
	s := &Store{cfg: cfg, cat: cat, open: map[int64]*Table{}, cache: NewCache(cfg.CacheBytes)}
	if err := cfg.Log.FS.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("open tables: %w", err)
	}
	defs, err := cat.AllTables(ctx)
	if err != nil {
		return nil, fmt.Errorf("open tables: %w", err)
	}
	for _, def := range defs {
		if _, err := s.openTable(def); err != nil {
			s.Close()
			return nil, err
		}
	}
	if err := s.removeOrphans(); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func (s *Store) dir(id int64) string { return filepath.Join(s.cfg.Dir, strconv.FormatInt(id, 10)) }

func (s *Store) openTable(def *catalog.Table) (*Table, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.open[def.ID]; ok {
		// Only forward: a caller that read the catalog before an ADD
		// COLUMN must not put the older definition back.
		if def.SchemaID > t.Def().SchemaID {
			t.setDef(def)
		}
		return t, nil
	}
	opts := s.cfg.Log
	opts.SegmentBytes = def.Options.LogSegmentBytes
	tl, err := columnarlog.OpenTable(s.dir(def.ID), def.Options.BucketNum, opts)
	if err != nil {
		return nil, fmt.Errorf("open table %s: %w", def.FullName(), err)
	}
	t := &Table{store: s, log: tl, mem: s.cfg.Mem, cache: s.cache, limit: s.cfg.Limits}
	t.def.Store(def)
	s.open[def.ID] = t
	return t, nil
}

func (s *Store) removeOrphans() error {
	names, err := s.cfg.Log.FS.List(s.cfg.Dir)
	if err != nil {
		return err
	}
	for _, n := range names {
		id, err := strconv.ParseInt(n, 10, 64)
		if err != nil {
			continue
		}
		s.mu.Lock()
		_, ok := s.open[id]
		s.mu.Unlock()
		if !ok {
			s.cfg.Logger.Info("removing data of a dropped table", "dir", s.dir(id))
			if err := s.cfg.Log.FS.RemoveAll(s.dir(id)); err != nil {
				return err
			}
		}
	}
	return nil
}

// Get returns an open table by name; db "" is the default database.
func (s *Store) Get(ctx context.Context, db, name string) (*Table, error) {
	def, err := s.cat.Table(ctx, defaultDB(db), name)
	if err != nil {
		return nil, err
	}
	return s.openTable(def)
}

func defaultDB(db string) string {
	if db == "" {
		return "default"
	}
	return db
}

// Cache is the store's decoded-column cache; nil when disabled.
func (s *Store) Cache() *Cache { return s.cache }

// CacheStats returns the decoded-column cache's counters.
func (s *Store) CacheStats() CacheStats { return s.cache.Stats() }

// Catalog is the store's catalog.
func (s *Store) Catalog() *catalog.Catalog { return s.cat }

// Exec applies a DDL statement to the catalog and the table data.
func (s *Store) Exec(ctx context.Context, stmt catalog.Statement) error {
	switch st := stmt.(type) {
	case *catalog.CreateTable:
		def, err := s.cat.CreateTable(ctx, st)
		if err != nil || def == nil {
			return err
		}
		if h := s.ddlHook(); h != nil {
			if err := h.TableCreated(ctx, def); err != nil {
				_, derr := s.cat.DropTable(context.WithoutCancel(ctx), def.DB, def.Name, true)
				return errors.Join(fmt.Errorf("create table %s: %w", def.FullName(), err), derr)
			}
		}
		_, err = s.openTable(def)
		return err
	case *catalog.DropTable:
		def, err := s.cat.DropTable(ctx, st.Table.DB, st.Table.Name, st.IfExists)
		if err != nil || def == nil {
			return err
		}
		return errors.Join(s.removeTable(def.ID), s.dropped(ctx, def))
	case *catalog.DropDatabase:
		defs, err := s.cat.DropDatabase(ctx, st.Name, st.IfExists, st.Cascade)
		if err != nil {
			return err
		}
		var errs []error
		for _, def := range defs {
			errs = append(errs, s.removeTable(def.ID), s.dropped(ctx, def))
		}
		if h := s.ddlHook(); h != nil {
			errs = append(errs, h.DatabaseDropped(ctx, st.Name))
		}
		return errors.Join(errs...)
	case *catalog.AddColumn:
		def, err := s.cat.AddColumn(ctx, st.Table.DB, st.Table.Name, st.Column)
		if err != nil {
			return err
		}
		if _, err = s.openTable(def); err != nil {
			return err
		}
		if h := s.ddlHook(); h != nil {
			return h.TableAltered(ctx, def)
		}
		return nil
	case *catalog.CreateDatabase:
		return s.cat.CreateDatabase(ctx, st.Name, st.IfNotExists)
	}
	return fmt.Errorf("unsupported statement %T", stmt)
}

func (s *Store) dropped(ctx context.Context, def *catalog.Table) error {
	if h := s.ddlHook(); h != nil {
		return h.TableDropped(ctx, def)
	}
	return nil
}

// removeTable closes a dropped table and deletes its data.
func (s *Store) removeTable(id int64) error {
	s.mu.Lock()
	t, ok := s.open[id]
	delete(s.open, id)
	s.mu.Unlock()
	s.cache.dropTable(id)
	if ok {
		return t.log.Remove()
	}
	err := s.cfg.Log.FS.RemoveAll(s.dir(id))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

// Close closes every table.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for id, t := range s.open {
		errs = append(errs, t.log.Close())
		delete(s.open, id)
	}
	s.cache.purge()
	return errors.Join(errs...)
}

// ByID returns an open table by id.
func (s *Store) ByID(ctx context.Context, id int64) (*Table, error) {
	s.mu.Lock()
	t, ok := s.open[id]
	s.mu.Unlock()
	if ok {
		return t, nil
	}
	def, err := s.cat.TableByID(ctx, id)
	if err != nil {
		return nil, err
	}
	return s.openTable(def)
}
