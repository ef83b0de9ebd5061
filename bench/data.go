package bench

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lakestream/lakestream/internal/arrowmsg"
)

// The benchmark rows are events: id BIGINT NOT NULL, amount DOUBLE,
// kind VARCHAR, ts TIMESTAMPTZ (timestamp[us, UTC]). Row i is a pure
// function of i, so every workload, run and system sees the same rows:
//
//	id     = i
//	amount = (x mod 100,000) / 100          0.00 to 999.99
//	kind   = one of 6 names, by x
//	ts     = 2023-11-14T22:13:20Z + i ms + (x mod 1000) µs
//
// where x is a xorshift of i. About 34 bytes of Arrow data per row.

// eventsDDL is the column list of every benchmark table.
const eventsDDL = "(id BIGINT NOT NULL, amount DOUBLE, kind VARCHAR, ts TIMESTAMPTZ)"

var kindNames = []string{"click", "view", "purchase", "refund", "add_to_cart", "checkout"}

// baseMicros is the ts of row 0, 1,700,000,000 s after the epoch.
const baseMicros = 1_700_000_000_000_000

var eventsSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "amount", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "kind", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
}, nil)

// mix is the per-row pseudo-random value x.
func mix(i int64) uint64 {
	x := uint64(i)*0x9E3779B97F4A7C15 + 1
	x ^= x << 13
	x ^= x >> 7
	x ^= x << 17
	return x
}

// events builds rows [from, from+n).
func events(from int64, n int) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, eventsSchema)
	defer b.Release()
	ids := b.Field(0).(*array.Int64Builder)
	amounts := b.Field(1).(*array.Float64Builder)
	kinds := b.Field(2).(*array.StringBuilder)
	tss := b.Field(3).(*array.TimestampBuilder)
	ids.Reserve(n)
	amounts.Reserve(n)
	kinds.Reserve(n)
	kinds.ReserveData(n * 8)
	tss.Reserve(n)
	for id := from; id < from+int64(n); id++ {
		x := mix(id)
		ids.UnsafeAppend(id)
		amounts.UnsafeAppend(float64(x%100_000) / 100)
		kinds.Append(kindNames[x%uint64(len(kindNames))])
		tss.UnsafeAppend(arrow.Timestamp(baseMicros + id*1000 + int64(x%1000)))
	}
	return b.NewRecordBatch()
}

// batches splits rows [0, rows) into records of at most size rows.
func batches(rows, size int) []arrow.RecordBatch {
	out := make([]arrow.RecordBatch, 0, (rows+size-1)/size)
	for from := 0; from < rows; from += size {
		out = append(out, events(int64(from), min(size, rows-from)))
	}
	return out
}

func release(recs []arrow.RecordBatch) {
	for _, r := range recs {
		r.Release()
	}
}

func totalBytes(recs []arrow.RecordBatch) int64 {
	var n int64
	for _, r := range recs {
		n += arrowmsg.RecordBytes(r)
	}
	return n
}
