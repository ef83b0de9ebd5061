package tables

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
)

// UPDATE and DELETE of a primary-key table in a cluster (docs/cluster.md):
// a statement reads the rows it changes, and only a bucket's leader holds
// the bucket's current rows. So the node that takes the statement runs it
// on the buckets it leads, and sends it, as SQL text, to the leader of
// each other bucket, which runs it on that bucket's rows alone. Each
// bucket's part is one atomic write; the statement's count is the sum.

// Buckets is the set of buckets a statement applies to on this node.
type Buckets map[int]bool

type bucketsKey struct{}

// WithBuckets makes the UPDATEs and DELETEs run with ctx apply to the rows
// of buckets bs only (BucketsOf, OnlyBuckets).
func WithBuckets(ctx context.Context, bs Buckets) context.Context {
	return context.WithValue(ctx, bucketsKey{}, bs)
}

// BucketsOf is the buckets WithBuckets set; nil when none were.
func BucketsOf(ctx context.Context) Buckets {
	bs, _ := ctx.Value(bucketsKey{}).(Buckets)
	return bs
}

// OnlyBuckets returns the rows of rec (rows of the table, or its keys)
// whose keys fall in bs. The caller releases the result.
func (t *Table) OnlyBuckets(rec arrow.RecordBatch, bs Buckets) (arrow.RecordBatch, error) {
	if t.pk == nil {
		return nil, fmt.Errorf("update %s: %w", t.Name(), ErrNotPrimaryKey)
	}
	def := t.Def()
	conformed, _, err := conformPK(def, rec, t.mem, int(rec.NumCols()) < len(def.Columns))
	if err != nil {
		return nil, err
	}
	defer conformed.Release()
	lay, err := t.pk.layout(def)
	if err != nil {
		return nil, err
	}
	ids := lay.buckets(conformed, nil)
	mb := array.NewBooleanBuilder(t.mem)
	defer mb.Release()
	for _, b := range ids {
		mb.Append(bs[int(b)])
	}
	mask := mb.NewArray()
	defer mask.Release()
	out, err := compute.FilterRecordBatch(context.Background(), rec, mask, compute.DefaultFilterOptions())
	if err != nil {
		return nil, fmt.Errorf("update %s: rows of its buckets: %w", t.Name(), err)
	}
	return out, nil
}

// OnLeaders runs a statement on every bucket of the table on its leader:
// local, with the buckets this node leads (WithBuckets), and the SQL text
// forwarded to the leader of each other bucket. It returns the sum of the
// counts. A part whose leader took nothing is sent again, to the new
// leader, as parts of writes are (forward.go).
func (t *Table) OnLeaders(ctx context.Context, sql string, local func(context.Context) (int64, error)) (int64, error) {
	r := t.store.cfg.Replication
	def := t.Def()
	led := Buckets{}
	var remote []int
	for b := range t.log.Buckets() {
		if r.Leads(def.ID, b) {
			led[b] = true
		} else {
			remote = append(remote, b)
		}
	}
	var mu sync.Mutex
	var total int64
	var errs []error
	add := func(n int64, err error) {
		mu.Lock()
		total += n
		if err != nil {
			errs = append(errs, err)
		}
		mu.Unlock()
	}
	var wg sync.WaitGroup
	for _, b := range remote {
		wg.Add(1)
		go func() {
			defer wg.Done()
			add(t.statementOn(ctx, b, sql, local))
		}()
	}
	if len(led) > 0 {
		add(local(WithBuckets(ctx, led)))
	}
	wg.Wait()
	return total, errors.Join(errs...)
}

// statementOn runs the statement on bucket b's leader.
func (t *Table) statementOn(ctx context.Context, b int, sql string, local func(context.Context) (int64, error)) (int64, error) {
	r := t.store.cfg.Replication
	def := t.Def()
	var n int64
	err := resend(ctx, func(err error) bool { return errors.Is(err, ErrNotTaken) }, func() error {
		if r.Leads(def.ID, b) {
			var err error
			n, err = local(WithBuckets(ctx, Buckets{b: true}))
			return err
		}
		res, err := r.Forward(ctx, ForwardedPart{TableID: def.ID, Bucket: b, SchemaID: def.SchemaID, Statement: true, Body: []byte(sql)})
		n = res.Rows
		if err != nil {
			return fmt.Errorf("%s bucket %d: %w", def.FullName(), b, err)
		}
		return nil
	})
	return n, err
}

// CheckLeads refuses, wrapping ErrNotTaken, a forwarded statement for a
// bucket this node does not lead.
func (t *Table) CheckLeads(b int) error {
	def := t.Def()
	if b < 0 || b >= t.log.Buckets() {
		return fmt.Errorf("forwarded statement on %s: bucket %d of %d: %w", def.FullName(), b, t.log.Buckets(), errUpsertFrame)
	}
	if err := t.store.cfg.Replication.BeforeWrite(def.ID, b); err != nil {
		return fmt.Errorf("%s bucket %d: %w: %w", def.FullName(), b, ErrNotTaken, err)
	}
	return nil
}

// Replicated says that the table's buckets are replicas in a cluster.
func (t *Table) Replicated() bool { return t.replicated() }
