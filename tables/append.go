package tables

import (
	"context"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lakestream/lakestream/catalog"
	"github.com/lakestream/lakestream/columnarlog"
	"github.com/lakestream/lakestream/internal/arrowmsg"
)

// ErrSchemaChanged is returned by a write that was conformed against a
// definition the table no longer has (an ALTER TABLE ADD COLUMN committed
// while the write was in flight). Nothing of that write is stored; it may
// be retried as it is, and is then conformed against the new definition.
var ErrSchemaChanged = errors.New("the table's definition changed while the write was in flight")

// Appender is the one way rows enter a table. It conforms each record to
// the definition the appender was created with (conform.go) and writes
// them in atomic writes of up to Limits.MaxWriteBytes, each encoded under
// that definition's schema id: after a crash all of a write's rows are
// there or none. Should the table's definition change before a write
// reaches the log, the write is refused with ErrSchemaChanged, so that a
// batch is never stored under a schema it was not encoded for.
//
// With a Writer (SetWriter) the appender's rows are one idempotent call:
// one atomic write, stored once however often the call is sent
// (writers.go).
//
// An Appender is used by one goroutine. Release it when done.
type Appender struct {
	t       *Table
	def     *catalog.Table
	pending []arrow.RecordBatch
	sent    []*Sent  // of each pending record, the message it is stored as; nil: encoded
	present [][]bool // of each pending record of a primary-key table (pk_api.go)
	size    int64    // Arrow bytes of pending
	written int64    // rows acknowledged

	writer    Writer // of an idempotent call; ID 0: none
	flushed   bool   // the idempotent call was flushed: it is over
	duplicate bool   // the idempotent call repeated the writer's last
}

// NewAppender returns an appender conforming to the table's current
// definition.
func (t *Table) NewAppender() *Appender { return &Appender{t: t, def: t.Def()} }

// Def is the definition the appender conforms to.
func (a *Appender) Def() *catalog.Table { return a.def }

// SetWriter makes the appender's rows one call of an idempotent writer
// (w.ID non-zero), before any is added: they are written by Flush as one
// atomic write, or not at all when the call repeats the writer's last one
// (Duplicate); a call that would need several writes is refused with
// ErrIdempotentTooLarge.
func (a *Appender) SetWriter(w Writer) { a.writer = w }

// Duplicate says that the idempotent call repeated the writer's last call,
// which the table had acknowledged: Flush stored nothing, and Written
// counts the rows of the call (those of the call it repeats).
func (a *Appender) Duplicate() bool { return a.duplicate }

// full says that the queued records reached MaxWriteBytes: they are
// written now, or refused for an idempotent call, which must fit one write.
func (a *Appender) full(ctx context.Context) error {
	if a.size < a.t.limit.MaxWriteBytes {
		return nil
	}
	if a.writer.ID != 0 {
		err := fmt.Errorf("write to %s: %w: the call holds over %d bytes of Arrow data (the limit of one write); send it as several calls", a.def.FullName(), ErrIdempotentTooLarge, a.t.limit.MaxWriteBytes)
		a.Release()
		return err
	}
	return a.Flush(ctx)
}

// Add conforms rec (which the caller keeps) and queues it, writing what is
// queued once it reaches MaxWriteBytes. A record that does not fit the
// table is a *SchemaError.
func (a *Appender) Add(ctx context.Context, rec arrow.RecordBatch) error {
	return a.add(ctx, rec, nil)
}

// Sent is a record batch as a client sent it: the data header (a Message
// flatbuffer) and body of an Arrow IPC RecordBatch message with a
// compressed body, which the caller checked (arrowmsg.Validate) and
// decoded into the record given with it.
type Sent struct{ Meta, Body []byte }

// AddSent is Add of rec, decoded from sent. When the record needs no
// change to fit the table (conform keeps every column), goes whole to one
// bucket and the table compresses its log, the write stores sent's bytes
// as they are instead of encoding rec again: compressed input is stored
// as sent (docs/flight.md). Otherwise it is Add. The appender keeps sent
// until the write.
func (a *Appender) AddSent(ctx context.Context, rec arrow.RecordBatch, sent Sent) error {
	hdr, err := arrowmsg.ParseRecordBatch(sent.Meta)
	if err != nil || hdr.Codec == arrowmsg.CodecNone || hdr.Length != rec.NumRows() || hdr.BodyLength != int64(len(sent.Body)) {
		return a.add(ctx, rec, nil) // not a compressed message of these rows: encoded as any record
	}
	return a.add(ctx, rec, &sent)
}

func (a *Appender) add(ctx context.Context, rec arrow.RecordBatch, sent *Sent) error {
	if a.t.pk != nil {
		return a.addPK(ctx, rec)
	}
	c, err := conform(a.def.FullName(), a.def.ArrowSchema(), rec, a.t.mem)
	if err != nil {
		return err
	}
	if sent != nil && (a.def.Options.LogCompression == catalog.CompressionNone || !sameColumns(c, rec)) {
		sent = nil
	}
	a.pending = append(a.pending, c)
	a.sent = append(a.sent, sent)
	a.size += arrowmsg.RecordBytes(c)
	return a.full(ctx)
}

// sameColumns says that conform kept every column of in as it was (the
// schemas may differ in names or nullability, not in layout), so that a
// message of in decodes to out under the table's schema.
func sameColumns(out, in arrow.RecordBatch) bool {
	if out.NumCols() != in.NumCols() {
		return false
	}
	for i := range out.Columns() {
		if out.Column(i) != in.Column(i) {
			return false
		}
	}
	return true
}

// Flush writes the queued records as one atomic write and returns once
// they are durable and visible. Of an idempotent call, it is the end.
func (a *Appender) Flush(ctx context.Context) error {
	defer a.Release()
	if a.t.replicated() {
		return a.flushParts(ctx) // forward.go: each bucket's part on its leader
	}
	if a.writer.ID == 0 {
		return a.flush(ctx)
	}
	if a.flushed {
		if len(a.pending) == 0 {
			return nil
		}
		return fmt.Errorf("write to %s: %w: rows added after the call's flush", a.def.FullName(), ErrIdempotentTooLarge)
	}
	a.flushed = true
	w := a.t.writers
	e, err := w.begin(ctx, a.writer.ID)
	if err != nil {
		return err
	}
	defer w.end(e)
	if err := w.sync(e, a.writer.ID, a.t.log); err != nil {
		return fmt.Errorf("write to %s: %w", a.def.FullName(), err)
	}
	dup, err := w.check(e, a.writer)
	if err != nil {
		return fmt.Errorf("write to %s: %w", a.def.FullName(), err)
	}
	if dup {
		// Nothing is written: not the log, nor a primary-key table's
		// index, which the merge would change. In a cluster the call's
		// batches may be in the log and not yet held by the in-sync
		// replicas (the first send failed waiting for them): the retry is
		// acknowledged when they are.
		if err := a.t.waitWriterAcked(ctx, a.def, a.writer); err != nil {
			e.stale = true // read the writer from the log again next time
			return err
		}
		if p := a.t.pk; p != nil {
			// Its rows are readable here when the call is acknowledged
			// (the index follows the high watermark in the background).
			if err := p.catchUp(ctx); err != nil {
				a.t.store.cfg.Logger.Warn("key index catch-up after a repeated call", "table", a.def.FullName(), "error", err)
			}
		}
		for _, r := range a.pending {
			a.written += r.NumRows()
		}
		a.duplicate = true
		return nil
	}
	if err := a.flush(ctx); err != nil {
		// The call may be in the log, appended and not acknowledged
		// (in a cluster, its replicas did not hold it in time): the next
		// call reads the writer from the log, so that a retry of this one
		// is known as one.
		e.stale = true
		return err
	}
	w.acknowledged(e, a.writer.Seq)
	return nil
}

func (a *Appender) flush(ctx context.Context) error {
	if a.t.pk != nil {
		return a.flushPK(ctx)
	}
	parts, fresh, rows, err := a.t.encode(ctx, a.def, a.pending, a.sent, a.writer)
	defer fresh.release()
	if err != nil || rows == 0 {
		return err
	}
	res, err := a.t.append(ctx, a.def, parts)
	if err != nil {
		return err
	}
	a.t.cacheWritten(a.def, fresh, res)
	a.written += rows
	return nil
}

// Written is the number of rows the appender's writes stored so far.
func (a *Appender) Written() int64 { return a.written }

// Release drops the queued records, unwritten.
func (a *Appender) Release() {
	for _, r := range a.pending {
		r.Release()
	}
	clear(a.pending)
	clear(a.sent)
	a.pending, a.sent, a.present, a.size = a.pending[:0], a.sent[:0], a.present[:0], 0
}

// Write conforms recs and writes them (in atomic writes of up to
// MaxWriteBytes) and returns the rows written.
func (t *Table) Write(ctx context.Context, recs ...arrow.RecordBatch) (int64, error) {
	a := t.NewAppender()
	defer a.Release()
	for _, rec := range recs {
		if err := a.Add(ctx, rec); err != nil {
			return a.Written(), err
		}
	}
	err := a.Flush(ctx)
	return a.Written(), err
}

// append stores one write's encoded batches, one list per bucket, if the
// table's definition is still def.
func (t *Table) append(ctx context.Context, def *catalog.Table, parts [][]columnarlog.Batch) ([][]columnarlog.AppendResult, error) {
	res, err := t.appendLocal(def, parts)
	if err != nil {
		return nil, err
	}
	// In a cluster the write is acknowledged once the bucket's in-sync
	// replicas hold it (replication.go); the schema lock is not held
	// while it waits.
	if err := t.waitAcked(ctx, def, parts, res); err != nil {
		return nil, err
	}
	return res, nil
}

// appendLocal stores the write in this node's log.
func (t *Table) appendLocal(def *catalog.Table, parts [][]columnarlog.Batch) ([][]columnarlog.AppendResult, error) {
	t.defMu.RLock()
	defer t.defMu.RUnlock()
	if cur := t.Def(); cur.SchemaID != def.SchemaID {
		return nil, fmt.Errorf("write to %s: %w (schema version %d, now %d): nothing was written; retry the write", def.FullName(), ErrSchemaChanged, def.SchemaID, cur.SchemaID)
	}
	if err := t.beforeWrite(def, parts); err != nil {
		return nil, err
	}
	res, err := t.log.Append(parts)
	if err != nil {
		return nil, fmt.Errorf("write to %s: %w", def.FullName(), err)
	}
	if on := t.store.cfg.OnWrite; on != nil {
		var rows, bytes int64
		for _, p := range parts {
			for _, b := range p {
				rows += int64(b.RecordCount())
				bytes += int64(b.Size())
			}
		}
		on(def.FullName(), rows, bytes)
	}
	return res, nil
}
