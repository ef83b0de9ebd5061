package tables

import (
	"bytes"
	"context"
	"errors"
	"fmt"

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
	Columns  []int
	Filters  []scan.Filter
}

// The answer to a RemoteQuery is a sequence of frames, each one message of
// the replication service's Scan stream:
//
//	frameBatches  'B' | stored batches back to back, as the log holds them
//	frameRecord   'R' | one record as an Arrow IPC stream (schema, batch)
//
// Stored batches go as they are stored — the asking node checks and decodes
// them with the projection, as it decodes its own log — and rows that are
// not in the log as stored batches (a primary-key table's live rows, rows
// read back from the serving node's lake) go decoded, already projected.
const (
	frameBatches byte = 'B'
	frameRecord  byte = 'R'
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
	req  []byte
}

func (p *logPlan) addRemote(remote Remote, rb RemoteBucket, q RemoteQuery) error {
	req, err := q.encode()
	if err != nil {
		return fmt.Errorf("scan %s: %w", p.def.FullName(), err)
	}
	p.parts = append(p.parts, &remotePart{plan: p, rb: rb, req: req})
	p.remote = remote
	return nil
}

// Open streams the bucket's rows from the node that serves it: stored
// batches checked and decoded here (through the column cache, which holds
// the same bytes at the same offsets on every replica), decoded records as
// they come.
func (p *remotePart) Open(ctx context.Context) (scan.RecordStream, error) {
	lp := &logPart{plan: p.plan, r: Range{Bucket: p.rb.Bucket}}
	decode := lp.decoder()
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
		if len(b) < columnarlog.HeaderSizeV1 {
			return fmt.Errorf("%w: %d bytes left, less than a batch header", columnarlog.ErrCorrupt, len(b))
		}
		n := columnarlog.Batch(b).Size()
		if n < columnarlog.HeaderSizeV1 || n > len(b) {
			return fmt.Errorf("%w: a batch of %d bytes in %d", columnarlog.ErrCorrupt, n, len(b))
		}
		batch := columnarlog.Batch(b[:n])
		if err := batch.Check(); err != nil {
			return err
		}
		if err := fn(batch); err != nil {
			return err
		}
		b = b[n:]
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
	if len(w.buf) > 1 && len(w.buf)+len(b) > remoteFrameBytes {
		if err := w.flush(); err != nil {
			return err
		}
	}
	if len(w.buf) == 0 {
		w.buf = append(w.buf, frameBatches)
	}
	w.buf = append(w.buf, b...)
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
