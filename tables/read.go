package tables

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lakestream/lakestream/catalog"
	"github.com/lakestream/lakestream/columnarlog"
	"github.com/lakestream/lakestream/internal/arrowmsg"
	"github.com/lakestream/lakestream/internal/scan"
)

// Range is the offsets [From, To) of one bucket that a read covers.
type Range struct {
	Bucket   int
	From, To int64
}

// LogRanges returns, for every bucket, the offsets its log holds now: from
// the retained start to the committed end. Rows committed later are not
// part of them. A read of the table captures a View instead, which takes
// the lake into account.
func (t *Table) LogRanges() []Range {
	ends := t.log.CommittedEnds()
	out := make([]Range, t.log.Buckets())
	for b := range out {
		st := t.log.Bucket(b).Stats()
		out[b] = Range{Bucket: b, From: st.Start, To: ends[b]}
	}
	return out
}

// ReadRange reads the rows of r: the stored batches holding them through
// batch (valid only during the call; as ReadBatches). Should log retention
// have deleted the start of r since it was captured — a tiering round
// committed after the capture, and retention deleted what it tiered — those
// rows are in the lake: they are read from the lake's history first, with
// their offsets, and sent decoded through rec, as records of the changelog
// columns cols (indexes into ChangelogSchema; the table's own columns have
// the same indexes there). A table without a lake reports the log's
// out-of-range error.
//
// For a primary-key table, ReadRange returns the table's state, not its
// changelog: the live rows (each live key's current row) of r's bucket
// from r.From up to the end of the state at the time of the call (which
// may be past r.To: the rows of keys changed since the capture are then
// in their newer place), all decoded and sent through rec as the table's
// columns cols (nil: all).
func (t *Table) ReadRange(ctx context.Context, r Range, cols []int, rec func(arrow.RecordBatch) error, batch func(columnarlog.Batch) error) error {
	if t.pk != nil {
		if r.Bucket < 0 || r.Bucket >= t.log.Buckets() {
			return fmt.Errorf("read %s: bucket %d out of range", t.Name(), r.Bucket)
		}
		// Retention may have deleted segments since the capture.
		// Without a lake it deletes only records that are no longer
		// live, and a record never becomes live again: with the log's
		// start read before the state, what was deleted holds no live
		// record of the state. With a lake it deletes tiered records,
		// which readLive reads from the lake's history.
		if t.Lake() == nil {
			r.From = max(r.From, t.log.Bucket(r.Bucket).Stats().Start)
		}
		st := t.pkView()
		if st == nil {
			return t.pk.pendingErr()
		}
		r.To = st.ends[r.Bucket]
		def := t.Def()
		dec := newDecoder(def, scan.Columns(cols, len(def.Columns)), t.mem).cached(t.cache, r.Bucket)
		return t.readLive(ctx, r, st, dec, nil, rec)
	}
	return t.readRange(ctx, r, cols, rec, batch)
}

// readRange is ReadRange of the stored records, the changelog of a
// primary-key table: it calls batch with each stored batch holding offsets
// of r, as ReadBatches does, and sends the rows of r that retention
// deleted from the log before the read got to them — since r was
// captured, or while it was read — from the lake's history through rec,
// as records of the changelog columns cols. It goes back and forth as
// often as retention overtakes it: the history ends at the lake's tiered
// offset of the moment it is read, and by the time the read is back in the
// log, another round may have tiered past that offset and retention
// deleted the log up to the new one. Each pass moves the read on (the
// history refuses a start it does not hold, and the log's start never
// passes the lake's tiered offset), so it ends; Follow goes back and forth
// the same way. A table without a lake reports the log's out-of-range
// error.
func (t *Table) readRange(ctx context.Context, r Range, cols []int, rec func(arrow.RecordBatch) error, batch func(columnarlog.Batch) error) error {
	// next is where the read got to: retention may delete the segment
	// after the one being read, and the rows sent stay sent. It is a batch
	// boundary but for r.From: the log's batches end where the next one
	// starts, the history where a round ended, at a batch's end.
	next := r.From
	each := func(b columnarlog.Batch) error {
		if err := batch(b); err != nil {
			return err
		}
		next = max(next, b.NextOffset())
		return nil
	}
	for {
		err := t.ReadBatches(ctx, Range{Bucket: r.Bucket, From: next, To: r.To}, each)
		if !errors.Is(err, columnarlog.ErrOffsetOutOfRange) || t.Lake() == nil || next >= r.To {
			return err
		}
		rest, herr := t.historyPrefix(ctx, Range{Bucket: r.Bucket, From: next, To: r.To}, cols, rec)
		if herr != nil {
			return errors.Join(err, herr)
		}
		next = rest.From
	}
}

// historyPrefix sends the rows of r the lake's history holds, from r.From
// up to r.To or the history's end, and returns the rest of r, which starts
// above r.From.
func (t *Table) historyPrefix(ctx context.Context, r Range, cols []int, send func(arrow.RecordBatch) error) (Range, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	out := make(chan arrow.RecordBatch, 2)
	var end int64
	var herr error
	go func() {
		defer close(out)
		end, herr = t.Lake().ReadHistory(ctx, r.Bucket, r.From, cols, out)
	}()
	next := r.From
	var serr error
	for rec := range out {
		n := rec.NumRows()
		if serr == nil && next < r.To {
			if next+n > r.To {
				cut := rec.NewSlice(0, r.To-next)
				rec.Release()
				rec = cut
			}
			if serr = send(rec); serr != nil {
				cancel() // the reader stops; what it sent is drained below
			}
		} else {
			cancel()
		}
		rec.Release()
		next += n
	}
	if serr != nil {
		return r, serr
	}
	if next >= r.To {
		return Range{Bucket: r.Bucket, From: r.To, To: r.To}, nil
	}
	if herr != nil {
		return r, fmt.Errorf("read %s bucket %d from the lake: %w", t.Name(), r.Bucket, herr)
	}
	if end <= r.From {
		return r, fmt.Errorf("read %s bucket %d: offset %d is neither in the log nor in the lake", t.Name(), r.Bucket, r.From)
	}
	return Range{Bucket: r.Bucket, From: end, To: r.To}, nil
}

// ReadBatches calls fn with each stored batch holding offsets of r, in
// order. The batch is valid only during the call.
func (t *Table) ReadBatches(ctx context.Context, r Range, fn func(columnarlog.Batch) error) error {
	if r.From >= r.To {
		return nil
	}
	rd, err := t.log.Bucket(r.Bucket).NewReader(r.From)
	if err != nil {
		return fmt.Errorf("read %s bucket %d: %w", t.Def().FullName(), r.Bucket, err)
	}
	defer rd.Close()
	var buf []byte
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		batches, nbuf, err := rd.Next(buf[:0], 4<<20)
		if err != nil {
			return fmt.Errorf("read %s bucket %d: %w", t.Def().FullName(), r.Bucket, err)
		}
		buf = nbuf
		if len(batches) == 0 {
			return nil
		}
		for _, b := range batches {
			if b.BaseOffset() >= r.To {
				return nil
			}
			if b.NextOffset() <= r.From {
				continue
			}
			if err := fn(b); err != nil {
				return err
			}
		}
	}
}

// Name is "db.table".
func (t *Table) Name() string { return t.Def().FullName() }

// Schema is the current schema.
func (t *Table) Schema() *arrow.Schema { return t.Def().ArrowSchema() }

// plan plans a decoded read of the table's log ranges as of def, or of its
// changelog view, whose schema is the table's followed by changelogFields:
// one part per range. nil ranges leave the parts to the caller (Follow).
func (t *Table) plan(def *catalog.Table, req scan.Request, changelog bool, ranges []Range) (*logPlan, error) {
	schema := layerSchema(def, LayerTable)
	if changelog {
		schema = layerSchema(def, LayerChangelog)
	}
	cols := scan.Columns(req.Columns, schema.NumFields())
	out, err := scan.ProjectSchema(schema, cols)
	if err != nil {
		return nil, fmt.Errorf("scan %s: %w", def.FullName(), err)
	}
	prune, err := newPruner(def, schema, req.Filters)
	if err != nil {
		return nil, fmt.Errorf("scan %s: %w", def.FullName(), err)
	}
	p := &logPlan{t: t, def: def, cols: cols, schema: out, changelog: changelog, prune: prune}
	// A scan whose columns would not fit in the cache reads around it: in
	// an LRU, a scan larger than the cache only evicts what the next one
	// would have found (8 bytes a value is a floor of the decoded size).
	var rows int64
	for _, r := range ranges {
		rows += max(0, r.To-r.From)
	}
	if t.cache != nil && (ranges == nil || rows*int64(max(1, len(cols)))*8 <= t.cache.max) {
		p.cache = t.cache
	}
	for _, r := range ranges {
		if r.Bucket < 0 || r.Bucket >= t.log.Buckets() {
			return nil, fmt.Errorf("scan %s: bucket %d out of range", def.FullName(), r.Bucket)
		}
		p.parts = append(p.parts, &logPart{plan: p, r: r})
	}
	return p, nil
}

type logPlan struct {
	t         *Table
	def       *catalog.Table
	cols      []int
	schema    *arrow.Schema
	parts     []scan.Part
	changelog bool
	// prune skips batches that cannot hold a row the filters accept; nil
	// without filters (prune.go).
	prune *pruner
	// cache holds decoded columns; nil when the scan reads around it.
	cache *Cache
	// pk is the captured state of a primary-key table read: the parts
	// return its live records. nil for log tables and the changelog.
	pk *pkState
	// remote reads the plan's remote parts (remote.go); nil without.
	remote Remote
}

func (p *logPlan) Schema() *arrow.Schema { return p.schema }
func (p *logPlan) Parts() []scan.Part    { return p.parts }

type logPart struct {
	plan *logPlan
	r    Range
}

// Open streams the part's batches, those the filters do not rule out,
// projected on the encoded bytes and then decoded, from a goroutine that
// stops when the stream is closed. Rows retention moved to the lake since
// the capture come from the lake's history (ReadRange), unpruned.
func (p *logPart) Open(ctx context.Context) (scan.RecordStream, error) {
	return scan.Produce(ctx, 2, func(ctx context.Context, send func(arrow.RecordBatch) bool) error {
		prune := p.plan.prune
		if st := p.plan.pk; st != nil {
			dec := newDecoder(p.plan.def, p.plan.cols, p.plan.t.mem).cached(p.plan.cache, p.r.Bucket)
			return p.plan.t.readLive(ctx, p.r, st, dec, prune, func(rec arrow.RecordBatch) error {
				rec.Retain()
				if !send(rec) {
					return ctx.Err()
				}
				return nil
			})
		}
		decode := p.decoder()
		fromLake := func(rec arrow.RecordBatch) error {
			rec.Retain()
			if !send(rec) {
				return ctx.Err()
			}
			return nil
		}
		return p.plan.t.readRange(ctx, p.r, p.plan.cols, fromLake, func(b columnarlog.Batch) error {
			if prune != nil {
				if ok, err := prune.mayMatch(b, p.r.Bucket); err != nil || !ok {
					return err
				}
			}
			rec, err := decode(b)
			if err != nil {
				return err
			}
			if !send(rec) {
				return ctx.Err()
			}
			return nil
		})
	}), nil
}

// decoder turns stored batches into records of the projected current
// schema. Batches written under an older schema version lack the columns
// added since; those come back as nulls.
type decoder struct {
	def  *catalog.Table
	cols []int
	mem  memory.Allocator
	// cache, when set, holds decoded columns of bucket's batches.
	cache  *Cache
	bucket int
}

func newDecoder(def *catalog.Table, cols []int, mem memory.Allocator) *decoder {
	return &decoder{def: def, cols: cols, mem: mem}
}

// cached makes the decoder read and fill c (nil: no cache) for the
// batches of bucket.
func (d *decoder) cached(c *Cache, bucket int) *decoder {
	d.cache, d.bucket = c, bucket
	return d
}

func (d *decoder) decode(b columnarlog.Batch) (arrow.RecordBatch, error) {
	if d.cache != nil {
		return d.decodeCached(b)
	}
	return d.decodeColumns(b, d.cols)
}

// decodeCached takes the columns the cache has and decodes the others once,
// adding them to the cache.
func (d *decoder) decodeCached(b columnarlog.Batch) (arrow.RecordBatch, error) {
	key := cacheKey{table: d.def.ID, bucket: int32(d.bucket), offset: b.BaseOffset()}
	cols := make([]arrow.Array, len(d.cols))
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	var missing []int
	for i, c := range d.cols {
		key.col = int32(c)
		if cols[i] = d.cache.get(key); cols[i] == nil {
			missing = append(missing, c)
		}
	}
	rows := int64(b.RecordCount())
	if len(missing) > 0 {
		rec, err := d.decodeColumns(b, missing)
		if err != nil {
			return nil, err
		}
		defer rec.Release()
		rows = rec.NumRows()
		batchCols := 0
		if s, err := d.def.ArrowSchemaAt(b.SchemaID()); err == nil {
			batchCols = s.NumFields()
		}
		j := 0
		for i, c := range d.cols {
			if cols[i] != nil {
				continue
			}
			cols[i] = rec.Column(j)
			cols[i].Retain()
			if c < batchCols { // nulls for a column added later are not worth keeping
				key.col = int32(c)
				d.cache.put(key, cols[i])
			}
			j++
		}
	}
	cur := d.def.ArrowSchema()
	fields := make([]arrow.Field, len(d.cols))
	for i, c := range d.cols {
		fields[i] = cur.Field(c)
	}
	return array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, rows), nil
}

// decodeColumns decodes the columns wanted of a batch.
func (d *decoder) decodeColumns(b columnarlog.Batch, want []int) (arrow.RecordBatch, error) {
	batchSchema, err := d.def.ArrowSchemaAt(b.SchemaID())
	if err != nil {
		return nil, fmt.Errorf("batch at offset %d: %w", b.BaseOffset(), err)
	}
	msg, err := b.ArrowMessage()
	if err != nil {
		return nil, err
	}
	meta, body, err := arrowmsg.SplitMessage(msg)
	if err != nil {
		return nil, err
	}
	// Keep the wanted columns the batch has; the rest are added as nulls.
	var present []int
	for _, c := range want {
		if c < batchSchema.NumFields() {
			present = append(present, c)
		}
	}
	// Project returns a body of its own: decoded arrays of an uncompressed
	// batch point into it, not into the reader's reused buffer.
	meta, body, err = arrowmsg.Project(batchSchema, present, meta, body)
	if err != nil {
		return nil, err
	}
	fields := make([]arrow.Field, len(present))
	for i, c := range present {
		fields[i] = batchSchema.Field(c)
	}
	rec, err := DecodeMessage(arrow.NewSchema(fields, nil), meta, body, d.mem)
	if err != nil {
		return nil, fmt.Errorf("decode batch at offset %d: %w", b.BaseOffset(), err)
	}
	if len(present) == len(want) {
		return rec, nil
	}
	defer rec.Release()
	cur := d.def.ArrowSchema()
	cols := make([]arrow.Array, len(want))
	out := make([]arrow.Field, len(want))
	j := 0
	for i, c := range want {
		out[i] = cur.Field(c)
		if c < batchSchema.NumFields() {
			cols[i] = rec.Column(j)
			cols[i].Retain()
			j++
		} else {
			cols[i] = array.MakeArrayOfNull(d.mem, cur.Field(c).Type, int(rec.NumRows()))
		}
	}
	defer func() {
		for _, c := range cols {
			c.Release()
		}
	}()
	return array.NewRecordBatch(arrow.NewSchema(out, nil), cols, rec.NumRows()), nil
}

// DecodeMessage decodes one Arrow IPC RecordBatch message (flatbuffer and
// body) of the given schema.
func DecodeMessage(schema *arrow.Schema, meta, body []byte, mem memory.Allocator) (arrow.RecordBatch, error) {
	src := &oneMessage{schema: ipc.GetSchemaPayload(schema, mem), meta: meta, body: body}
	defer src.schema.Release()
	rdr, err := ipc.NewReaderFromMessageReader(src, ipc.WithAllocator(mem))
	if err != nil {
		return nil, err
	}
	defer rdr.Release()
	if !rdr.Next() {
		if err := rdr.Err(); err != nil {
			return nil, err
		}
		return nil, errors.New("no record in message")
	}
	rec := rdr.RecordBatch()
	rec.Retain()
	return rec, nil
}

// oneMessage feeds an ipc reader a schema message, then one record batch.
// Like ipc's own MessageReader it owns the messages it returns: each is
// released by the next call, the last by Release.
type oneMessage struct {
	schema ipc.Payload
	meta   []byte
	body   []byte
	step   int
	last   *ipc.Message
}

func (m *oneMessage) Message() (*ipc.Message, error) {
	m.Release()
	m.step++
	switch m.step {
	case 1:
		meta := m.schema.Meta()
		defer meta.Release()
		m.last = ipc.NewMessage(meta, memory.NewBufferBytes(nil))
		return m.last, nil
	case 2:
		m.last = ipc.NewMessage(memory.NewBufferBytes(m.meta), memory.NewBufferBytes(m.body))
		return m.last, nil
	}
	return nil, io.EOF
}

func (m *oneMessage) Retain() {}
func (m *oneMessage) Release() {
	if m.last != nil {
		m.last.Release()
		m.last = nil
	}
}
