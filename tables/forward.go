package tables

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/lakestream/lakestream/catalog"
	"github.com/lakestream/lakestream/columnarlog"
	"github.com/lakestream/lakestream/internal/bucket"
)

// Writes in a cluster (docs/cluster.md, "Writes sent to any node"). The
// node that takes a write splits it by bucket; each bucket's part is
// stored by the bucket's leader: here when this node leads it, else
// forwarded to the leader (Replication.Forward), which stores it with
// Store.WriteForwarded. The call is acknowledged once every part is, and
// each part is one atomic write of its bucket: a multi-bucket call is
// atomic per bucket, not across buckets.
//
// An append-only table's part is its stored batches, encoded once by the
// receiving node and appended by the leader as they are. A primary-key
// table's part is its rows (Arrow IPC, pk_forward.go): the leader merges
// them through its key index.
//
// Idempotent calls. A call (writer W, seq s) has, in each bucket b it
// has rows in, the part (W_b, s): W_b = subWriter(W, b), a writer of the
// table that only bucket b's parts of W's calls use, so the leader of b
// decides a retry from its own bucket's state alone. A retry of a call
// that failed for some buckets is acknowledged again, storing nothing, by
// those that stored their part, and stored by the others: every part once.
// The split must be the same on every send: rows go to buckets by their
// bucket key or primary key, and the rows of a table without either go
// whole to one bucket picked from (W, s) (callBucket).

// ForwardedPart is one bucket's part of a write, as the node that took the write
// sends it to the bucket's leader.
type ForwardedPart struct {
	TableID  int64
	Bucket   int
	SchemaID int32 // the definition the part was conformed and encoded for
	Upsert   bool  // rows to upsert into a primary-key table; else stored batches
	// Statement, when set, is an UPDATE or DELETE to apply to the bucket's
	// rows (OnLeaders); Body is then its SQL text.
	Statement bool
	Writer    Writer // the part's writer: subWriter of the call's; ID 0: none
	Body      []byte // back-to-back stored batches, or encodeUpsert's frame
}

// ForwardResult is what a bucket's leader did with a part.
type ForwardResult struct {
	Rows      int64 // rows stored, or repeated by a duplicate
	Duplicate bool  // the part repeated its writer's last: nothing was stored
}

// ErrNotTaken is wrapped, with ErrReplicaUnavailable, by the refusal of a
// part that a node took nothing of (it does not lead the bucket, or too
// few replicas are in sync): the part may be sent again, to the leader,
// also when the call is not idempotent.
var ErrNotTaken = errors.New("nothing was written")

// forwardAttempts bounds the sends of one part while its bucket's leader
// changes; the waits between them (forwardWait, doubling, at most
// forwardWaitMax) add up to about 5 s, longer than an election takes.
const (
	forwardAttempts = 10
	forwardWait     = 25 * time.Millisecond
	forwardWaitMax  = time.Second
)

// maxPartBody is the largest part one forward carries: under the gRPC
// servers' default message limit (256 MiB), with room for the framing;
// cluster.MaxForwardBody, which the receiver enforces.
const maxPartBody = 255 << 20

// subWriter is the writer of bucket b's parts of writer w's calls:
// splitmix64's finaliser over w's id mixed with b, never 0. The same on
// every node and release (a retry may reach another node, or a newer
// one): changing it would make retries of calls from before the change
// look new. A client writer id that equals some W_b is possible with a
// chance of about one in 2^64 per pair, as for two clients that pick the
// same id at random.
func subWriter(w Writer, b int) Writer {
	if w.ID == 0 {
		return Writer{}
	}
	x := mix64(uint64(w.ID) ^ (uint64(b)+1)*0x9E3779B97F4A7C15)
	if x == 0 {
		x = 1
	}
	return Writer{ID: int64(x), Seq: w.Seq, sparse: true}
}

// callBucket is the bucket of all rows of an idempotent call to a table
// without a bucket key in a cluster: the same on every send of the call,
// and spread over the buckets from call to call.
func callBucket(w Writer, n int) int {
	return int(mix64(uint64(w.ID)^uint64(w.Seq)<<1|1) % uint64(n))
}

func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xBF58476D1CE4E5B9
	x ^= x >> 27
	x *= 0x94D049BB133111EB
	x ^= x >> 31
	return x
}

// bucketPart is one bucket's part of a write on the node that took it.
type bucketPart struct {
	b       int
	w       Writer
	rows    int64
	batches []columnarlog.Batch // of an append-only table
	upserts []pkInput           // of a primary-key table
}

// replicated says that the table's buckets are replicas in a cluster.
func (t *Table) replicated() bool { return t.store.cfg.Replication != nil }

// flushParts is Flush in a cluster: each bucket's part is stored by its
// leader.
func (a *Appender) flushParts(ctx context.Context) error {
	if a.writer.ID != 0 {
		if a.flushed {
			if len(a.pending) == 0 {
				return nil
			}
			return fmt.Errorf("write to %s: %w: rows added after the call's flush", a.def.FullName(), ErrIdempotentTooLarge)
		}
		a.flushed = true
	}
	var parts []bucketPart
	var err error
	if a.t.pk != nil {
		parts, err = a.upsertParts()
		defer releaseParts(parts)
	} else {
		parts, err = a.batchParts(ctx)
	}
	if err != nil || len(parts) == 0 {
		return err
	}
	rows, dup, err := a.t.writeParts(ctx, a.def, parts)
	a.written += rows
	a.duplicate = dup && err == nil
	return err
}

// batchParts encodes the pending records of an append-only table, split
// by bucket, each bucket's batches carrying the bucket's writer of the call.
func (a *Appender) batchParts(ctx context.Context) ([]bucketPart, error) {
	rt := route{pick: a.t.bucketFor, writer: func(b int) Writer { return subWriter(a.writer, b) }}
	if a.writer.ID != 0 {
		rt.pick = func(n int) int { return callBucket(a.writer, n) }
	}
	// Parts written in a cluster do not feed the read cache: their first
	// read decodes them (writethrough.go).
	enc, fresh, rows, err := a.t.encodeRouted(ctx, a.def, a.pending, a.sent, rt)
	fresh.release()
	if err != nil || rows == 0 {
		return nil, err
	}
	var parts []bucketPart
	for b, batches := range enc {
		if len(batches) == 0 {
			continue
		}
		p := bucketPart{b: b, w: subWriter(a.writer, b), batches: batches}
		for _, x := range batches {
			p.rows += int64(x.RecordCount())
		}
		parts = append(parts, p)
	}
	return parts, nil
}

// upsertParts splits the pending records of a primary-key table by the
// bucket of their keys.
func (a *Appender) upsertParts() ([]bucketPart, error) {
	lay, err := a.t.pk.layout(a.def)
	if err != nil {
		return nil, err
	}
	n := a.t.log.Buckets()
	byBucket := make([][]pkInput, n)
	var ids []int32
	for i, rec := range a.pending {
		if rec.NumRows() == 0 {
			continue
		}
		ids = lay.buckets(rec, ids)
		split, err := bucket.Split(rec, ids, n, a.t.mem)
		if err != nil {
			for _, in := range byBucket {
				releaseInputs(in)
			}
			return nil, fmt.Errorf("table %s: split by bucket: %w", a.def.FullName(), err)
		}
		for b, r := range split {
			if r != nil {
				byBucket[b] = append(byBucket[b], pkInput{rec: r, present: a.present[i], op: opUpsert})
			}
		}
	}
	var parts []bucketPart
	for b, in := range byBucket {
		if len(in) == 0 {
			continue
		}
		p := bucketPart{b: b, w: subWriter(a.writer, b), upserts: in}
		for _, x := range in {
			p.rows += x.rec.NumRows()
		}
		parts = append(parts, p)
	}
	return parts, nil
}

func releaseInputs(in []pkInput) {
	for _, x := range in {
		x.rec.Release()
	}
}

func releaseParts(parts []bucketPart) {
	for _, p := range parts {
		releaseInputs(p.upserts)
	}
}

// writeParts has every part stored by its bucket's leader, in parallel,
// and returns the rows stored (or repeated) and whether every part was a
// duplicate. The parts of the buckets this node leads are written first
// as one atomic write, as on a single node; the others are forwarded.
// When some parts fail, the others may be stored: the error says which
// buckets were and which were not.
func (t *Table) writeParts(ctx context.Context, def *catalog.Table, parts []bucketPart) (int64, bool, error) {
	r := t.store.cfg.Replication
	res := make([]ForwardResult, len(parts))
	errs := make([]error, len(parts))
	var local []bucketPart
	var localAt []int
	var wg sync.WaitGroup
	for i, p := range parts {
		if r.Leads(def.ID, p.b) {
			local, localAt = append(local, p), append(localAt, i)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			res[i], errs[i] = t.sendPart(ctx, def, p)
		}()
	}
	if len(local) > 0 {
		lres, err := t.writeLocal(ctx, def, local)
		for j, i := range localAt {
			switch {
			case err == nil:
				res[i] = lres[j]
			case retryable(err, local[j].w) && ctx.Err() == nil:
				// Each on its own now, to its leader: the
				// leadership may have moved.
				wg.Add(1)
				go func() {
					defer wg.Done()
					res[i], errs[i] = t.sendPart(ctx, def, parts[i])
				}()
			default:
				errs[i] = err
			}
		}
	}
	wg.Wait()
	var rows int64
	dup := true
	var stored []int
	var failed []error
	for i, r := range res {
		if errs[i] != nil {
			failed = append(failed, errs[i])
			continue
		}
		rows += r.Rows
		dup = dup && r.Duplicate
		stored = append(stored, parts[i].b)
	}
	switch {
	case len(failed) == 0:
		return rows, dup, nil
	case len(stored) == 0:
		return rows, false, joinOnce(failed)
	}
	sort.Ints(stored)
	s := make([]string, len(stored))
	for i, b := range stored {
		s[i] = fmt.Sprint(b)
	}
	return rows, false, fmt.Errorf("%w (the parts of buckets %s were stored: a write is atomic per bucket in a cluster; send the call again, which an idempotent writer stores once)", joinOnce(failed), strings.Join(s, ", "))
}

// joinOnce joins errors, each text once (the buckets of one local write
// fail with the same error).
func joinOnce(errs []error) error {
	var out []error
	seen := map[string]bool{}
	for _, e := range errs {
		if !seen[e.Error()] {
			seen[e.Error()] = true
			out = append(out, e)
		}
	}
	if len(out) == 1 {
		return out[0]
	}
	return errors.Join(out...)
}

// sendPart has one part stored by its bucket's leader: this node when it
// leads the bucket, else the leader it forwards to. A refusal that took
// nothing, and for an idempotent call any unavailable leader, is sent
// again — to the new leader when the leadership moved (resend).
func (t *Table) sendPart(ctx context.Context, def *catalog.Table, p bucketPart) (ForwardResult, error) {
	r := t.store.cfg.Replication
	var bodies [][]byte // encoded at the first forward
	var total ForwardResult
	done := 0 // bodies stored: a retry sends the rest only
	err := resend(ctx, func(err error) bool { return retryable(err, p.w) }, func() error {
		if r.Leads(def.ID, p.b) && done == 0 {
			res, err := t.writeLocal(ctx, def, []bucketPart{p})
			if err == nil {
				total = res[0]
			}
			return err
		}
		if bodies == nil {
			var err error
			if bodies, err = t.partBodies(def, p); err != nil {
				return err
			}
		}
		for done < len(bodies) {
			res, err := r.Forward(ctx, ForwardedPart{TableID: def.ID, Bucket: p.b, SchemaID: def.SchemaID,
				Upsert: p.upserts != nil, Writer: p.w, Body: bodies[done]})
			if err != nil {
				err = fmt.Errorf("write to %s bucket %d: %w", def.FullName(), p.b, err)
				if done > 0 {
					err = fmt.Errorf("%w (%d of its %d writes were stored)", err, done, len(bodies))
				}
				return err
			}
			total.Rows += res.Rows
			total.Duplicate = res.Duplicate
			done++
		}
		return nil
	})
	return total, err
}

// resend calls send until it succeeds, fails with an error again does
// not retry, ctx ends or forwardAttempts sends were made, waiting between
// sends (forwardWait, doubling up to forwardWaitMax). It returns send's
// last error.
func resend(ctx context.Context, again func(error) bool, send func() error) error {
	wait := forwardWait
	for attempt := 1; ; attempt++ {
		err := send()
		if err == nil || attempt == forwardAttempts || ctx.Err() != nil || !again(err) {
			return err
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return err
		case <-timer.C:
		}
		wait = min(2*wait, forwardWaitMax)
	}
}

// retryable says whether a part that failed may be sent again: when the
// leader took nothing, or, for an idempotent part, when the bucket's
// leader was unavailable (its retry is known as one).
func retryable(err error, w Writer) bool {
	if !errors.Is(err, ErrReplicaUnavailable) {
		return false
	}
	return w.ID != 0 || errors.Is(err, ErrNotTaken)
}

// partBodies encodes a part for forwarding: one body, or, for the batches
// of a call that is not idempotent, as many as the size limit needs (each
// stored by the leader as a write of its own).
func (t *Table) partBodies(def *catalog.Table, p bucketPart) ([][]byte, error) {
	if p.upserts != nil {
		b, err := encodeUpserts(def, p.upserts)
		if err != nil {
			return nil, err
		}
		if len(b) > maxPartBody {
			return nil, fmt.Errorf("write to %s bucket %d: %w: %d bytes to forward to the bucket's leader, over the limit of %d; send fewer rows per call", def.FullName(), p.b, ErrIdempotentTooLarge, len(b), maxPartBody)
		}
		return [][]byte{b}, nil
	}
	var bodies [][]byte
	for rest := p.batches; len(rest) > 0; {
		n, size := 1, len(rest[0])
		for n < len(rest) && size+len(rest[n]) <= maxPartBody {
			size += len(rest[n])
			n++
		}
		if n < len(rest) && p.w.ID != 0 {
			return nil, fmt.Errorf("write to %s bucket %d: %w: over %d bytes to forward to the bucket's leader; send it as several calls", def.FullName(), p.b, ErrIdempotentTooLarge, maxPartBody)
		}
		// One batch is its own body; several are copied once into a
		// body of their size (the frame copies the body again).
		body := []byte(rest[0])
		if n > 1 {
			body = make([]byte, 0, size)
			for _, x := range rest[:n] {
				body = append(body, x...)
			}
		}
		bodies, rest = append(bodies, body), rest[n:]
	}
	return bodies, nil
}

// writeLocal stores parts of buckets this node leads as one atomic
// write: the parts of a write it took, or one part another node forwarded.
// For idempotent parts it decides, under each part's writer's turn, which
// repeat their writer's last part (acknowledged again once the in-sync
// replicas hold it, storing nothing) and which are new.
func (t *Table) writeLocal(ctx context.Context, def *catalog.Table, parts []bucketPart) ([]ForwardResult, error) {
	r := t.store.cfg.Replication
	for _, p := range parts {
		if err := r.BeforeWrite(def.ID, p.b); err != nil {
			return nil, fmt.Errorf("write to %s bucket %d: %w: %w", def.FullName(), p.b, ErrNotTaken, err)
		}
	}
	res := make([]ForwardResult, len(parts))
	for i, p := range parts {
		res[i].Rows = p.rows
	}
	if parts[0].w.ID == 0 {
		return res, t.storeParts(ctx, def, parts)
	}
	// The writers' turns, taken in the order of their ids: two calls
	// that take several never wait for each other in a circle.
	order := make([]int, len(parts))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(x, y int) bool { return parts[order[x]].w.ID < parts[order[y]].w.ID })
	w := t.writers
	entries := make([]*writerEntry, len(parts))
	defer func() {
		for _, e := range entries {
			if e != nil {
				w.end(e)
			}
		}
	}()
	var todo []bucketPart
	var todoAt []int
	for _, i := range order {
		p := parts[i]
		e, err := w.begin(ctx, p.w.ID)
		if err != nil {
			return nil, err
		}
		entries[i] = e
		if err := w.sync(e, p.w.ID, t.log); err != nil {
			return nil, fmt.Errorf("write to %s: %w", def.FullName(), err)
		}
		dup, err := w.check(e, p.w)
		if err != nil {
			return nil, fmt.Errorf("write to %s bucket %d: %w", def.FullName(), p.b, err)
		}
		if !dup {
			todo, todoAt = append(todo, p), append(todoAt, i)
			continue
		}
		if err := t.waitWriterAcked(ctx, def, p.w); err != nil {
			e.stale = true
			return nil, err
		}
		res[i].Duplicate = true
	}
	if pk := t.pk; pk != nil && len(todo) < len(parts) {
		// The repeated parts' rows are readable here when the call is
		// acknowledged (the index follows the high watermark in the
		// background).
		if err := pk.catchUp(ctx); err != nil {
			t.store.cfg.Logger.Warn("key index catch-up after a repeated call", "table", def.FullName(), "error", err)
		}
	}
	if len(todo) == 0 {
		return res, nil
	}
	if err := t.storeParts(ctx, def, todo); err != nil {
		for _, i := range todoAt {
			entries[i].stale = true // the part may be in the log: read the writer from it next time
		}
		return nil, err
	}
	for _, i := range todoAt {
		w.acknowledged(entries[i], parts[i].w.Seq)
	}
	return res, nil
}

// storeParts writes parts of distinct buckets to the log as one atomic
// write and waits for their replicas.
func (t *Table) storeParts(ctx context.Context, def *catalog.Table, parts []bucketPart) error {
	if t.pk != nil {
		writers := make(map[int]Writer, len(parts))
		var in []pkInput
		for _, p := range parts {
			writers[p.b] = p.w
			in = append(in, p.upserts...)
		}
		_, err := t.writePKFor(ctx, def, in, func(b int) Writer { return writers[b] })
		return pkError(def, err)
	}
	enc := make([][]columnarlog.Batch, t.log.Buckets())
	for _, p := range parts {
		enc[p.b] = p.batches
	}
	_, err := t.append(ctx, def, enc)
	return err
}

// WriteForwarded stores a part that another node forwarded: this node
// should lead its bucket. A refusal that took nothing wraps ErrNotTaken.
func (s *Store) WriteForwarded(ctx context.Context, p ForwardedPart) (ForwardResult, error) {
	s.mu.Lock()
	t, ok := s.open[p.TableID]
	s.mu.Unlock()
	if !ok {
		// Not open here yet (created on another node a moment ago: the
		// catalog's poll opens it), or dropped: the sender tries again,
		// and gives up after its sends.
		return ForwardResult{}, fmt.Errorf("forwarded write to table %d: %w: %w: the table is not open on this node", p.TableID, ErrReplicaUnavailable, ErrNotTaken)
	}
	def := t.Def()
	if def.SchemaID < p.SchemaID {
		// The sender saw an ALTER this node has not: read the catalog.
		if _, err := s.ByID(ctx, p.TableID); err != nil {
			return ForwardResult{}, err
		}
		def = t.Def()
	}
	if def.SchemaID != p.SchemaID {
		return ForwardResult{}, fmt.Errorf("write to %s: %w (schema version %d, here %d): nothing was written; retry the write", def.FullName(), ErrSchemaChanged, p.SchemaID, def.SchemaID)
	}
	if p.Bucket < 0 || p.Bucket >= t.log.Buckets() {
		return ForwardResult{}, fmt.Errorf("forwarded write to %s: bucket %d of %d: %w", def.FullName(), p.Bucket, t.log.Buckets(), catalog.ErrInvalid)
	}
	bp := bucketPart{b: p.Bucket, w: p.Writer}
	if p.Writer.ID != 0 {
		bp.w.sparse = true
	}
	var err error
	if p.Upsert {
		if t.pk == nil {
			return ForwardResult{}, fmt.Errorf("forwarded upsert to %s: %w", def.FullName(), ErrNotPrimaryKey)
		}
		bp.upserts, err = decodeUpserts(def, p.Body, t.mem)
		defer releaseInputs(bp.upserts)
		for _, in := range bp.upserts {
			bp.rows += in.rec.NumRows()
		}
	} else {
		bp.batches, bp.rows, err = splitBatches(def, p)
	}
	if err != nil {
		return ForwardResult{}, fmt.Errorf("forwarded write to %s bucket %d: %w", def.FullName(), p.Bucket, err)
	}
	res, err := t.writeLocal(ctx, def, []bucketPart{bp})
	if err != nil {
		return ForwardResult{}, err
	}
	return res[0], nil
}

// splitBatches reads a forwarded body of stored batches, each of which
// must be whole (its checksum is checked again when it is appended), of
// the part's schema version and writer.
func splitBatches(def *catalog.Table, p ForwardedPart) ([]columnarlog.Batch, int64, error) {
	if len(def.PrimaryKey) > 0 {
		return nil, 0, fmt.Errorf("%w: stored batches for a primary-key table", catalog.ErrInvalid)
	}
	var out []columnarlog.Batch
	var rows int64
	for b := p.Body; len(b) > 0; {
		x, rest, ok := columnarlog.CutBatch(b)
		if !ok {
			return nil, 0, fmt.Errorf("%w: %d bytes left do not hold a whole batch", catalog.ErrInvalid, len(b))
		}
		if x.SchemaID() != p.SchemaID || x.WriterID() != p.Writer.ID || x.WriterSeq() != p.Writer.Seq {
			return nil, 0, fmt.Errorf("%w: a batch of schema %d, writer %d/%d in a part of schema %d, writer %d/%d", catalog.ErrInvalid,
				x.SchemaID(), x.WriterID(), x.WriterSeq(), p.SchemaID, p.Writer.ID, p.Writer.Seq)
		}
		out = append(out, x)
		rows += int64(x.RecordCount())
		b = rest
	}
	return out, rows, nil
}
