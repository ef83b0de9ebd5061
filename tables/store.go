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
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/cockroachdb/pebble/v2"
	pebblevfs "github.com/cockroachdb/pebble/v2/vfs"

	"github.com/lakestream/lakestream/catalog"
	"github.com/lakestream/lakestream/columnarlog"
	"github.com/lakestream/lakestream/internal/vfs"
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
	// KeyIndex configures the key indexes of primary-key tables.
	KeyIndex KeyIndexConfig
	Logger   *slog.Logger
	// OnWrite, when set, is told of every write stored: the table
	// ("db.table"), its rows and the bytes of its encoded batches (the
	// node's ingest counters). It runs on the writer's goroutine after the
	// write is durable and must be quick. Default: none.
	OnWrite func(table string, rows, bytes int64)
	// Replication, when set, makes every table's bucket logs replicas of
	// a cluster's buckets (replication.go); the logs are opened with
	// columnarlog.Options.Replicated. Default none: a single node.
	Replication Replication
	// Remote, when set, makes the query engine's reads of a table read
	// the buckets this node does not serve from the nodes that do
	// (remote.go). Default none: every bucket is read here.
	Remote Remote
}

// KeyIndexConfig configures the key indexes of primary-key tables (one
// pebble database per table, in the table's directory; docs/architecture.md).
type KeyIndexConfig struct {
	// FS is the key indexes' filesystem. Default: the operating system's
	// when the log's is; otherwise (tests over an in-memory log) an
	// in-memory one of the store's, which is correct since an index is
	// derived from the log: it is rebuilt from it at every open.
	FS pebblevfs.FS
	// CacheBytes bounds the block cache shared by every key index of the
	// store. Default 256 MiB.
	CacheBytes int64
}

// Store holds the open tables of a node. It is safe for concurrent use.
//
// A table the store could not open at start-up is quarantined, not fatal:
// the node serves the others, and every read and write of it answers
// ErrQuarantined with the reason (quarantine.go).
type Store struct {
	cfg   Config
	cat   *catalog.Catalog
	cache *Cache
	// seen notes the batches of other nodes' buckets in cache (remote.go).
	seen    seenBatches
	kvCache *pebble.Cache // shared by the key indexes

	lake atomic.Pointer[lakeRef] // SetLake

	// ddl serializes Exec: a DROP renames the directories of the tables it
	// drops before it changes the catalog (drop.go), so the set of tables
	// must not change in between.
	ddl sync.Mutex

	mu          sync.Mutex
	open        map[int64]*Table
	quarantined map[int64]Quarantined
	orphans     []Orphan // found at start-up
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

// Tables returns the open tables that are not quarantined.
func (s *Store) Tables() []*Table {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*Table, 0, len(s.open))
	for id, t := range s.open {
		if _, q := s.quarantined[id]; !q {
			out = append(out, t)
		}
	}
	return out
}

// Open opens every table of the catalog, recovering its logs. Before
// that it sweeps the tables directory (quarantine.go): the directories
// of drops that committed are deleted, those of drops that did not are
// restored, and directories the catalog has no table for are kept and
// reported (Orphans), never deleted. A table whose definition does not
// load, whose log directory is missing or whose log does not open is
// quarantined (Quarantined) and the others open.
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
	cfg.Log.Replicated = cfg.Replication != nil
	if cfg.Log.Logger == nil {
		cfg.Log.Logger = cfg.Logger
	}
	if cfg.CacheBytes == 0 {
		cfg.CacheBytes = 1 << 30
	}
	if cfg.KeyIndex.FS == nil {
		cfg.KeyIndex.FS = pebblevfs.NewMem()
		if cfg.Log.FS == vfs.Default {
			cfg.KeyIndex.FS = pebblevfs.Default
		}
	}
	if cfg.KeyIndex.CacheBytes <= 0 {
		cfg.KeyIndex.CacheBytes = 256 << 20
	}
	s := &Store{cfg: cfg, cat: cat, open: map[int64]*Table{}, quarantined: map[int64]Quarantined{}, cache: NewCache(cfg.CacheBytes)}
	s.kvCache = pebble.NewCache(cfg.KeyIndex.CacheBytes)
	if err := cfg.Log.FS.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("open tables: %w", err)
	}
	defs, err := cat.AllTables(ctx)
	if err != nil {
		return nil, fmt.Errorf("open tables: %w", err)
	}
	broken, err := cat.BrokenTables(ctx)
	if err != nil {
		return nil, fmt.Errorf("open tables: %w", err)
	}
	known := make(map[int64]bool, len(defs)+len(broken))
	for _, d := range defs {
		known[d.ID] = true
	}
	for _, b := range broken {
		known[b.ID] = true
	}
	if err := s.sweep(known); err != nil {
		return nil, fmt.Errorf("open tables: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, b := range broken {
		s.quarantineLocked(b.ID, b.FullName(), PartDefinition, b.Err)
	}
	for _, def := range defs {
		began := time.Now()
		// In a cluster a table may have been created while this node was
		// down: it starts as an empty replica that its leader fills.
		create := false
		if cfg.Replication != nil {
			_, err := cfg.Log.FS.Stat(s.dir(def.ID))
			create = errors.Is(err, os.ErrNotExist)
		}
		t, err := s.openLog(def, create)
		if err != nil {
			s.quarantineLocked(def.ID, def.FullName(), PartLog, err)
			continue
		}
		s.open[def.ID] = t
		s.cfg.Logger.Info("table opened", "table", def.FullName(), "buckets", def.Options.BucketNum,
			"columns", len(def.Columns), "elapsed", time.Since(began).Round(time.Microsecond))
	}
	return s, nil
}

func (s *Store) dir(id int64) string { return filepath.Join(s.cfg.Dir, strconv.FormatInt(id, 10)) }

// openLog opens the log of def: an existing one, whose directory must be
// there (a table in the catalog has a log, if only an empty one: a
// missing directory is data lost, not an empty table), or with create a
// new one, whose directory must not be there yet (an orphan of the same
// id, left by a lost catalog, is never taken over).
func (s *Store) openLog(def *catalog.Table, create bool) (*Table, error) {
	dir := s.dir(def.ID)
	fi, err := s.cfg.Log.FS.Stat(dir)
	switch {
	case create && err == nil:
		return nil, fmt.Errorf("data directory %s %w, holding data of a table the catalog does not have (an orphan: see docs/architecture.md, Start-up); move it away", dir, ErrDirExists)
	case create && !errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("data directory %s: %w", dir, err)
	case create:
	case errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("log directory %s is missing", dir)
	case err != nil:
		return nil, fmt.Errorf("log directory %s: %w", dir, err)
	case !fi.IsDir():
		return nil, fmt.Errorf("log directory %s is not a directory", dir)
	}
	opts := s.cfg.Log
	opts.SegmentBytes = def.Options.LogSegmentBytes
	tl, err := columnarlog.OpenTable(dir, def.Options.BucketNum, opts)
	if err != nil {
		return nil, err
	}
	t := &Table{store: s, log: tl, mem: s.cfg.Mem, cache: s.cache, limit: s.cfg.Limits,
		writers: newWriters(tl.Writers(), s.cfg.Log.WriterExpiry, s.cfg.Log.Now)}
	t.writers.replicated = s.cfg.Replication != nil
	t.def.Store(def)
	if def.HasPrimaryKey() {
		if err := s.openPK(t, dir); err != nil {
			return nil, errors.Join(err, tl.Close())
		}
	}
	if r := s.cfg.Replication; r != nil {
		if err := r.Opened(def, tl); err != nil {
			return nil, errors.Join(err, t.close())
		}
	}
	return t, nil
}

// ErrDirExists refuses a CREATE TABLE whose directory is there already:
// an orphan of the same id, left by a lost catalog (which numbers tables
// from 1 again). It is not the new table's, so nothing of it is removed;
// the operator moves it away.
var ErrDirExists = errors.New("exists already")

// opened returns the open table of def, moving its definition forward
// (only forward: a caller that read the catalog before an ADD COLUMN must
// not put the older definition back).
func (s *Store) opened(def *catalog.Table) (*Table, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if q, ok := s.quarantined[def.ID]; ok {
		return nil, q.error()
	}
	t, ok := s.open[def.ID]
	if !ok {
		// Only while a CREATE or DROP of it runs (Exec).
		return nil, fmt.Errorf("table %q is being created or dropped: %w", def.FullName(), catalog.ErrTableNotFound)
	}
	if def.SchemaID > t.Def().SchemaID {
		t.setDef(def)
	}
	return t, nil
}

// catalogErr turns the catalog's error for a table whose definition does
// not load into the store's: the table is quarantined.
func catalogErr(err error) error {
	if errors.Is(err, catalog.ErrDefinitionBroken) {
		return fmt.Errorf("%w: %w", ErrQuarantined, err)
	}
	return err
}

// Get returns an open table by name; db "" is the default database.
func (s *Store) Get(ctx context.Context, db, name string) (*Table, error) {
	def, err := s.cat.Table(ctx, defaultDB(db), name)
	if err != nil {
		return nil, catalogErr(err)
	}
	return s.opened(def)
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

// Exec applies a DDL statement to the catalog and the table data, one
// statement at a time.
func (s *Store) Exec(ctx context.Context, stmt catalog.Statement) error {
	s.ddl.Lock()
	defer s.ddl.Unlock()
	switch st := stmt.(type) {
	case *catalog.CreateTable:
		return s.createTable(ctx, st)
	case *catalog.DropTable:
		return s.dropTable(ctx, st)
	case *catalog.DropDatabase:
		return s.dropDatabase(ctx, st)
	case *catalog.AddColumn:
		// A quarantined table is not altered: Get refuses it.
		t, err := s.Get(ctx, st.Table.DB, st.Table.Name)
		if err != nil {
			return err
		}
		def, err := s.cat.AddColumn(ctx, st.Table.DB, st.Table.Name, st.Column)
		if err != nil {
			return err
		}
		if def.SchemaID > t.Def().SchemaID {
			t.setDef(def)
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

// createTable creates the table in the catalog, then its log, then its
// lake (the DDL hook); a failure after the catalog change drops it again.
func (s *Store) createTable(ctx context.Context, st *catalog.CreateTable) error {
	res, err := s.cat.Exec(ctx, st)
	if err != nil || res.NoOp {
		return err
	}
	def := res.Table
	t, err := s.openLog(def, true)
	if err == nil {
		s.mu.Lock()
		s.open[def.ID] = t
		s.mu.Unlock()
		if r := s.cfg.Replication; r != nil {
			err = r.Created(ctx, def)
		}
		if h := s.ddlHook(); h != nil && err == nil {
			err = h.TableCreated(ctx, def)
		}
	}
	if err == nil {
		return nil
	}
	if errors.Is(err, ErrDirExists) {
		_, derr := s.cat.DropTable(context.WithoutCancel(ctx), def.DB, def.Name, true)
		return errors.Join(fmt.Errorf("create table %s: %w", def.FullName(), err), derr)
	}
	undo := s.drop(context.WithoutCancel(ctx), []int64{def.ID}, func() ([]*catalog.Table, error) {
		d, err := s.cat.DropTable(context.WithoutCancel(ctx), def.DB, def.Name, true)
		if d == nil {
			return nil, err
		}
		return []*catalog.Table{d}, err
	})
	return errors.Join(fmt.Errorf("create table %s: %w", def.FullName(), err), undo)
}

// dropTable drops one table (drop has the protocol).
func (s *Store) dropTable(ctx context.Context, st *catalog.DropTable) error {
	var ids []int64
	if id, ok := s.tableID(ctx, st.Table.DB, st.Table.Name); ok {
		ids = []int64{id}
	}
	return s.drop(ctx, ids, func() ([]*catalog.Table, error) {
		def, err := s.cat.DropTable(ctx, st.Table.DB, st.Table.Name, st.IfExists)
		if def == nil {
			return nil, err
		}
		return []*catalog.Table{def}, err
	})
}

// tableID is the id of the table the catalog resolves db.name to, also of
// a table whose definition does not load.
func (s *Store) tableID(ctx context.Context, db, name string) (int64, bool) {
	def, err := s.cat.Table(ctx, defaultDB(db), name)
	var be *catalog.BrokenError
	switch {
	case err == nil:
		return def.ID, true
	case errors.As(err, &be):
		return be.Table.ID, true
	}
	return 0, false
}

// dropDatabase drops a database, and with CASCADE its tables (drop has the
// protocol).
func (s *Store) dropDatabase(ctx context.Context, st *catalog.DropDatabase) error {
	var ids []int64
	if st.Cascade && st.Name != catalog.DefaultDatabase { // else the catalog refuses
		defs, _ := s.cat.Tables(ctx, st.Name) // none if there is no such database
		for _, d := range defs {
			ids = append(ids, d.ID)
		}
		broken, err := s.cat.BrokenTables(ctx)
		if err != nil {
			return err
		}
		for _, b := range broken {
			if b.DB == st.Name {
				ids = append(ids, b.ID)
			}
		}
	}
	err := s.drop(ctx, ids, func() ([]*catalog.Table, error) {
		return s.cat.DropDatabase(ctx, st.Name, st.IfExists, st.Cascade)
	})
	if err != nil {
		return err
	}
	if h := s.ddlHook(); h != nil {
		return h.DatabaseDropped(ctx, st.Name)
	}
	return nil
}

// drop drops tables ids with commit, the catalog change, crash-safely:
//
//  1. each table is closed and its directory renamed to "<id>.dropped"
//     (synced): from here a crash leaves a directory whose table the
//     catalog still has, which start-up renames back (sweep);
//  2. commit changes the catalog: from here a crash leaves a
//     "<id>.dropped" whose table the catalog no longer has, provably
//     garbage, which start-up deletes;
//  3. the ".dropped" directories are deleted, and the lake is told.
//
// If commit fails, or drops fewer tables than ids, the others are put back
// and reopened.
func (s *Store) drop(ctx context.Context, ids []int64, commit func() ([]*catalog.Table, error)) error {
	retired := make(map[int64]*Table, len(ids)) // the open table, or nil
	var errs []error
	for _, id := range ids {
		t, err := s.retire(id)
		if err != nil {
			errs = append(errs, err)
			break
		}
		retired[id] = t
	}
	var defs []*catalog.Table
	if len(errs) == 0 {
		var err error
		defs, err = commit()
		errs = append(errs, err)
	}
	for _, def := range defs {
		delete(retired, def.ID)
		s.removeDropped(def.ID)
		if r := s.cfg.Replication; r != nil {
			errs = append(errs, r.Dropped(ctx, def))
		}
		if h := s.ddlHook(); h != nil {
			errs = append(errs, h.TableDropped(ctx, def))
		}
	}
	for id, t := range retired {
		errs = append(errs, s.restore(ctx, id, t))
	}
	return errors.Join(errs...)
}

// retire closes table id, if open, and renames its directory, if there
// is one, to "<id>.dropped". It returns the table it closed.
func (s *Store) retire(id int64) (*Table, error) {
	s.mu.Lock()
	t := s.open[id]
	delete(s.open, id)
	s.mu.Unlock()
	if t != nil {
		if err := t.close(); err != nil {
			s.cfg.Logger.Warn("closing a table being dropped", "table", t.Name(), "error", err)
		}
	}
	dir := s.dir(id)
	if _, err := s.cfg.Log.FS.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return t, nil
	}
	if err := s.renameDir(dir, dir+droppedSuffix); err != nil {
		if t != nil {
			errs := s.restore(context.Background(), id, t)
			return nil, errors.Join(fmt.Errorf("drop table %s: rename its directory: %w", t.Name(), err), errs)
		}
		return nil, fmt.Errorf("drop table with id %d: rename its directory: %w", id, err)
	}
	return t, nil
}

// restore undoes retire for a table the catalog still has: the directory
// gets its name back and the table is opened again (was is the table
// retire closed, nil if it was not open).
func (s *Store) restore(ctx context.Context, id int64, was *Table) error {
	dir := s.dir(id)
	if _, err := s.cfg.Log.FS.Stat(dir + droppedSuffix); err == nil {
		if err := s.renameDir(dir+droppedSuffix, dir); err != nil {
			return fmt.Errorf("restore the directory of table %d after a failed drop: %w", id, err)
		}
	}
	if was == nil {
		return nil
	}
	def, err := s.cat.TableByID(ctx, id)
	if err != nil {
		return fmt.Errorf("reopen table %s after a failed drop: %w", was.Name(), err)
	}
	t, err := s.openLog(def, false)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.quarantineLocked(id, def.FullName(), PartLog, err)
		return nil
	}
	s.open[id] = t
	return nil
}

// removeDropped deletes the data of a table the catalog no longer has.
// A failure is logged: start-up deletes the ".dropped" directory then.
func (s *Store) removeDropped(id int64) {
	s.mu.Lock()
	delete(s.quarantined, id)
	s.mu.Unlock()
	s.cache.dropTable(id)
	s.seen.drop(id) // remote.go
	// On the OS filesystem the key index moved with the directory; on a
	// filesystem of its own it is where the table had it.
	if err := s.cfg.KeyIndex.FS.RemoveAll(filepath.Join(s.dir(id), KeyIndexDir)); err != nil && !errors.Is(err, os.ErrNotExist) {
		s.cfg.Logger.Warn("removing the key index of a dropped table", "table", id, "error", err)
	}
	dir := s.dir(id) + droppedSuffix
	if err := s.cfg.Log.FS.RemoveAll(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		s.cfg.Logger.Warn("the data of a dropped table is deleted at the next start", "dir", dir, "error", err)
	}
}

// Close closes every table.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for id, t := range s.open {
		errs = append(errs, t.close())
		delete(s.open, id)
	}
	s.cache.purge()
	if s.kvCache != nil {
		s.kvCache.Unref()
		s.kvCache = nil
	}
	return errors.Join(errs...)
}

// ByID returns an open table by id.
func (s *Store) ByID(ctx context.Context, id int64) (*Table, error) {
	def, err := s.cat.TableByID(ctx, id)
	if err != nil {
		return nil, catalogErr(err)
	}
	return s.opened(def)
}
