package tables

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"

	"github.com/lakestream/lakestream/columnarlog"
	"github.com/lakestream/lakestream/internal/scan"
)

// Remote reads, in a cluster, the buckets of a table that this node does
// not serve itself (docs/cluster.md, "Distributed queries"): it holds no
// in-sync replica of them. Config.Remote; nil on a single node, which
// serves every bucket.
//
// A read of the table layer or the changelog captures the buckets it
// serves (Capture) and, for each of the others, one RemoteBucket; its plan
// (View.Plan) has a part per remote bucket that sends a RemoteQuery to the
// bucket's node and decodes the answer here. The node that answers
// (Store.ServeRemote) captures the bucket itself, up to its high
// watermark, as a read of its own replica would.
type Remote interface {
	// RemoteBuckets lists the buckets of table tableID that this node
	// does not serve, each with the nodes to read it from; none when it
	// serves them all.
	RemoteBuckets(ctx context.Context, tableID int64) ([]RemoteBucket, error)
	// ServesAll says, from what this node last learnt of its replicas
	// and without asking anyone, whether it is in the in-sync set of
	// each of the table's buckets: a read of the table then needs no
	// other node, and may be pinned (Table.Pinnable).
	ServesAll(tableID int64, buckets int) bool
	// ReadRemote sends req (an encoded RemoteQuery) to one of rb's nodes
	// and calls frame with each frame of the answer, in order; a frame is
	// valid only during the call. It tries the next node when one cannot
	// be reached before anything was read, and reports a bucket none
	// serves as ErrReplicaUnavailable, naming the nodes.
	ReadRemote(ctx context.Context, rb RemoteBucket, req []byte, frame func([]byte) error) error
}

// RemoteBucket is a bucket read from other nodes.
type RemoteBucket struct {
	Bucket int
	// Nodes serve the bucket, in the order to try them.
	Nodes []string
}

// RemoteQuery is what a node asks of another's replica of one bucket: the
// rows of Bucket from offset From up to the serving node's high watermark
// (the rows below From the asking node reads from its own lake), the
// columns Columns (indexes into the layer's schema, nil: all), and the
// Filters the serving node may use to skip stored batches.
type RemoteQuery struct {
	TableID  int64
	SchemaID int32 // the table's schema version the asking node reads
	Bucket   int
	Layer    Layer
	From     int64
	// To, when above From, ends the read there instead of at the high
	// watermark: the asking node reads one batch again.
	To      int64
	Columns []int
	Filters []scan.Filter
	// Have are the base offsets of the bucket's batches whose columns
	// Columns the asking node holds decoded in its column cache: of
	// those, only the header goes (frameCached).
	Have []int64
}

// The answer to a RemoteQuery is a sequence of frames, each one message of
// the replication service's Scan stream:
//
//	frameBatches  'B' | stored batches back to back, as the log holds them
//	frameRecord   'R' | one record as an Arrow IPC stream (schema, batch)
//	frameCached   'C' | (base i64 | count i32 | schema i32) × n: batches
//	                    the asking node said it holds decoded (Have)
//
// Stored batches go as they are stored — the asking node checks and decodes
// them with the projection, as it decodes its own log — and rows that are
// not in the log as stored batches (a primary-key table's live rows, rows
// read back from the serving node's lake) go decoded, already projected.
const (
	frameBatches byte = 'B'
	frameRecord  byte = 'R'
	frameCached  byte = 'C'
)

// remoteFrameBytes is the size a frame of stored batches grows to before it
// is sent; a single larger batch goes alone.
const remoteFrameBytes = 4 << 20

// ErrBadRemoteQuery is wrapped by the errors of a RemoteQuery that cannot
// be served — malformed, or naming columns, filters or a layer the table
// does not have — and of an answer that is not one.
var ErrBadRemoteQuery = errors.New("bad remote read")

// remotePart reads one remote bucket for a plan.
type remotePart struct {
	plan *logPlan
	rb   RemoteBucket
	q    RemoteQuery
	req  []byte
}

func (p *logPlan) addRemote(remote Remote, rb RemoteBucket, q RemoteQuery) error {
	if p.cache != nil && !p.changelog && p.pk == nil {
		q.Have = p.t.store.seen.have(p.def.ID, rb.Bucket, p.cols)
	}
	req, err := q.encode()
	if err != nil {
		return fmt.Errorf("scan %s: %w", p.def.FullName(), err)
	}
	p.parts = append(p.parts, &remotePart{plan: p, rb: rb, q: q, req: req})
	p.remote = remote
	return nil
}

// seen wraps the decoder of the part's stored batches: each batch decoded
// into the column cache is noted (Store.seen), so that the next read of
// the bucket asks only for the headers of those batches.
func (p *remotePart) seen(decode func(columnarlog.Batch) (arrow.RecordBatch, error)) func(columnarlog.Batch) (arrow.RecordBatch, error) {
	lp := p.plan
	if lp.cache == nil || lp.changelog || lp.pk != nil {
		return decode
	}
	return func(b columnarlog.Batch) (arrow.RecordBatch, error) {
		rec, err := decode(b)
		if err == nil {
			if s, serr := lp.def.ArrowSchemaAt(b.SchemaID()); serr == nil {
				lp.t.store.seen.note(lp.def.ID, p.rb.Bucket, b.BaseOffset(), lp.cols, s.NumFields())
			}
		}
		return rec, err
	}
}

// cachedEntryBytes is the size of one entry of a frameCached frame.
const cachedEntryBytes = 16

// eachCached sends the records of batches the server found this node
// holding decoded: from the column cache, or, for one evicted since, read
// again from the serving node.
func (p *remotePart) eachCached(ctx context.Context, b []byte, send func(arrow.RecordBatch) bool) error {
	if len(b)%cachedEntryBytes != 0 {
		return fmt.Errorf("%w: a cached-batches frame of %d bytes", ErrBadRemoteQuery, len(b))
	}
	for ; len(b) > 0; b = b[cachedEntryBytes:] {
		base := int64(binary.LittleEndian.Uint64(b))
		count := int64(binary.LittleEndian.Uint32(b[8:]))
		rec := p.fromCache(base, count)
		if rec == nil {
			p.plan.t.store.seen.forget(p.plan.def.ID, p.rb.Bucket, base)
			var err error
			if rec, err = p.again(ctx, base, count); err != nil {
				return err
			}
		}
		if !send(rec) {
			return ctx.Err()
		}
	}
	return nil
}

// fromCache is the batch at base with the plan's columns from the column
// cache, nil when one of them is not there.
func (p *remotePart) fromCache(base, count int64) arrow.RecordBatch {
	lp := p.plan
	key := cacheKey{table: lp.def.ID, bucket: int32(p.rb.Bucket), offset: base}
	cols := make([]arrow.Array, 0, len(lp.cols))
	for _, c := range lp.cols {
		key.col = int32(c)
		a := lp.cache.get(key)
		if a == nil || int64(a.Len()) != count {
			if a != nil {
				a.Release()
			}
			for _, a := range cols {
				a.Release()
			}
			return nil
		}
		cols = append(cols, a)
	}
	cur := lp.def.ArrowSchema()
	fields := make([]arrow.Field, len(lp.cols))
	for i, c := range lp.cols {
		fields[i] = cur.Field(c)
	}
	rec := array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, count)
	for _, a := range cols {
		a.Release()
	}
	return rec
}

// again reads the batch at base from the serving node whole, for a
// cached batch the cache dropped since the read was planned.
func (p *remotePart) again(ctx context.Context, base, count int64) (arrow.RecordBatch, error) {
	q := p.q
	q.From, q.To, q.Have, q.Filters = base, base+count, nil, nil
	req, err := q.encode()
	if err != nil {
		return nil, err
	}
	lp := &logPart{plan: p.plan, r: Range{Bucket: p.rb.Bucket}}
	decode := lp.decoder()
	var out arrow.RecordBatch
	err = p.plan.remote.ReadRemote(ctx, p.rb, req, func(frame []byte) error {
		if len(frame) == 0 || frame[0] != frameBatches {
			return fmt.Errorf("%w: a batch read again came as no stored batch", ErrBadRemoteQuery)
		}
		return eachBatch(frame[1:], func(b columnarlog.Batch) error {
			if out != nil || b.BaseOffset() != base {
				return fmt.Errorf("%w: the batch at offset %d read again came as another", ErrBadRemoteQuery, base)
			}
			rec, err := decode(b)
			out = rec
			return err
		})
	})
	if err == nil && out == nil {
		err = fmt.Errorf("%w: the batch at offset %d read again did not come", ErrBadRemoteQuery, base)
	}
	if err != nil && out != nil {
		out.Release()
		out = nil
	}
	return out, err
}

// seenBatches notes, for the buckets read from other nodes, which
// columns of which batches this node decoded into its column cache. It
// may say more than the cache holds (the cache evicts without telling
// it): a batch the cache no longer holds is read again (remotePart.again).
type seenBatches struct {
	mu sync.Mutex
	m  map[seenKey]map[int64]uint64 // base offset → bit c set for column c decoded
}

type seenKey struct {
	table  int64
	bucket int
}

// maxSeenBatches bounds the batches noted for one bucket, and so a
// RemoteQuery's Have: past it, the notes of the bucket start again.
const maxSeenBatches = 1 << 15

func (s *seenBatches) note(table int64, bucket int, base int64, cols []int, batchCols int) {
	var mask uint64
	for _, c := range cols {
		if c >= 64 || c >= batchCols {
			return // a column the cache does not keep, or beyond the mask
		}
		mask |= 1 << c
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[seenKey]map[int64]uint64{}
	}
	k := seenKey{table, bucket}
	if len(s.m[k]) >= maxSeenBatches {
		delete(s.m, k)
	}
	if s.m[k] == nil {
		s.m[k] = map[int64]uint64{}
	}
	s.m[k][base] |= mask
}

// have is the base offsets of the batches of the bucket noted with every
// column of cols, in order.
func (s *seenBatches) have(table int64, bucket int, cols []int) []int64 {
	var mask uint64
	for _, c := range cols {
		if c >= 64 {
			return nil
		}
		mask |= 1 << c
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []int64
	for base, m := range s.m[seenKey{table, bucket}] {
		if m&mask == mask {
			out = append(out, base)
		}
	}
	slices.Sort(out)
	return out
}

// forget forgets one batch, which the cache no longer holds.
func (s *seenBatches) forget(table int64, bucket int, base int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m[seenKey{table, bucket}], base)
}

// drop forgets a table's notes (it was dropped).
func (s *seenBatches) drop(table int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range s.m {
		if k.table == table {
			delete(s.m, k)
		}
	}
}

// Open streams the bucket's rows from the node that serves it: stored
// batches checked and decoded here (through the column cache, which holds
// the same bytes at the same offsets on every replica), decoded records as
// they come.
func (p *remotePart) Open(ctx context.Context) (scan.RecordStream, error) {
	lp := &logPart{plan: p.plan, r: Range{Bucket: p.rb.Bucket}}
	decode := p.seen(lp.decoder())
	return scan.Produce(ctx, 2, func(ctx context.Context, send func(arrow.RecordBatch) bool) error {
		err := p.plan.remote.ReadRemote(ctx, p.rb, p.req, func(frame []byte) error {
			if len(frame) == 0 {
				return fmt.Errorf("%w: an empty frame", ErrBadRemoteQuery)
			}
			switch frame[0] {
			case frameBatches:
				return eachBatch(frame[1:], func(b columnarlog.Batch) error {
					rec, err := decode(b)
					if err != nil {
						return err
					}
					if !send(rec) {
						return ctx.Err()
					}
					return nil
				})
			case frameCached:
				return p.eachCached(ctx, frame[1:], send)
			case frameRecord:
				rec, err := readIPCRecord(frame[1:], p.plan)
				if err != nil {
					return err
				}
				if !send(rec) {
					return ctx.Err()
				}
				return nil
			}
			return fmt.Errorf("%w: a frame of kind %q", ErrBadRemoteQuery, frame[0])
		})
		if err != nil {
			return fmt.Errorf("read %s bucket %d from another node: %w", p.plan.def.FullName(), p.rb.Bucket, err)
		}
		return nil
	}), nil
}

// eachBatch splits stored batches sent back to back, checking each whole
// (length, checksums) before fn sees it: they crossed the network.
func eachBatch(b []byte, fn func(columnarlog.Batch) error) error {
	for len(b) > 0 {
		batch, rest, ok := columnarlog.CutBatch(b)
		if !ok {
			return fmt.Errorf("%w: %d bytes left do not hold a whole batch", columnarlog.ErrCorrupt, len(b))
		}
		if err := batch.Check(); err != nil {
			return err
		}
		if err := fn(batch); err != nil {
			return err
		}
		b = rest
	}
	return nil
}

// readIPCRecord reads the one record of an Arrow IPC stream, allocated
// from the table's allocator, and checks that it has the plan's columns.
func readIPCRecord(b []byte, p *logPlan) (arrow.RecordBatch, error) {
	r, err := ipc.NewReader(bytes.NewReader(b), ipc.WithAllocator(p.t.mem))
	if err != nil {
		return nil, fmt.Errorf("%w: a record frame: %v", ErrBadRemoteQuery, err)
	}
	defer r.Release()
	if !r.Next() {
		if err := r.Err(); err != nil {
			return nil, fmt.Errorf("%w: a record frame: %v", ErrBadRemoteQuery, err)
		}
		return nil, fmt.Errorf("%w: a record frame without a record", ErrBadRemoteQuery)
	}
	rec := r.RecordBatch()
	if rec.NumCols() != int64(p.schema.NumFields()) {
		return nil, fmt.Errorf("%w: a record of %d columns, the scan reads %d", ErrBadRemoteQuery, rec.NumCols(), p.schema.NumFields())
	}
	cols := make([]arrow.Array, rec.NumCols())
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	for i, f := range p.schema.Fields() {
		c := rec.Column(i)
		switch ext, isExt := f.Type.(arrow.ExtensionType); {
		case arrow.TypeEqual(c.DataType(), f.Type):
			c.Retain()
			cols[i] = c
		case isExt && arrow.TypeEqual(c.DataType(), ext.StorageType()):
			// An extension type this process has not registered with
			// the IPC reader arrives as its storage.
			cols[i] = array.NewExtensionArrayWithStorage(ext, c)
		default:
			return nil, fmt.Errorf("%w: column %q is %s, the scan reads %s", ErrBadRemoteQuery, f.Name, c.DataType(), f.Type)
		}
	}
	// The scan's own schema carries the table's field metadata.
	return array.NewRecordBatch(p.schema, cols, rec.NumRows()), nil
}

// ServeRemote answers a RemoteQuery of another node from this node's
// replica (cluster.ScanSource): it captures the bucket as a read here
// would, up to its high watermark, and sends stored batches the filters do
// not rule out, and decoded records for the rest, through send in frames.
func (s *Store) ServeRemote(ctx context.Context, req []byte, send func([]byte) error) error {
	q, err := decodeRemoteQuery(req)
	if err != nil {
		return err
	}
	t, err := s.ByID(ctx, q.TableID)
	if err != nil {
		return err
	}
	def := t.Def()
	if q.SchemaID != def.SchemaID {
		return fmt.Errorf("%w: table %s: schema version %d asked, this node has %d: try again", ErrReplicaUnavailable, def.FullName(), q.SchemaID, def.SchemaID)
	}
	if q.Bucket < 0 || q.Bucket >= t.log.Buckets() {
		return fmt.Errorf("%w: table %s has no bucket %d", ErrBadRemoteQuery, def.FullName(), q.Bucket)
	}
	changelog := q.Layer == LayerChangelog
	schema := layerSchema(def, q.Layer)
	for _, c := range q.Columns {
		if c < 0 || c >= schema.NumFields() {
			return fmt.Errorf("%w: table %s has no column %d", ErrBadRemoteQuery, def.FullName(), c)
		}
	}
	cols := scan.Columns(q.Columns, schema.NumFields())
	prune, err := newPruner(def, schema, q.Filters)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrBadRemoteQuery, err)
	}
	r := Range{Bucket: q.Bucket, From: q.From, To: t.log.CommittedEnds()[q.Bucket]}
	if q.To > q.From {
		r.To = min(r.To, q.To)
	}
	have := make(map[int64]bool, len(q.Have))
	for _, o := range q.Have {
		have[o] = true
	}
	if changelog || t.Lake() == nil {
		// Below the retained start are only rows retention deleted, which
		// a read here would not return either.
		r.From = max(r.From, t.log.Bucket(q.Bucket).Stats().Start)
	}
	out := &frameWriter{send: send}
	rec := func(rec arrow.RecordBatch) error { return out.record(rec) }
	if t.pk != nil && !changelog {
		err = t.ReadRange(ctx, r, cols, rec, nil)
	} else {
		err = t.readRange(ctx, r, cols, rec, func(b columnarlog.Batch) error {
			if prune != nil {
				if ok, err := prune.mayMatch(b, q.Bucket); err != nil || !ok {
					return err
				}
			}
			if have[b.BaseOffset()] {
				return out.cached(b)
			}
			return out.batch(b)
		})
	}
	if err != nil {
		return err
	}
	return out.flush()
}

// frameWriter gathers stored batches into frames of about remoteFrameBytes.
type frameWriter struct {
	send func([]byte) error
	buf  []byte
}

func (w *frameWriter) batch(b columnarlog.Batch) error {
	if err := w.start(frameBatches, len(b)); err != nil {
		return err
	}
	w.buf = append(w.buf, b...)
	return nil
}

// cached adds the header fields of a batch the asking node holds.
func (w *frameWriter) cached(b columnarlog.Batch) error {
	if err := w.start(frameCached, cachedEntryBytes); err != nil {
		return err
	}
	w.buf = binary.LittleEndian.AppendUint64(w.buf, uint64(b.BaseOffset()))
	w.buf = binary.LittleEndian.AppendUint32(w.buf, uint32(b.RecordCount()))
	w.buf = binary.LittleEndian.AppendUint32(w.buf, uint32(b.SchemaID()))
	return nil
}

// start makes the frame being gathered one of kind with room for n more
// bytes, sending the one before when it is of another kind or full.
func (w *frameWriter) start(kind byte, n int) error {
	if len(w.buf) > 1 && (w.buf[0] != kind || len(w.buf)+n > remoteFrameBytes) {
		if err := w.flush(); err != nil {
			return err
		}
	}
	if cap(w.buf) == 0 {
		// One allocation of the frame's size, not a doubling to it (the
		// growth was most of the serving node's CPU in a profile).
		w.buf = make([]byte, 0, max(remoteFrameBytes, n+1))
	}
	if len(w.buf) == 0 {
		w.buf = append(w.buf, kind)
	}
	return nil
}

func (w *frameWriter) flush() error {
	if len(w.buf) <= 1 {
		return nil
	}
	err := w.send(w.buf)
	w.buf = w.buf[:0]
	return err
}

// record sends rec as one frame, after the batches gathered before it.
func (w *frameWriter) record(rec arrow.RecordBatch) error {
	if err := w.flush(); err != nil {
		return err
	}
	var buf bytes.Buffer
	buf.WriteByte(frameRecord)
	iw := ipc.NewWriter(&buf, ipc.WithSchema(rec.Schema()))
	if err := iw.Write(rec); err != nil {
		iw.Close()
		return fmt.Errorf("encode a record for another node: %w", err)
	}
	if err := iw.Close(); err != nil {
		return fmt.Errorf("encode a record for another node: %w", err)
	}
	return w.send(buf.Bytes())
}

// withRemote makes v, a capture of this node's replicas, read the buckets
// this node does not serve from the nodes that do: their log ranges here
// (empty, or a stale replica's) are dropped. The lake layer reads only
// this node's lake.
func (v *View) withRemote(ctx context.Context) error {
	rem := v.Table.store.cfg.Remote
	if rem == nil || v.Layer == LayerLake {
		return nil
	}
	rbs, err := rem.RemoteBuckets(ctx, v.def.ID)
	if err != nil {
		return fmt.Errorf("read %s: %w", v.def.FullName(), err)
	}
	if len(rbs) == 0 {
		return nil
	}
	remote := map[int]bool{}
	for _, rb := range rbs {
		remote[rb.Bucket] = true
	}
	kept := v.Ranges[:0:0]
	for _, r := range v.Ranges {
		if !remote[r.Bucket] {
			kept = append(kept, r)
		}
	}
	v.Ranges, v.remote = kept, rbs
	return nil
}

// planRemote adds to lp a part for each remote bucket of v, asking for
// the rows above the bucket's offset in the lake snapshot v reads here.
func (v *View) planRemote(lp *logPlan, req scan.Request) error {
	for _, rb := range v.remote {
		if v.Layer == LayerChangelog && !lp.prune.bucketMayMatch(rb.Bucket) {
			continue // a "_bucket" filter rules it out: no node is asked
		}
		q := RemoteQuery{TableID: v.def.ID, SchemaID: v.def.SchemaID, Bucket: rb.Bucket, Layer: v.Layer, Columns: req.Columns, Filters: req.Filters}
		if v.Layer == LayerTable && rb.Bucket < len(v.Lake.Offsets) {
			q.From = v.Lake.Offsets[rb.Bucket]
		}
		if err := lp.addRemote(v.Table.store.cfg.Remote, rb, q); err != nil {
			return err
		}
	}
	return nil
}

// remoteFirst is the plan's parts, the remote ones first.
func (p *logPlan) remoteFirst() []scan.Part {
	out := make([]scan.Part, 0, len(p.parts))
	for _, part := range p.parts {
		if _, ok := part.(*remotePart); ok {
			out = append(out, part)
		}
	}
	for _, part := range p.parts {
		if _, ok := part.(*remotePart); !ok {
			out = append(out, part)
		}
	}
	return out
}

// ReadRemoteBucket reads the rows of bucket b of the table at offsets
// [from, to) (to 0: up to the serving node's high watermark) from a node
// that holds it in sync, as layer (LayerTable, or LayerChangelog for the
// changelog columns with each row's offset), decoded as the columns cols
// (nil: all), and calls send with each record, which send must not keep.
// It is the remote read for code other than the query engine — a
// committer on a node without a replica of the bucket — and fails with
// ErrReplicaUnavailable when this node is not in a cluster, or serves the
// bucket itself (read it here then).
func (t *Table) ReadRemoteBucket(ctx context.Context, layer Layer, b int, from, to int64, cols []int, send func(arrow.RecordBatch) error) error {
	rem := t.store.cfg.Remote
	def := t.Def()
	if rem == nil {
		return fmt.Errorf("%w: %s: not a cluster node", ErrReplicaUnavailable, def.FullName())
	}
	if layer != LayerTable && layer != LayerChangelog {
		return fmt.Errorf("%w: layer %d", ErrBadRemoteQuery, layer)
	}
	rbs, err := rem.RemoteBuckets(ctx, def.ID)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(rbs, func(rb RemoteBucket) bool { return rb.Bucket == b })
	if i < 0 {
		return fmt.Errorf("%w: %s bucket %d: this node holds it in sync: read it here", ErrReplicaUnavailable, def.FullName(), b)
	}
	lp, err := t.plan(def, scan.Request{Columns: cols}, layer == LayerChangelog, nil)
	if err != nil {
		return err
	}
	lp.cache = nil // a one-off read: it would only evict the engine's columns
	q := RemoteQuery{TableID: def.ID, SchemaID: def.SchemaID, Bucket: b, Layer: layer, From: from, To: to, Columns: cols}
	if err := lp.addRemote(rem, rbs[i], q); err != nil {
		return err
	}
	return scan.Send(ctx, lp.parts[0], send)
}

// RemoteBuckets lists the buckets of the table that this node reads from
// other nodes (ReadRemoteBucket): it holds no in-sync replica of them.
// None outside a cluster.
func (t *Table) RemoteBuckets(ctx context.Context) ([]int, error) {
	rem := t.store.cfg.Remote
	if rem == nil {
		return nil, nil
	}
	rbs, err := rem.RemoteBuckets(ctx, t.Def().ID)
	if err != nil {
		return nil, err
	}
	out := make([]int, len(rbs))
	for i, rb := range rbs {
		out[i] = rb.Bucket
	}
	return out, nil
}
