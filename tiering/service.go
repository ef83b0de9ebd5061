package tiering

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/lakestream/lakestream/catalog"
	"github.com/lakestream/lakestream/tables"
)

// Config configures a Service. Zero fields take their defaults.
type Config struct {
	// NodeLake says that the lake is this node's own while the table
	// definitions are shared by a cluster's nodes (docs/cluster.md): the
	// definitions' record that a table's lake was created is another
	// node's, so a missing lake table is created rather than taken for
	// lost, and its creation is not recorded in the shared definitions.
	// Default false: one node, whose definitions record its lake.
	NodeLake bool
	// Leases, when set, makes the lake one that the nodes of a cluster
	// share (docs/cluster.md#tiering-in-a-cluster): a table's rounds and
	// maintenance run only on the node holding its committer lease, and
	// the other nodes follow its commits. Default nil: this node commits
	// every table.
	Leases Leases
	// MaxRoundRows bounds the rows one round tiers, so that a large backlog
	// (after downtime) is committed in steps. Default 8M.
	MaxRoundRows int64
	// Maintenance is the table maintenance policy (maintain.go).
	Maintenance Maintenance
	// Relocation is the outcome of Relocate for the embedded lake, nil for
	// an external catalog or warehouse: a table it did not relocate is
	// quarantined (ErrLakeElsewhere) without being loaded, and every table
	// opened must be inside its warehouse.
	Relocation *Relocation
	// Mem allocates decoded records. Default: Go's allocator.
	Mem    memory.Allocator
	Logger *slog.Logger
	// OnRound, when set, is told of every successful round with rows to
	// commit (the node's round-size histogram). It runs on the round's
	// goroutine and must be quick. Default: none.
	OnRound func(table string, res RoundResult)

	// faults, for tests only, stop a round at a point as a crash would.
	faults faults
}

// faults are the test seams of a round: a non-nil error from a hook ends
// the round there, with no clean-up, as if the process had died.
type faults struct {
	midRound     func(bucket int) error // after a bucket's rows went to the writer
	beforeCommit func() error           // data files written, nothing committed
	afterCommit  func() error           // committed, nothing recorded locally
	now          func() time.Time       // the clock of compaction's age rule; nil: time.Now
}

// now is the time compaction's age rule compares commit times with.
func (s *Service) now() time.Time {
	if f := s.cfg.faults.now; f != nil {
		return f()
	}
	return time.Now()
}

func (c *Config) ensureDefaults() {
	if c.MaxRoundRows <= 0 {
		c.MaxRoundRows = 8 << 20
	}
	if c.Mem == nil {
		c.Mem = memory.DefaultAllocator
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	c.Maintenance.ensureDefaults()
}

// Service tiers the tables of a store into an Iceberg catalog and is the
// store's lake layer: it implements tables.Lake, so reads, subscriptions
// and log retention of the store's tables find each table's lake through
// it.
type Service struct {
	cfg   Config
	cat   icecatalog.Catalog
	store *tables.Store
	cache *tables.Cache // the store's, for lake data files too

	// files numbers the lake's data files for the cache: path -> id.
	files sync.Map
	// footers are the lake files' footers read (history.go).
	footers footerCache

	mu     sync.Mutex
	tables map[int64]*lakeTable // by Lakestream table id

	leases leaseState // with Config.Leases (lease.go)
}

// lakeTable is one table's tiering state. mu makes its committer the only
// one: rounds and maintenance hold it.
type lakeTable struct {
	t     *tables.Table
	ident table.Identifier
	// atStart is set for the tables open when the service started (not
	// created since): one with a backlog tiers at once.
	atStart bool

	mu    sync.Mutex
	state atomic.Pointer[lakeState]

	// status, for metrics and lakestream.tiering
	rounds       atomic.Int64
	rowsTiered   atomic.Int64
	lastRound    atomic.Int64 // unix nanos of the last successful round
	lastCommitNs atomic.Int64 // duration of the last commit
	lastErr      atomic.Pointer[string]
	conflicts    atomic.Int64
	// leaseToken is the committer lease token under which the state was
	// last read back from the catalog (with Config.Leases): a new token
	// reads it again before the first round. Guarded by mu.
	leaseToken int64
	// foreign is set while the Iceberg table's current snapshot is
	// another engine's (ErrForeignSnapshot): rounds check the catalog again
	// before writing anything (foreign.go).
	foreign atomic.Bool
}

// lakeState is an Iceberg table as last loaded or committed, with the
// tiered offsets its metadata holds. It is immutable.
type lakeState struct {
	tbl     *table.Table
	offsets []int64
	// pk is, for a primary-key table, the lake's state and where its rows
	// are (pklake.go); nil for a log table.
	pk *pkLake
}

// withTable returns the state with tbl, whose rows are st's (a schema
// change, an expiry).
func (st *lakeState) withTable(tbl *table.Table) *lakeState {
	return &lakeState{tbl: tbl, offsets: st.offsets, pk: st.pk}
}

// New opens the lake side of every table of store that tiers
// (datalake.enabled), creating the Iceberg tables never created and reading
// back each one's tiered offsets, and attaches itself to store as its lake
// (tables.Store.SetLake). A table whose lake cannot be opened, or is lost
// (ErrLakeLost), or is outside the data directory (ErrLakeElsewhere), is quarantined in the store (tables.Store.QuarantineLake)
// rather than served from its log alone, which would miss the tiered rows;
// the other tables tier.
func New(ctx context.Context, cat icecatalog.Catalog, store *tables.Store, cfg Config) (*Service, error) {
	cfg.ensureDefaults()
	s := &Service{cfg: cfg, cat: cat, store: store, cache: store.Cache(), tables: map[int64]*lakeTable{}}
	s.leases.held = map[int64]Lease{}
	for _, t := range store.Tables() {
		if !tiers(t.Def()) {
			continue
		}
		lt, err := s.open(ctx, t)
		if err != nil {
			if ctx.Err() != nil {
				return nil, err
			}
			store.QuarantineLake(t.Def().ID, err)
			continue
		}
		lt.atStart = true
	}
	store.SetLake(s)
	return s, nil
}

// ErrLakeLost is the error of a table whose lake table was created and is
// gone from the Iceberg catalog (a deleted or replaced iceberg.db): a new
// one would start at offset 0 without the rows tiered before, so it is not
// created.
var ErrLakeLost = errors.New("lake table lost")

func identOf(def *catalog.Table) table.Identifier { return table.Identifier{def.DB, def.Name} }

// open loads (or creates) the Iceberg table of t and registers it.
func (s *Service) open(ctx context.Context, t *tables.Table) (*lakeTable, error) {
	def := t.Def()
	lt := &lakeTable{t: t, ident: identOf(def)}
	st, err := s.loadOrCreate(ctx, t)
	if err != nil {
		return nil, err
	}
	lt.state.Store(st)
	s.mu.Lock()
	s.tables[def.ID] = lt
	s.mu.Unlock()
	return lt, nil
}

func (s *Service) lookup(id int64) *lakeTable {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tables[id]
}

// loadOrCreate returns the Iceberg table of t, with its schema evolved to
// t's columns. It creates the table (and its namespace) only if it was
// never created: one that was, and is gone, is lost (lakeLost). The
// Lakestream catalog records the creation (catalog.SetLakeCreated).
func (s *Service) loadOrCreate(ctx context.Context, t *tables.Table) (*lakeState, error) {
	def := t.Def()
	ident := identOf(def)
	// Loading a table left outside the data directory would read the old
	// place (the original of a copy), and its commits would write there.
	if err := s.cfg.Relocation.Elsewhere(ident); err != nil {
		return nil, err
	}
	tbl, err := s.cat.LoadTable(ctx, ident)
	created := false
	if errors.Is(err, icecatalog.ErrNoSuchTable) {
		if err := s.lakeLost(ctx, t); err != nil {
			return nil, err
		}
		tbl, err = s.create(ctx, def)
		created = err == nil
		if errors.Is(err, icecatalog.ErrTableAlreadyExists) && s.cfg.Leases != nil {
			// Another node of the cluster created it first.
			tbl, err = s.cat.LoadTable(ctx, ident)
			created = false
		}
	}
	if err != nil {
		return nil, fmt.Errorf("lake table %s: %w", def.FullName(), err)
	}
	if id := tbl.Properties()[tableIDKey]; id != fmt.Sprint(def.ID) {
		return nil, fmt.Errorf("%w: lake table %s: the Iceberg table belongs to Lakestream table id %s, not %d (a dropped table's lake kept by datalake.keep-on-drop?): drop or rename it in the Iceberg catalog", catalog.ErrTableExists, def.FullName(), id, def.ID)
	}
	if err := s.cfg.Relocation.check(ident, tbl); err != nil {
		return nil, err
	}
	if err := s.recordCreated(ctx, def, created); err != nil {
		return nil, err
	}
	if tbl, err = s.evolve(ctx, tbl, def); err != nil {
		return nil, fmt.Errorf("lake table %s: %w", def.FullName(), err)
	}
	return s.newState(ctx, tbl, t)
}

// lakeLost says whether t's missing Iceberg table is lost rather than
// never created: the catalog recorded its creation, or (for a table of a
// catalog that did not record it yet) some bucket's log starts above
// offset 0, which retention allows only below the tiered offsets, so rows
// were tiered into it.
func (s *Service) lakeLost(ctx context.Context, t *tables.Table) error {
	def, err := s.store.Catalog().TableByID(ctx, t.Def().ID)
	if err != nil {
		return err
	}
	if !def.LakeCreatedAt.IsZero() && !s.cfg.NodeLake {
		return fmt.Errorf("%w: the Iceberg table %s of %s, created %s, is not in the Iceberg catalog: restore the catalog, or DROP TABLE and create the table again",
			ErrLakeLost, identOf(def), def.FullName(), def.LakeCreatedAt.Format(time.RFC3339))
	}
	for b := range t.Log().Buckets() {
		if start := t.Log().Bucket(b).Stats().Start; start > 0 {
			return fmt.Errorf("%w: the Iceberg table %s of %s is not in the Iceberg catalog, and bucket %d of its log starts at offset %d: the rows below were tiered into it: restore the catalog, or DROP TABLE and create the table again",
				ErrLakeLost, identOf(def), def.FullName(), b, start)
		}
	}
	return nil
}

// recordCreated records in the Lakestream catalog that def's lake table
// exists: now that it was created, or, for a table of a catalog that did
// not record it yet, now that it was found. A lake table just created that
// cannot be recorded is dropped again, so that the next attempt starts
// over rather than from a table no record protects.
func (s *Service) recordCreated(ctx context.Context, def *catalog.Table, created bool) error {
	if s.cfg.NodeLake {
		return nil
	}
	_, err := s.store.Catalog().SetLakeCreated(ctx, def.ID)
	if err == nil {
		return nil
	}
	if !created {
		s.cfg.Logger.Warn("the lake table's existence could not be recorded; retried at the next start", "table", def.FullName(), "error", err)
		return nil
	}
	err = fmt.Errorf("lake table %s: %w", def.FullName(), err)
	if derr := s.cat.DropTable(context.WithoutCancel(ctx), identOf(def)); derr != nil {
		err = errors.Join(err, fmt.Errorf("drop the lake table just created: %w", derr))
	}
	return err
}

// newState returns the lake state of t's Iceberg table tbl as loaded:
// its tiered offsets and, for a primary-key table, the lake's state
// rebuilt from its files.
func (s *Service) newState(ctx context.Context, tbl *table.Table, t *tables.Table) (*lakeState, error) {
	if err := checkForeign(tbl, t.Def().FullName(), t.Def().HasPrimaryKey()); err != nil {
		return nil, err
	}
	o, err := parseOffsets(tbl.Properties()[offsetsKey], t.Def().Options.BucketNum)
	if err != nil {
		return nil, err
	}
	st := &lakeState{tbl: tbl, offsets: o}
	if t.Def().HasPrimaryKey() {
		if st.pk, err = s.loadPKLake(ctx, tbl, t.Name(), o); err != nil {
			return nil, err
		}
	}
	return st, nil
}

// tableProperties are set on every Iceberg table Lakestream creates.
func tableProperties(def *catalog.Table) iceberg.Properties {
	return iceberg.Properties{
		tableIDKey: fmt.Sprint(def.ID),
		offsetsKey: formatOffsets(make([]int64, def.Options.BucketNum)),
		// Parquet data files compressed with zstd (docs/lake.md).
		table.ParquetCompressionKey: "zstd",
		// Appends merge small manifests, and old metadata files are deleted,
		// so that a table tiered every few seconds keeps flat commit and
		// planning times (see also maintain.go).
		table.ManifestMergeEnabledKey:             "true",
		table.MetadataDeleteAfterCommitEnabledKey: "true",
		table.MetadataPreviousVersionsMaxKey:      "20",
		table.ManifestMinMergeCountKey:            "16",
		// Format version 2 explicitly: a primary-key table's position
		// deletes need it, and v2 is what every reader applies (pyiceberg
		// applies no deletion vectors of v3).
		table.PropertyFormatVersion: "2",
	}
}

func (s *Service) create(ctx context.Context, def *catalog.Table) (*table.Table, error) {
	ns := table.Identifier{def.DB}
	if err := s.cat.CreateNamespace(ctx, ns, nil); err != nil && !errors.Is(err, icecatalog.ErrNamespaceAlreadyExists) {
		return nil, fmt.Errorf("create namespace %s: %w", def.DB, err)
	}
	sch, err := icebergSchema(def)
	if err != nil {
		return nil, err
	}
	spec, err := partitionSpec(def, sch)
	if err != nil {
		return nil, err
	}
	return s.cat.CreateTable(ctx, identOf(def), sch,
		icecatalog.WithPartitionSpec(&spec),
		icecatalog.WithProperties(tableProperties(def)))
}

// tiers reports whether a table has a lake side: datalake.enabled. A
// primary-key table's rounds write its changelog with position deletes
// that hide every row but each live key's current one (pkround.go).
func tiers(def *catalog.Table) bool {
	return def.Options.DatalakeEnabled
}

// evolve adds to tbl the columns def has and tbl lacks (ADD COLUMN).
func (s *Service) evolve(ctx context.Context, tbl *table.Table, def *catalog.Table) (*table.Table, error) {
	tx := tbl.NewTransaction()
	changed, err := evolveSchema(tx, tbl.Schema(), def)
	if err != nil || !changed {
		return tbl, err
	}
	return tx.Commit(ctx)
}

// TableCreated creates the Iceberg table of a new table that tiers.
func (s *Service) TableCreated(ctx context.Context, def *catalog.Table) error {
	if !tiers(def) {
		return nil
	}
	t, err := s.store.ByID(ctx, def.ID)
	if err != nil {
		return err
	}
	_, err = s.open(ctx, t)
	return err
}

// TableAltered adds the new columns to the Iceberg table. A failure is
// logged, not returned: the ADD COLUMN stands, and the next round retries.
func (s *Service) TableAltered(ctx context.Context, def *catalog.Table) error {
	lt := s.lookup(def.ID)
	if lt == nil {
		return nil
	}
	if _, ok := s.lease(def.ID); !ok {
		return nil // the committer evolves a shared lake's table; this node follows
	}
	lt.mu.Lock()
	defer lt.mu.Unlock()
	st := lt.state.Load()
	tbl, err := s.evolve(ctx, st.tbl, def)
	if err != nil {
		s.cfg.Logger.Warn("lake schema evolution failed; retried on the next round", "table", def.FullName(), "error", err)
		return nil
	}
	lt.state.Store(st.withTable(tbl))
	return nil
}

// TableDropped drops the Iceberg table too, with its files, unless the
// table kept it (datalake.keep-on-drop).
func (s *Service) TableDropped(ctx context.Context, def *catalog.Table) error {
	s.mu.Lock()
	lt := s.tables[def.ID]
	delete(s.tables, def.ID)
	s.mu.Unlock()
	if lt == nil {
		return s.forgetElsewhere(ctx, def)
	}
	if def.Options.DatalakeKeepOnDrop {
		return nil
	}
	lt.mu.Lock() // wait for a round in progress
	defer lt.mu.Unlock()
	st := lt.state.Load()
	if s.cfg.Leases != nil {
		return s.dropShared(ctx, lt, def)
	}
	if err := s.cat.DropTable(ctx, lt.ident); err != nil && !errors.Is(err, icecatalog.ErrNoSuchTable) {
		return fmt.Errorf("drop lake table %s: %w", def.FullName(), err)
	}
	if err := purge(ctx, st.tbl); err != nil {
		s.cfg.Logger.Warn("lake files of a dropped table not all deleted", "table", def.FullName(), "error", err)
	}
	return nil
}

// dropShared drops the Iceberg table of a dropped table from a lake the
// nodes of a cluster share: every node runs the drop, so only the Iceberg
// table that belongs to this very table is dropped (one of the same name
// created since is another table's), and only the node whose drop took it
// deletes its files.
func (s *Service) dropShared(ctx context.Context, lt *lakeTable, def *catalog.Table) error {
	tbl, err := s.cat.LoadTable(ctx, lt.ident)
	if errors.Is(err, icecatalog.ErrNoSuchTable) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("drop lake table %s: %w", def.FullName(), err)
	}
	if tbl.Properties()[tableIDKey] != fmt.Sprint(def.ID) {
		return nil
	}
	if err := s.cat.DropTable(ctx, lt.ident); errors.Is(err, icecatalog.ErrNoSuchTable) {
		return nil
	} else if err != nil {
		return fmt.Errorf("drop lake table %s: %w", def.FullName(), err)
	}
	if err := purge(ctx, tbl); err != nil {
		s.cfg.Logger.Warn("lake files of a dropped table not all deleted", "table", def.FullName(), "error", err)
	}
	return nil
}

// forgetElsewhere drops the Iceberg catalog row of a dropped table whose
// lake was left outside the data directory (ErrLakeElsewhere), unless the
// table keeps its lake: the row names files at the old place — for a copy,
// its original's — so no file is deleted, and nothing there is read.
func (s *Service) forgetElsewhere(ctx context.Context, def *catalog.Table) error {
	ident := identOf(def)
	if s.cfg.Relocation.Elsewhere(ident) == nil || def.Options.DatalakeKeepOnDrop {
		return nil
	}
	if err := s.cat.DropTable(ctx, ident); err != nil && !errors.Is(err, icecatalog.ErrNoSuchTable) {
		return fmt.Errorf("drop lake table %s: %w", def.FullName(), err)
	}
	s.cfg.Relocation.forget(ident)
	return nil
}

// DatabaseDropped drops the database's Iceberg namespace, unless tables
// kept by datalake.keep-on-drop (or not Lakestream's) are still in it.
func (s *Service) DatabaseDropped(ctx context.Context, db string) error {
	err := s.cat.DropNamespace(ctx, table.Identifier{db})
	if err == nil || errors.Is(err, icecatalog.ErrNoSuchNamespace) || errors.Is(err, icecatalog.ErrNamespaceNotEmpty) {
		return nil
	}
	return fmt.Errorf("drop lake namespace %s: %w", db, err)
}

// Run tiers every table each datalake.freshness, and maintains them, until
// ctx ends. Tables run independently, one committer each.
func (s *Service) Run(ctx context.Context) {
	var wg sync.WaitGroup
	if s.cfg.Leases != nil {
		wg.Add(1)
		go func() { defer wg.Done(); s.holdLeases(ctx) }()
	}
	running := map[*lakeTable]bool{}
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		s.mu.Lock()
		for _, lt := range s.tables {
			if !running[lt] {
				running[lt] = true
				wg.Add(1)
				go func() {
					defer wg.Done()
					s.runTable(ctx, lt)
				}()
			}
		}
		s.mu.Unlock()
		select {
		case <-ctx.Done():
			wg.Wait()
			return
		case <-tick.C:
		}
	}
}

// runTable is the loop of one table's committer; it ends with ctx or when
// the table is dropped.
func (s *Service) runTable(ctx context.Context, lt *lakeTable) {
	id := lt.t.Def().ID
	backoff := time.Second
	// A table with a backlog at start (after a restart) tiers at once; a
	// new one after its first freshness interval.
	if st := lt.state.Load(); !lt.atStart || !hasBacklog(lt.t, st.offsets) {
		select {
		case <-ctx.Done():
			return
		case <-time.After(lt.t.Def().Options.DatalakeFreshness):
		}
	}
	for {
		def := lt.t.Def()
		wait := def.Options.DatalakeFreshness
		if _, ok := s.lease(id); !ok {
			// Another node commits the table, or none yet: follow its
			// commits, and look again for the lease soon.
			if err := s.follow(ctx, lt); err != nil && ctx.Err() == nil && s.lookup(id) == lt {
				s.cfg.Logger.Warn("following the lake committer", "table", def.FullName(), "error", err)
			}
			if s.lookup(id) != lt {
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(min(wait, LeaseEvery)):
			}
			continue
		}
		res, err := s.Round(ctx, id)
		switch {
		case ctx.Err() != nil:
			return
		case errors.Is(err, errDropped):
			return
		case errors.Is(err, ErrNotCommitter):
			s.cfg.Logger.Info("no longer the lake committer", "table", def.FullName(), "reason", err)
			wait = min(wait, LeaseEvery)
		case err != nil:
			s.cfg.Logger.Error("tiering round failed", "table", def.FullName(), "error", err, "retry_in", backoff)
			wait, backoff = backoff, min(2*backoff, time.Minute)
		default:
			backoff = time.Second
			if res.Truncated {
				wait = 0 // more backlog: go on at once
			}
			if err := s.maintain(ctx, lt); err != nil && ctx.Err() == nil {
				s.cfg.Logger.Warn("lake maintenance failed", "table", def.FullName(), "error", err)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

var errDropped = errors.New("table dropped")

// fileID is the number of a data file path for the cache, the same for
// the life of the service: data files never change, so their cached
// columns never go stale. Numbers are never reused within the process, so
// another Service over the same store (a test's restart) cannot mistake
// its files for this one's.
func (s *Service) fileID(path string) int64 {
	if id, ok := s.files.Load(path); ok {
		return id.(int64)
	}
	id, _ := s.files.LoadOrStore(path, nextFileID.Add(1))
	return id.(int64)
}

var nextFileID atomic.Int64

func hasBacklog(t *tables.Table, tiered []int64) bool {
	for b, end := range t.Log().CommittedEnds() {
		if end > tiered[b] {
			return true
		}
	}
	return false
}
