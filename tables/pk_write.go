package tables

import (
	"bytes"
	"context"
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/lakestream/lakestream/catalog"
	"github.com/lakestream/lakestream/columnarlog"
	"github.com/lakestream/lakestream/internal/arrowmsg"
	"github.com/lakestream/lakestream/internal/rowenc"
	"github.com/lakestream/lakestream/tables/keyindex"
)

// pkOp is what a write does to the keys of its rows.
type pkOp uint8

const (
	opUpsert    pkOp = iota // merge the row in through the merge engine
	opDelete                // remove the key's row
	opOverwrite             // set the key's row to exactly this row
)

// pkInput is one record of a primary-key write: rows of the table schema,
// of which the present columns were carried (the others are nulls here and
// are left alone by a partial upsert).
type pkInput struct {
	rec     arrow.RecordBatch
	present []bool
	op      pkOp
	// since, when valid, makes the write conditional: refused with
	// ErrWriteConflict if a key it touches was written after since
	// (pk_conflict.go).
	since PKState
}

// pkResult is what a write did.
type pkResult struct {
	rows    int64 // input rows applied
	existed int64 // keys a delete found
	changes int64 // change records written
}

// rowRef is one input row.
type rowRef struct {
	in, row int32
	key     []byte
}

// bucketChanges is what a write changes in one bucket: the change records
// (encoded once as a log batch) and the index and live-set updates to make
// once the log holds them, by position in the batch.
type bucketChanges struct {
	batch   columnarlog.Batch
	records int64
	sets    []indexSet // in key order
	dels    [][]byte
	unlive  []int64 // offsets whose records are no longer live
	existed int64
	// indexBytes is the size of the keys and rows of sets and dels.
	indexBytes int
}

type indexSet struct {
	key []byte
	pos int64 // of the +I/+U record in the batch
	row []byte
}

// writePK applies inputs as one atomic write: the changes they make go to
// the log in one write (one batch per bucket, so that an update's -U and
// +U are never apart), then to the index and the live sets.
func (t *Table) writePK(ctx context.Context, def *catalog.Table, inputs []pkInput) (pkResult, error) {
	return t.writePKAs(ctx, def, inputs, Writer{})
}

// writePKAs is writePK of a call of writer w (none when w.ID is 0), whose
// id and sequence every batch of the write carries. A retried call never
// gets here (Appender.Flush): the merge would change the index again.
func (t *Table) writePKAs(ctx context.Context, def *catalog.Table, inputs []pkInput, w Writer) (pkResult, error) {
	return t.writePKFor(ctx, def, inputs, func(int) Writer { return w })
}

// writePKFor is writePKAs with the writer of each bucket's batch: in a
// cluster, the call's writer of that bucket (forward.go).
func (t *Table) writePKFor(ctx context.Context, def *catalog.Table, inputs []pkInput, writerOf func(b int) Writer) (pkResult, error) {
	p := t.pk
	lay, err := p.layout(def)
	if err != nil {
		return pkResult{}, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stale.Load() {
		if err := p.resyncLocked(ctx); err != nil {
			return pkResult{}, err
		}
	}
	n := t.log.Buckets()
	refs := make([][]rowRef, n)
	var ids []int32
	var res pkResult
	for i, in := range inputs {
		ids = lay.buckets(in.rec, ids)
		for r, b := range ids {
			refs[b] = append(refs[b], rowRef{in: int32(i), row: int32(r)})
		}
		res.rows += in.rec.NumRows()
	}
	used := nonEmpty(refs)
	if err := p.readyLocked(ctx, def, used); err != nil {
		return pkResult{}, err
	}
	if err := p.checkSince(ctx, lay, inputs); err != nil {
		return pkResult{}, err
	}
	changes := make([]*bucketChanges, n)
	err = parallel(ctx, len(used), func(i int) error {
		b := used[i]
		c, err := p.prepare(lay, b, refs[b], inputs, writerOf(b))
		changes[b] = c
		return err
	})
	if err != nil {
		return pkResult{}, fmt.Errorf("write to %s: %w", def.FullName(), err)
	}
	parts := make([][]columnarlog.Batch, n)
	for b, c := range changes {
		if c != nil {
			res.existed += c.existed
			if c.records > 0 {
				parts[b] = []columnarlog.Batch{c.batch}
				res.changes += c.records
			}
		}
	}
	if res.changes == 0 {
		return res, nil
	}
	appended, err := t.append(ctx, def, parts)
	if err != nil {
		// In a cluster the write may be in the log, not yet held by the
		// in-sync replicas: the index stays below it (pk_replica.go).
		return pkResult{}, err
	}
	// The write is durable in the log from here: a cancelled caller does
	// not stop the index and the live sets from following it.
	ctx = context.WithoutCancel(ctx)
	if err := p.apply(ctx, changes, appended); err != nil {
		// The index catches up from the log, now if it can (an
		// acknowledged write is visible), else at the next operation.
		p.stale.Store(true)
		t.store.cfg.Logger.Warn("key index update failed after the log write; it is replayed from the log", "table", def.FullName(), "error", err)
		if err := p.resyncLocked(ctx); err != nil {
			t.store.cfg.Logger.Error("key index replay failed; reads of the table lag its log until the next write", "table", def.FullName(), "error", err)
		}
	}
	return res, nil
}

// apply makes the index and the live sets reflect the changes the log
// now holds, and publishes the new state for reads.
func (p *pkTable) apply(ctx context.Context, changes []*bucketChanges, appended [][]columnarlog.AppendResult) error {
	old := p.state.Load()
	st := &pkState{ends: slices.Clone(old.ends), live: slices.Clone(old.live)}
	var used []int
	for b, c := range changes {
		if c != nil && c.records > 0 {
			used = append(used, b)
		}
	}
	err := parallel(ctx, len(used), func(i int) error {
		b := used[i]
		c := changes[b]
		base := appended[b][0].BaseOffset
		batch := p.idx.NewBatch(b, c.indexBytes)
		ed := old.live[b].edit()
		for _, off := range c.unlive {
			ed.clear(off)
		}
		for _, k := range c.dels {
			batch.Delete(k)
		}
		for _, s := range c.sets {
			batch.Set(s.key, base+s.pos, s.row)
			ed.set(base + s.pos)
		}
		st.ends[b], st.live[b] = base+c.records, ed.done()
		return batch.Commit(base + c.records)
	})
	if err != nil {
		return err
	}
	p.state.Store(st)
	return nil
}

// prepare computes the changes of one bucket's rows: the rows of each key
// are merged in input order into the key's current row, read from the
// index through one iterator in key order.
func (p *pkTable) prepare(lay *pkLayout, b int, refs []rowRef, inputs []pkInput, w Writer) (*bucketChanges, error) {
	// Buffers are sized from the first row, to spare their growth.
	first := inputs[refs[0].in].rec
	keyLen := len(lay.key(nil, first.Columns(), int(refs[0].row)))
	arena := make([]byte, 0, len(refs)*(keyLen+keyLen/2)+64)
	for i := range refs {
		r := &refs[i]
		start := len(arena)
		arena = lay.key(arena, inputs[r.in].rec.Columns(), int(r.row))
		r.key = arena[start:len(arena):len(arena)]
	}
	slices.SortStableFunc(refs, func(a, b rowRef) int { return bytes.Compare(a.key, b.key) })
	var keys [][]byte
	for i, r := range refs {
		if i == 0 || !bytes.Equal(r.key, refs[i-1].key) {
			keys = append(keys, r.key)
		}
	}
	olds := make([]keyindex.Entry, len(keys))
	found := make([]bool, len(keys))
	var rowArena []byte
	err := p.idx.Get(b, keys, func(i int, e keyindex.Entry) error {
		start := len(rowArena)
		rowArena = append(rowArena, e.Row...)
		olds[i] = keyindex.Entry{Offset: e.Offset, Row: rowArena[start:len(rowArena):len(rowArena)]}
		found[i] = true
		return nil
	})
	if err != nil {
		return nil, err
	}
	vals0 := make([]rowenc.Value, lay.codec.NumColumns())
	rowLen := len(lay.codec.AppendRow(nil, valuesOf(lay, first, int(refs[0].row), vals0)))
	out := newChangeBuilder(lay, p.t, len(keys)*(rowLen+rowLen/2))
	defer out.release()
	c := &bucketChanges{sets: make([]indexSet, 0, len(keys))}
	buf := make([]byte, 0, len(refs)*(rowLen+rowLen/2))
	ncols := lay.codec.NumColumns()
	// The values of every row, and the old rows, in one allocation each:
	// a row's values stay referenced until its change is encoded.
	valArena := make([]rowenc.Value, (len(refs)+len(keys))*ncols)
	next := func() []rowenc.Value {
		v := valArena[:ncols:ncols]
		valArena = valArena[ncols:]
		return v
	}
	k := 0
	for i := 0; i < len(refs); k++ {
		j := i + 1
		for j < len(refs) && bytes.Equal(refs[j].key, refs[i].key) {
			j++
		}
		var old []rowenc.Value
		if found[k] {
			if old, err = lay.codec.DecodeRow(olds[k].Row, next()[:0]); err != nil {
				return nil, fmt.Errorf("key index row: %w", err)
			}
		}
		cur, changed := old, false
		for _, r := range refs[i:j] {
			in := inputs[r.in]
			vals := next()
			buf = lay.codec.Values(in.rec.Columns(), int(r.row), buf, vals)
			switch in.op {
			case opDelete:
				if cur != nil {
					c.existed++
					cur, changed = nil, true
				}
			case opOverwrite:
				cur, changed = vals, true
			default:
				next, ch, err := lay.engine.Upsert(cur, vals, in.present)
				if err != nil {
					return nil, fmt.Errorf("key %s: %w", describeKey(lay, in.rec, int(r.row)), err)
				}
				if ch {
					cur, changed = next, true
				}
			}
		}
		if err := c.emit(out, keys[k], old, olds[k].Offset, cur, changed); err != nil {
			return nil, err
		}
		i = j
	}
	if c.records == 0 {
		return c, nil
	}
	c.batch, err = out.finish(w)
	return c, err
}

// emit adds the change records of one key, from its row before the write
// (old, at offset oldOff) to after (cur).
func (c *bucketChanges) emit(out *changeBuilder, key []byte, old []rowenc.Value, oldOff int64, cur []rowenc.Value, changed bool) error {
	switch {
	case old == nil && cur == nil, !changed:
		return nil
	case old == nil:
		c.sets = append(c.sets, indexSet{key: key, pos: c.records, row: out.row(cur)})
		c.indexBytes += len(key) + len(c.sets[len(c.sets)-1].row) + 32
		return c.add(out, columnarlog.Insert, cur)
	case cur == nil:
		c.dels = append(c.dels, key)
		c.indexBytes += len(key) + 16
		c.unlive = append(c.unlive, oldOff)
		return c.add(out, columnarlog.Delete, old)
	}
	c.unlive = append(c.unlive, oldOff)
	if err := c.add(out, columnarlog.UpdateBefore, old); err != nil {
		return err
	}
	c.sets = append(c.sets, indexSet{key: key, pos: c.records, row: out.row(cur)})
	c.indexBytes += len(key) + len(c.sets[len(c.sets)-1].row) + 32
	return c.add(out, columnarlog.UpdateAfter, cur)
}

func (c *bucketChanges) add(out *changeBuilder, ct columnarlog.ChangeType, vals []rowenc.Value) error {
	c.records++
	return out.add(ct, vals)
}

// describeKey renders the key of row i for an error message.
func describeKey(lay *pkLayout, rec arrow.RecordBatch, i int) string {
	var b bytes.Buffer
	b.WriteByte('(')
	for j, c := range lay.keyCols {
		if j > 0 {
			b.WriteString(", ")
		}
		b.WriteString(rec.Column(c).ValueStr(i))
	}
	b.WriteByte(')')
	return b.String()
}

// changeBuilder builds one bucket's change records as a log batch.
type changeBuilder struct {
	lay   *pkLayout
	t     *Table
	rb    *array.RecordBuilder
	cts   []byte
	arena []byte
}

func newChangeBuilder(lay *pkLayout, t *Table, rowBytes int) *changeBuilder {
	return &changeBuilder{lay: lay, t: t, rb: array.NewRecordBuilder(t.mem, lay.schema), arena: make([]byte, 0, rowBytes)}
}

// valuesOf is the values of row i of rec.
func valuesOf(lay *pkLayout, rec arrow.RecordBatch, i int, vals []rowenc.Value) []rowenc.Value {
	lay.codec.Values(rec.Columns(), i, nil, vals)
	return vals
}

func (b *changeBuilder) release() { b.rb.Release() }

// row encodes vals for the index.
func (b *changeBuilder) row(vals []rowenc.Value) []byte {
	start := len(b.arena)
	b.arena = b.lay.codec.AppendRow(b.arena, vals)
	return b.arena[start:len(b.arena):len(b.arena)]
}

func (b *changeBuilder) add(ct columnarlog.ChangeType, vals []rowenc.Value) error {
	b.cts = append(b.cts, byte(ct))
	for i, fb := range b.rb.Fields() {
		if err := b.lay.codec.AppendTo(fb, i, vals[i]); err != nil {
			return err
		}
	}
	return nil
}

// finish encodes the records as one compressed log batch of writer w with
// statistics and change types.
func (b *changeBuilder) finish(w Writer) (columnarlog.Batch, error) {
	rec := b.rb.NewRecordBatch()
	defer rec.Release()
	stats, err := columnarlog.EncodeStats(computeStats(rec))
	if err != nil {
		return nil, err
	}
	def := b.lay.def
	codec := codecOf(def.Options.LogCompression)
	msg, err := arrowmsg.AppendRecordBatch(nil, rec, codec, b.t.mem)
	if err != nil {
		return nil, err
	}
	return columnarlog.NewBatch(columnarlog.Header{
		Codec:       columnarlog.Codec(codec),
		SchemaID:    def.SchemaID,
		WriterID:    w.ID,
		WriterSeq:   w.Seq,
		RecordCount: int32(rec.NumRows()),
	}, stats, b.cts, msg)
}
