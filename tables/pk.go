package tables

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lakestream/lakestream/catalog"
	"github.com/lakestream/lakestream/columnarlog"
	"github.com/lakestream/lakestream/internal/bucket"
	"github.com/lakestream/lakestream/internal/rowenc"
	"github.com/lakestream/lakestream/tables/keyindex"
	"github.com/lakestream/lakestream/tables/merge"
)

// A primary-key table keeps, next to its log, a key index (keyindex: each
// live key's current row and the offset of the change record holding it)
// and per bucket a live set (liveset.go: the offsets of those records).
// Writes are upserts through the table's merge engine that append the
// changes they make (+I, -U/+U, -D) to the log (pk_write.go); reads of the
// table return the live records only (pk_read.go). The log is the source
// of truth: the index is written unsynced after the log write, and on open
// it replays the log above the offsets it covers (resync).
// docs/architecture.md, "Primary-key tables", has the argument.

// KeyIndexDir is the directory of a table's key index in its data
// directory.
const KeyIndexDir = "kv"

// pkTable is the key-index side of a primary-key table.
type pkTable struct {
	t   *Table
	idx *keyindex.Index
	// mu serializes the writes and resyncs of the table: each reads the
	// index state it then changes, and appends at the log's end.
	mu sync.Mutex
	// stale is set when a write reached the log but not the index (or the
	// live sets): the next operation resyncs from the log first.
	stale atomic.Bool
	state atomic.Pointer[pkState]
	lay   atomic.Pointer[pkLayout] // of the newest definition seen
	dirs  []batchDir               // by bucket: the batches state reads saw (pk_livecache.go)
	// stopFollow stops the catch-up of a replicated table's index with
	// the high watermark (pk_replica.go); nil when none runs.
	stopFollow func()
}

// pkState is what reads of a primary-key table see: for each bucket, the
// log end the state covers and the live set of records below it. It is
// immutable; each write publishes a new one.
type pkState struct {
	ends []int64
	live []*liveSet
}

// Live is the number of live keys.
func (s *pkState) Live() int64 {
	var n int64
	for _, l := range s.live {
		if l != nil {
			n += l.count
		}
	}
	return n
}

// HasPrimaryKey reports whether the table is a primary-key table.
func (t *Table) HasPrimaryKey() bool { return t.pk != nil }

// openPK opens the key index of a primary-key table and brings it and the
// live sets up to the log.
func (s *Store) openPK(t *Table, dir string) error {
	kvDir := filepath.Join(dir, KeyIndexDir)
	opts := keyindex.Options{FS: s.cfg.KeyIndex.FS, Cache: s.kvCache, Logger: s.cfg.Logger}
	idx, err := keyindex.Open(kvDir, t.log.Buckets(), opts)
	if errors.Is(err, keyindex.ErrCorrupt) {
		// The index is derived from the log: a damaged one is rebuilt.
		s.cfg.Logger.Warn("the key index is damaged; it is rebuilt from the log", "table", t.Name(), "error", err)
		if rerr := s.cfg.KeyIndex.FS.RemoveAll(kvDir); rerr != nil {
			return errors.Join(err, rerr)
		}
		idx, err = keyindex.Open(kvDir, t.log.Buckets(), opts)
	}
	if err != nil {
		return err
	}
	p := &pkTable{t: t, idx: idx, dirs: make([]batchDir, t.log.Buckets())}
	t.pk = p
	if p.replicated() {
		p.raiseHighWatermarks()
	}
	p.mu.Lock()
	err = p.resyncLocked(context.Background())
	p.mu.Unlock()
	if errors.Is(err, ErrKeyIndexRebuilding) {
		// The rebuild reads the lake, attached after the tables open:
		// SetLake resyncs the table, which serves nothing until then.
		s.cfg.Logger.Info("the key index is rebuilt from the lake once it is attached", "table", t.Name())
		err = nil
	}
	if err != nil {
		return errors.Join(err, idx.Close())
	}
	if p.replicated() {
		p.startFollow()
	}
	return nil
}

// close closes the key index; the table's log is closed by the caller.
func (p *pkTable) close() error {
	if p.stopFollow != nil {
		p.stopFollow()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.idx.Close()
}

// pkLayout is what the writes and lookups of one definition need.
type pkLayout struct {
	def      *catalog.Table
	schema   *arrow.Schema
	codec    *rowenc.Codec
	keyCols  []int
	keyEnc   []rowenc.KeyFunc
	engine   *merge.Engine
	assigner *bucket.Assigner             // nil: one bucket
	lookup   atomic.Pointer[lookupLayout] // built by the first lookup (pk_lookup.go)
}

// layout returns the layout of def, built once per schema version.
func (p *pkTable) layout(def *catalog.Table) (*pkLayout, error) {
	if l := p.lay.Load(); l != nil && l.def.SchemaID == def.SchemaID {
		return l, nil
	}
	l, err := newPKLayout(def, p.t.log.Buckets())
	if err != nil {
		return nil, fmt.Errorf("table %s: %w", def.FullName(), err)
	}
	if cur := p.lay.Load(); cur == nil || cur.def.SchemaID < def.SchemaID {
		p.lay.Store(l)
	}
	return l, nil
}

func newPKLayout(def *catalog.Table, buckets int) (*pkLayout, error) {
	schema := def.ArrowSchema()
	codec, err := rowenc.NewCodec(schema.Fields())
	if err != nil {
		return nil, err
	}
	l := &pkLayout{def: def, schema: schema, codec: codec, keyCols: def.PrimaryKeyIndexes()}
	for _, c := range l.keyCols {
		enc, err := rowenc.KeyEncoder(schema.Field(c).Type)
		if err != nil {
			return nil, fmt.Errorf("primary key column %q: %w", schema.Field(c).Name, err)
		}
		l.keyEnc = append(l.keyEnc, enc)
	}
	if l.engine, err = newEngine(def); err != nil {
		return nil, err
	}
	if keys := def.BucketKeyIndexes(); buckets > 1 {
		if l.assigner, err = bucket.NewAssigner(schema, keys, buckets); err != nil {
			return nil, err
		}
	}
	return l, nil
}

// newEngine is the merge engine of def's options.
func newEngine(def *catalog.Table) (*merge.Engine, error) {
	cols := make([]merge.Column, len(def.Columns))
	keys := def.PrimaryKeyIndexes()
	schema := def.ArrowSchema()
	for i, c := range def.Columns {
		cols[i] = merge.Column{Name: c.Name, Type: schema.Field(i).Type, NotNull: c.NotNull}
		if agg, ok := def.Options.FieldAgg[c.Name]; ok {
			cols[i].Agg = merge.Func(agg.Func)
			cols[i].Delimiter = agg.Delimiter
		}
	}
	for _, k := range keys {
		cols[k].Key = true
	}
	kind := merge.Kind(def.Options.MergeEngine)
	if kind == "" {
		kind = merge.LastRow
	}
	return merge.New(kind, cols, def.ColumnIndex(def.Options.VersionColumn))
}

// key appends the encoded key of row i of cols to dst.
func (l *pkLayout) key(dst []byte, cols []arrow.Array, i int) []byte {
	for j, c := range l.keyCols {
		dst = l.keyEnc[j](dst, cols[c], i)
	}
	return dst
}

// buckets assigns the rows of rec (of the table schema) to buckets.
func (l *pkLayout) buckets(rec arrow.RecordBatch, out []int32) []int32 {
	if l.assigner == nil {
		out = out[:0]
		for range rec.NumRows() {
			out = append(out, 0)
		}
		return out
	}
	return l.assigner.Assign(rec, out)
}

// resyncLocked brings the index up to the log and rebuilds the live sets
// from it: for each bucket, the index replays the change records above
// the offset it covers; an index ahead of the log (which lost an
// unsynced tail) or behind the log's retained start is rebuilt from the
// retained log.
func (p *pkTable) resyncLocked(ctx context.Context) error {
	def := p.t.Def()
	lay, err := p.layout(def)
	if err != nil {
		return err
	}
	n := p.t.log.Buckets()
	ends := p.t.log.CommittedEnds()
	st := &pkState{ends: make([]int64, n), live: make([]*liveSet, n)}
	err = parallel(ctx, n, func(b int) error {
		live, err := p.resyncBucket(ctx, lay, b, ends[b])
		st.ends[b], st.live[b] = ends[b], live
		if err != nil {
			return fmt.Errorf("table %s bucket %d: key index: %w", def.FullName(), b, err)
		}
		return nil
	})
	if err != nil {
		p.stale.Store(true)
		return err
	}
	p.state.Store(st)
	p.stale.Store(false)
	return nil
}

func (p *pkTable) resyncBucket(ctx context.Context, lay *pkLayout, b int, end int64) (*liveSet, error) {
	covered, err := p.idx.Covered(b)
	if err != nil {
		return nil, err
	}
	if start := p.t.log.Bucket(b).Stats().Start; covered > end || covered < start {
		if covered, err = p.rebuild(ctx, lay, b, start); err != nil {
			return nil, err
		}
	}
	if covered < end {
		if err := p.replay(ctx, lay, b, covered, end); err != nil {
			return nil, err
		}
	}
	ed := (*liveSet)(nil).edit()
	err = p.idx.Scan(b, func(_ []byte, e keyindex.Entry) error {
		ed.set(e.Offset)
		return nil
	})
	return ed.done(), err
}

// ErrKeyIndexRebuilding is returned by the reads, writes and lookups of a
// primary-key table whose key index must be rebuilt from its lake while
// the lake is not open yet (during a node's start). It is transient.
var ErrKeyIndexRebuilding = errors.New("the key index is being rebuilt from the lake")

func (p *pkTable) pendingErr() error {
	return fmt.Errorf("table %s: %w: try again", p.t.Name(), ErrKeyIndexRebuilding)
}

// rebuild empties bucket b's index and fills it again, returning the
// offset it then covers (replay goes on from there). With the whole log
// retained (start 0) the log alone rebuilds it. Once retention has deleted
// the log's head, the rows below the retained start are in the lake only
// (retention.go deletes only tiered segments): the index is loaded with the
// lake's rows of b (TableLake.ReadLive) and covers the tiered offset.
func (p *pkTable) rebuild(ctx context.Context, lay *pkLayout, b int, start int64) (int64, error) {
	lake := p.t.Lake()
	if start == 0 || (lake == nil && !p.t.Def().Options.DatalakeEnabled) {
		return start, p.idx.Reset(b, start)
	}
	if lake == nil {
		return 0, ErrKeyIndexRebuilding
	}
	// Covered stays 0 until the load is done: a crash during it rebuilds
	// again.
	if err := p.idx.Reset(b, 0); err != nil {
		return 0, err
	}
	rp := newReplayer(lay, p.idx.NewBatch(b, 1<<20))
	tiered, err := lake.ReadLive(ctx, b, func(rec arrow.RecordBatch, offs []int64, changes []columnarlog.ChangeType) error {
		cols := rec.Columns()
		for i, off := range offs {
			rp.apply(cols, i, off, changes[i])
		}
		return rp.batch.Commit(0)
	})
	if err != nil {
		return 0, fmt.Errorf("load the lake's rows: %w", err)
	}
	if tiered < start {
		// Only a log whose retention ran before the table tiered starts
		// above the lake; it deleted only records no longer live.
		p.t.store.cfg.Logger.Warn("the log starts above the lake's tiered offset; the key index replays it from its start",
			"table", p.t.Name(), "bucket", b, "start", start, "tiered", tiered)
		tiered = start
	}
	return tiered, rp.batch.Commit(tiered)
}

// replayer applies change records to a bucket's index batch.
type replayer struct {
	lay           *pkLayout
	batch         *keyindex.Batch
	vals          []rowenc.Value
	key, buf, row []byte
}

func newReplayer(lay *pkLayout, batch *keyindex.Batch) *replayer {
	return &replayer{lay: lay, batch: batch, vals: make([]rowenc.Value, lay.schema.NumFields())}
}

// apply applies row i of cols (the table's columns), the change record at
// offset off of type ct: an insert or update after sets its key's row, a
// delete removes the key, an update before changes nothing.
func (r *replayer) apply(cols []arrow.Array, i int, off int64, ct columnarlog.ChangeType) {
	r.key = r.lay.key(r.key[:0], cols, i)
	switch ct {
	case columnarlog.Insert, columnarlog.UpdateAfter, columnarlog.AppendOnly:
		r.buf = r.lay.codec.Values(cols, i, r.buf[:0], r.vals)
		r.row = r.lay.codec.AppendRow(r.row[:0], r.vals)
		r.batch.Set(r.key, off, r.row)
	case columnarlog.Delete:
		r.batch.Delete(r.key)
	}
}

// replay applies the change records of bucket b in [from, to) to the
// index, one index batch per log batch.
func (p *pkTable) replay(ctx context.Context, lay *pkLayout, b int, from, to int64) error {
	all := make([]int, lay.schema.NumFields())
	for i := range all {
		all[i] = i
	}
	dec := newDecoder(lay.def, all, p.t.mem)
	rp := newReplayer(lay, p.idx.NewBatch(b, 1<<20))
	return p.t.ReadBatches(ctx, Range{Bucket: b, From: from, To: to}, func(lb columnarlog.Batch) error {
		cts, err := lb.ChangeTypes()
		if err != nil {
			return err
		}
		rec, err := dec.decode(lb)
		if err != nil {
			return err
		}
		defer rec.Release()
		cols := rec.Columns()
		for i := 0; i < int(rec.NumRows()); i++ {
			off := lb.BaseOffset() + int64(i)
			if off < from || off >= to {
				continue
			}
			ct := columnarlog.AppendOnly
			if cts != nil {
				ct = columnarlog.ChangeType(cts[i])
			}
			rp.apply(cols, i, off, ct)
		}
		return rp.batch.Commit(min(lb.NextOffset(), to))
	})
}

// close closes the table: its key index, then its log.
func (t *Table) close() error {
	if r := t.store.cfg.Replication; r != nil {
		r.Closing(t.Def())
	}
	var err error
	if t.pk != nil {
		err = t.pk.close()
	}
	return errors.Join(err, t.log.Close())
}
