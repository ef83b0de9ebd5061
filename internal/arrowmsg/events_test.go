package arrowmsg

import (
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// eventSchema is a typical ingested event table, for compression figures:
// testSchema's uniformly random values compress far worse than real rows.
func eventSchema() *arrow.Schema {
	return arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "ts", Type: arrow.FixedWidthTypes.Timestamp_us},
		{Name: "user_id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "event", Type: arrow.BinaryTypes.String},
		{Name: "country", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "url", Type: arrow.BinaryTypes.String},
		{Name: "duration_ms", Type: arrow.PrimitiveTypes.Int32},
		{Name: "amount", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "ok", Type: arrow.FixedWidthTypes.Boolean},
	}, nil)
}

var (
	eventNames = []string{"page_view", "click", "scroll", "add_to_cart", "remove_from_cart",
		"checkout", "purchase", "login", "logout", "search", "signup", "share"}
	countries = []string{"US", "GB", "DE", "FR", "NL", "SE", "ES", "IT", "PL", "BR",
		"IN", "JP", "KR", "AU", "CA", "MX"}
	paths = []string{"/", "/products", "/products/view", "/cart", "/checkout", "/account",
		"/search", "/help", "/blog/post", "/pricing"}
)

// buildEvents makes rows events: ids and timestamps ascending (a few
// milliseconds apart, jittered), users from a pool of 100,000, names and
// countries from small vocabularies (countries 5% null), urls of a path and
// a numeric item, durations and amounts random (amount 30% null, as only
// purchases carry one).
func buildEvents(t testing.TB, mem memory.Allocator, rows int, seed uint64) arrow.RecordBatch {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 2))
	b := array.NewRecordBuilder(mem, eventSchema())
	defer b.Release()
	ts := int64(1_767_225_600_000_000) // 2026-01-01 UTC, µs
	for i := range rows {
		ts += r.Int64N(5000)
		b.Field(0).(*array.Int64Builder).Append(1_000_000 + int64(i))
		b.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(ts))
		b.Field(2).(*array.Int64Builder).Append(r.Int64N(100_000))
		b.Field(3).(*array.StringBuilder).Append(eventNames[r.IntN(len(eventNames))])
		if r.IntN(20) == 0 {
			b.Field(4).AppendNull()
		} else {
			b.Field(4).(*array.StringBuilder).Append(countries[r.IntN(len(countries))])
		}
		url := paths[r.IntN(len(paths))]
		if r.IntN(2) == 0 {
			url += "?item=" + strconv.Itoa(r.IntN(5000))
		}
		b.Field(5).(*array.StringBuilder).Append(url)
		b.Field(6).(*array.Int32Builder).Append(r.Int32N(5000))
		if r.IntN(10) < 3 {
			b.Field(7).AppendNull()
		} else {
			b.Field(7).(*array.Float64Builder).Append(float64(r.IntN(100_000)) / 100)
		}
		b.Field(8).(*array.BooleanBuilder).Append(r.IntN(50) != 0)
	}
	return b.NewRecordBatch()
}
