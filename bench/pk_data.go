package bench

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// The rows of the primary-key workload are event rows over a key space of
// Config.PKKeys keys. Row i (0 ≤ i < Config.PKRows) writes key
//
//	id(i) = (i mod K) · p mod K
//
// with p a prime that does not divide K (a permutation of the keys, so the
// writes of one key are scattered over the run), and the values of events
// row i (amount, kind, ts from the xorshift of i): an update changes them.
// Rows [0, K) insert every key once, each later row updates one; the last
// K rows hold every key once, so the final state is rows [N-K, N).
//
// The rows go to Config.Writers writers by id mod writers, each in row
// order, so that every key's writes arrive in order whatever the
// interleaving of the writers, and the final state is the one above.

// pkKeyspace maps rows to keys.
type pkKeyspace struct {
	keys int64
	p    int64
}

func newPKKeyspace(keys int) pkKeyspace {
	for _, p := range []int64{1_000_003, 999_983, 7_919, 104_729} {
		if int64(keys)%p != 0 {
			return pkKeyspace{keys: int64(keys), p: p % int64(keys)}
		}
	}
	panic("unreachable: no key count is a multiple of four distinct primes below 2^31 and above the limit")
}

// id is the key row i writes.
func (k pkKeyspace) id(i int64) int64 {
	j := i % k.keys
	return int64((uint64(j) * uint64(k.p)) % uint64(k.keys))
}

// pkBuilder builds event records row by row.
type pkBuilder struct {
	b       *array.RecordBuilder
	ids     *array.Int64Builder
	amounts *array.Float64Builder
	kinds   *array.StringBuilder
	tss     *array.TimestampBuilder
	n       int
}

func newPKBuilder(reserve int) *pkBuilder {
	b := array.NewRecordBuilder(memory.DefaultAllocator, eventsSchema)
	pb := &pkBuilder{b: b, ids: b.Field(0).(*array.Int64Builder), amounts: b.Field(1).(*array.Float64Builder),
		kinds: b.Field(2).(*array.StringBuilder), tss: b.Field(3).(*array.TimestampBuilder)}
	pb.reserve(reserve)
	return pb
}

func (pb *pkBuilder) reserve(n int) {
	pb.ids.Reserve(n)
	pb.amounts.Reserve(n)
	pb.kinds.Reserve(n)
	pb.kinds.ReserveData(n * 8)
	pb.tss.Reserve(n)
}

// add appends row i of the sequence, with key id.
func (pb *pkBuilder) add(i, id int64) {
	x := mix(i)
	pb.ids.UnsafeAppend(id)
	pb.amounts.UnsafeAppend(float64(x%100_000) / 100)
	pb.kinds.Append(kindNames[x%uint64(len(kindNames))])
	pb.tss.UnsafeAppend(arrow.Timestamp(baseMicros + i*1000 + int64(x%1000)))
	pb.n++
}

// flush returns the rows added since the last flush as a record.
func (pb *pkBuilder) flush(reserve int) arrow.RecordBatch {
	rec := pb.b.NewRecordBatch()
	pb.n = 0
	pb.reserve(reserve)
	return rec
}

func (pb *pkBuilder) release() { pb.b.Release() }

// pkWrites cuts rows [0, rows) into each writer's batches of at most bs
// rows: writer w gets the rows whose key is w mod writers, in row order.
func pkWrites(ks pkKeyspace, rows, bs, writers int) [][]arrow.RecordBatch {
	out := make([][]arrow.RecordBatch, writers)
	bs = min(bs, rows)
	bld := make([]*pkBuilder, writers)
	for w := range bld {
		bld[w] = newPKBuilder(bs)
		defer bld[w].release()
	}
	for i := range int64(rows) {
		id := ks.id(i)
		w := int(id % int64(writers))
		bld[w].add(i, id)
		if bld[w].n == bs {
			out[w] = append(out[w], bld[w].flush(bs))
		}
	}
	for w, b := range bld {
		if b.n > 0 {
			out[w] = append(out[w], b.flush(0))
		}
	}
	return out
}

// pkFinal is the final state of a run of rows over ks: rows
// [rows-keys, rows), every key once, in batches of at most bs rows.
func pkFinal(ks pkKeyspace, rows, bs int) []arrow.RecordBatch {
	var out []arrow.RecordBatch
	b := newPKBuilder(bs)
	defer b.release()
	for i := int64(rows) - ks.keys; i < int64(rows); i++ {
		b.add(i, ks.id(i))
		if b.n == bs {
			out = append(out, b.flush(bs))
		}
	}
	if b.n > 0 {
		out = append(out, b.flush(0))
	}
	return out
}

// pkKeyBatch is n distinct keys of ks starting from a random start with a
// stride coprime to the key count (n ≤ keys).
func pkKeyBatch(ks pkKeyspace, start int64, n int, into []int64) []int64 {
	into = into[:0]
	for m := range int64(n) {
		into = append(into, (start+m*ks.p)%ks.keys)
	}
	return into
}

func countAll(lists [][]arrow.RecordBatch) (batches int, rows int64) {
	for _, l := range lists {
		batches += len(l)
		rows += totalRows(l)
	}
	return batches, rows
}
