package tables

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lakestream/lakestream/catalog"
	"github.com/lakestream/lakestream/columnarlog"
	"github.com/lakestream/lakestream/internal/arrowmsg"
	"github.com/lakestream/lakestream/internal/bucket"
)

// Table is an open table: its definition and its bucket logs.
type Table struct {
	store *Store
	log   *columnarlog.TableLog
	mem   memory.Allocator
	cache *Cache        // decoded columns of read batches; nil: none
	pk    *pkTable      // the key index of a primary-key table; nil: a log table
	rr    atomic.Uint64 // round-robin bucket of the next keyless batch
	limit Limits
	// writers are the table's idempotent writers (writers.go).
	writers *writers

	// defMu orders definition changes against appends: an append holds it
	// shared from its schema check to the log's acknowledgement, and a new
	// definition (ADD COLUMN) is stored holding it exclusively. So a batch
	// is never stored under a schema version other than the one it was
	// encoded for (append.go).
	defMu sync.RWMutex
	def   atomic.Pointer[catalog.Table]
}

// Limits bound what one write may carry.
type Limits struct {
	// MaxWriteBytes is the largest Arrow payload of one atomic write; a
	// larger ingest is committed in several writes. Default 256 MiB.
	MaxWriteBytes int64
}

// Def is the table's current definition.
func (t *Table) Def() *catalog.Table { return t.def.Load() }

// setDef stores a new definition once no append is in flight.
func (t *Table) setDef(def *catalog.Table) {
	t.defMu.Lock()
	t.def.Store(def)
	t.defMu.Unlock()
}

// Log is the table's bucket logs.
func (t *Table) Log() *columnarlog.TableLog { return t.log }

// encode splits the records by bucket and encodes each piece as a log
// batch of writer w (none when w.ID is 0), compressing in parallel. A
// record with a sent message (sent[i], nil: none) that goes whole to one
// bucket is stored as that message, not encoded again. With a read cache it
// also returns the pieces, for the write-through of an acknowledged write
// (writethrough.go); the caller releases them.
func (t *Table) encode(ctx context.Context, def *catalog.Table, recs []arrow.RecordBatch, sent []*Sent, w Writer) ([][]columnarlog.Batch, freshRecords, int64, error) {
	return t.encodeRouted(ctx, def, recs, sent, route{pick: t.bucketFor, writer: func(int) Writer { return w }})
}

// route says where the rows of a table without a bucket key go (pick,
// given the number of buckets) and which writer each bucket's batches
// carry: in a cluster, the call's writer of that bucket (forward.go).
type route struct {
	pick   func(n int) int
	writer func(b int) Writer
}

func (t *Table) encodeRouted(ctx context.Context, def *catalog.Table, recs []arrow.RecordBatch, sent []*Sent, rt route) ([][]columnarlog.Batch, freshRecords, int64, error) {
	n := t.log.Buckets()
	type job struct {
		bucket int
		rec    arrow.RecordBatch
		sent   *Sent
		split  bool // rec is a part bucket.Split made
	}
	var jobs []job
	var rows int64
	defer func() {
		for _, j := range jobs {
			j.rec.Release()
		}
	}()
	var assigner *bucket.Assigner
	if keys := def.BucketKeyIndexes(); len(keys) > 0 && n > 1 {
		a, err := bucket.NewAssigner(def.ArrowSchema(), keys, n)
		if err != nil {
			return nil, nil, 0, fmt.Errorf("table %s: %w", def.FullName(), err)
		}
		assigner = a
	}
	var ids []int32
	for i, rec := range recs {
		if rec.NumRows() == 0 {
			continue
		}
		rows += rec.NumRows()
		var s *Sent
		if i < len(sent) {
			s = sent[i]
		}
		if assigner == nil {
			rec.Retain()
			jobs = append(jobs, job{rt.pick(n), rec, s, false})
			continue
		}
		ids = assigner.Assign(rec, ids[:0])
		split, err := bucket.Split(rec, ids, n, t.mem)
		if err != nil {
			return nil, nil, 0, fmt.Errorf("table %s: split by bucket: %w", def.FullName(), err)
		}
		for b, r := range split {
			switch {
			case r == nil:
			case r == rec: // every row in one bucket: Split kept it whole, with its sent message
				jobs = append(jobs, job{b, r, s, false})
			default:
				jobs = append(jobs, job{b, r, nil, true})
			}
		}
	}
	batches := make([]columnarlog.Batch, len(jobs))
	codec := codecOf(def.Options.LogCompression)
	err := parallel(ctx, len(jobs), func(i int) error {
		var b columnarlog.Batch
		var err error
		w := rt.writer(jobs[i].bucket)
		if s := jobs[i].sent; s != nil {
			b, err = storeSent(jobs[i].rec, *s, def.SchemaID, w)
		} else {
			b, err = encodeBatch(jobs[i].rec, def.SchemaID, w, codec, t.mem)
		}
		batches[i] = b
		return err
	})
	if err != nil {
		return nil, nil, 0, fmt.Errorf("table %s: encode: %w", def.FullName(), err)
	}
	parts := make([][]columnarlog.Batch, n)
	var fresh freshRecords
	if t.cache != nil {
		fresh = make(freshRecords, n)
	}
	for i, j := range jobs {
		parts[j.bucket] = append(parts[j.bucket], batches[i])
		if fresh != nil {
			j.rec.Retain()
			fresh[j.bucket] = append(fresh[j.bucket], freshRecord{j.rec, j.split})
		}
	}
	return parts, fresh, rows, nil
}

func codecOf(c catalog.Compression) arrowmsg.Codec {
	switch c {
	case catalog.CompressionLZ4:
		return arrowmsg.CodecLZ4
	case catalog.CompressionNone:
		return arrowmsg.CodecNone
	}
	return arrowmsg.CodecZstd
}

// encodeBatch compresses rec once, into a log batch with the statistics of
// its columns. The batch is built in place: header, statistics, then the
// Arrow message appended after them, with no copy of the message.
func encodeBatch(rec arrow.RecordBatch, schemaID int32, w Writer, codec arrowmsg.Codec, mem memory.Allocator) (columnarlog.Batch, error) {
	buf, start, err := startBatch(rec)
	if err != nil {
		return nil, err
	}
	buf, err = arrowmsg.AppendRecordBatch(buf, rec, codec, mem)
	if err != nil {
		return nil, err
	}
	return finishBatch(buf[start:], rec, codec, schemaID, w)
}

// storeSent builds a log batch of rec, decoded from sent, that stores
// sent's message bytes as they are, with rec's statistics.
func storeSent(rec arrow.RecordBatch, sent Sent, schemaID int32, w Writer) (columnarlog.Batch, error) {
	buf, start, err := startBatch(rec)
	if err != nil {
		return nil, err
	}
	buf, hdr, err := arrowmsg.AppendMessage(buf, sent.Meta, sent.Body)
	if err != nil {
		return nil, err
	}
	if hdr.Length != rec.NumRows() {
		return nil, fmt.Errorf("the sent message holds %d rows, its record %d", hdr.Length, rec.NumRows())
	}
	return finishBatch(buf[start:], rec, hdr.Codec, schemaID, w)
}

// startBatch begins a log batch of rec: room for the header, then the
// statistics of rec's columns; the Arrow message goes after them.
func startBatch(rec arrow.RecordBatch) ([]byte, int, error) {
	if rec.NumRows() > 1<<31-1 {
		return nil, 0, fmt.Errorf("%d rows in one record, over the 2^31-1 limit", rec.NumRows())
	}
	buf, start := columnarlog.StartBatch(nil)
	buf, err := columnarlog.AppendStatsSection(buf, computeStats(rec))
	return buf, start, err
}

// finishBatch writes the header of a batch startBatch began, whose message
// is compressed with codec.
func finishBatch(b []byte, rec arrow.RecordBatch, codec arrowmsg.Codec, schemaID int32, w Writer) (columnarlog.Batch, error) {
	return columnarlog.FinishBatch(b, columnarlog.Header{
		Codec:       columnarlog.Codec(codec),
		Stats:       true,
		SchemaID:    schemaID,
		WriterID:    w.ID,
		WriterSeq:   w.Seq,
		RecordCount: int32(rec.NumRows()),
	})
}

// parallel runs fn(0..n-1) on up to GOMAXPROCS goroutines and returns the
// first error.
func parallel(ctx context.Context, n int, fn func(i int) error) error {
	if n == 1 {
		return fn(0)
	}
	var (
		next atomic.Int64
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for range min(n, runtime.GOMAXPROCS(0)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				if err := fn(i); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	if len(errs) == 0 {
		return ctx.Err()
	}
	return errors.Join(errs...)
}

// DecodeBatch decodes a stored batch into a record of the current schema's
// columns cols; columns added after the batch was written are nulls.
func (t *Table) DecodeBatch(b columnarlog.Batch, cols []int) (arrow.RecordBatch, error) {
	return newDecoder(t.Def(), cols, t.mem).decode(b)
}
