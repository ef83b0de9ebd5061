package tables

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lakestream/lakestream/catalog"
	"github.com/lakestream/lakestream/columnarlog"
	"github.com/lakestream/lakestream/internal/arrowmsg"
)

// The bucket writers of a call are pinned: a retry may reach another
// node or a newer release, which must derive the same ids
// (docs/cluster.md, "Writes sent to any node").
func TestSubWriterPinned(t *testing.T) {
	for _, c := range []struct {
		w    Writer
		b    int
		want int64
	}{
		{Writer{ID: 42, Seq: 3}, 0, -4767286540954276203},
		{Writer{ID: 42, Seq: 3}, 5, -3204723601973298402},
		{Writer{ID: -1}, 1023, -630182246650139694},
	} {
		got := subWriter(c.w, c.b)
		if got.ID != c.want || got.Seq != c.w.Seq || !got.sparse {
			t.Errorf("subWriter(%+v, %d) = %+v, want id %d, seq %d, sparse", c.w, c.b, got, c.want, c.w.Seq)
		}
	}
	if got := subWriter(Writer{}, 3); got != (Writer{}) {
		t.Errorf("the bucket writer of no writer: %+v", got)
	}
	seen := map[int64]int{}
	for b := range 1024 {
		id := subWriter(Writer{ID: 7}, b).ID
		if id == 0 || id == 7 {
			t.Fatalf("bucket %d: writer id %d", b, id)
		}
		if was, ok := seen[id]; ok {
			t.Fatalf("buckets %d and %d share writer id %d", was, b, id)
		}
		seen[id] = b
	}
	for seq := range int32(100) {
		if b := callBucket(Writer{ID: 9, Seq: seq}, 6); b < 0 || b >= 6 || b != callBucket(Writer{ID: 9, Seq: seq}, 6) {
			t.Fatalf("call %d: bucket %d", seq, b)
		}
	}
}

// A forwarded body of stored batches is taken only whole and of the
// part's schema version and writer.
func TestSplitBatchesChecks(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).AppendValues([]int64{1, 2, 3}, nil)
	rec := b.NewRecordBatch()
	defer rec.Release()
	w := Writer{ID: 11, Seq: 2}
	batch, err := encodeBatch(rec, 4, w, arrowmsg.CodecNone, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	def := &catalog.Table{Name: "t"}
	body := append(append([]byte{}, batch...), batch...)
	got, rows, err := splitBatches(def, ForwardedPart{SchemaID: 4, Writer: w, Body: body})
	if err != nil || len(got) != 2 || rows != 6 {
		t.Fatalf("two whole batches: %d batches, %d rows, %v", len(got), rows, err)
	}
	for name, p := range map[string]ForwardedPart{
		"another writer":  {SchemaID: 4, Writer: Writer{ID: 12, Seq: 2}, Body: body},
		"another seq":     {SchemaID: 4, Writer: Writer{ID: 11, Seq: 3}, Body: body},
		"another schema":  {SchemaID: 5, Writer: w, Body: body},
		"a cut batch":     {SchemaID: 4, Writer: w, Body: body[:len(body)-1]},
		"a short header":  {SchemaID: 4, Writer: w, Body: body[:columnarlog.HeaderSize-1]},
		"for a key table": {SchemaID: 4, Writer: w, Body: body},
	} {
		d := def
		if name == "for a key table" {
			d = &catalog.Table{Name: "t", PrimaryKey: []string{"id"}}
		}
		if _, _, err := splitBatches(d, p); !errors.Is(err, catalog.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
}

// resend sends again only what again allows, stops at the first success,
// and not at all once ctx has ended.
func TestResend(t *testing.T) {
	errTake := fmt.Errorf("%w: %w", ErrReplicaUnavailable, ErrNotTaken)
	errOwn := errors.New("the write's own error")
	notTaken := func(err error) bool { return errors.Is(err, ErrNotTaken) }
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, c := range []struct {
		name  string
		ctx   context.Context
		fails []error // send's answers before it succeeds
		sends int
		err   error
	}{
		{"succeeds at once", context.Background(), nil, 1, nil},
		{"not taken twice", context.Background(), []error{errTake, errTake}, 3, nil},
		{"its own error", context.Background(), []error{errOwn, errTake}, 1, errOwn},
		{"ctx ended", cancelled, []error{errTake, errTake}, 1, errTake},
	} {
		sends := 0
		err := resend(c.ctx, notTaken, func() error {
			sends++
			if sends <= len(c.fails) {
				return c.fails[sends-1]
			}
			return nil
		})
		if sends != c.sends || !errors.Is(err, c.err) || (c.err == nil) != (err == nil) {
			t.Errorf("%s: %d sends, %v; want %d, %v", c.name, sends, err, c.sends, c.err)
		}
	}
}

// A forwarded upsert's body reads back as the records and present
// columns encoded, and is refused cut short or with bytes after it.
func TestUpsertBodyRoundTrip(t *testing.T) {
	stmt, err := catalog.Parse("CREATE TABLE kv (id BIGINT, v VARCHAR, PRIMARY KEY (id))")
	if err != nil {
		t.Fatal(err)
	}
	def, err := stmt.(*catalog.CreateTable).Resolve(catalog.Config{})
	if err != nil {
		t.Fatal(err)
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	b := array.NewRecordBuilder(mem, def.ArrowSchema())
	defer b.Release()
	var in []pkInput
	for i, present := range [][]bool{{true, true}, {true, false}} {
		b.Field(0).(*array.Int64Builder).AppendValues([]int64{int64(i), int64(i) + 10}, nil)
		b.Field(1).(*array.StringBuilder).AppendValues([]string{"a", "b"}, []bool{true, present[1]})
		in = append(in, pkInput{rec: b.NewRecordBatch(), present: present, op: opUpsert})
	}
	defer releaseInputs(in)
	body, err := encodeUpserts(def, in)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeUpserts(def, body, mem)
	if err != nil {
		t.Fatal(err)
	}
	defer releaseInputs(got)
	if len(got) != len(in) {
		t.Fatalf("%d records read back, want %d", len(got), len(in))
	}
	for i := range in {
		if !array.RecordEqual(got[i].rec, in[i].rec) || !slices.Equal(got[i].present, in[i].present) || got[i].op != opUpsert {
			t.Errorf("record %d: %v %v, want %v %v", i, got[i].rec, got[i].present, in[i].rec, in[i].present)
		}
	}
	for name, bad := range map[string][]byte{
		"cut short":        body[:len(body)-1],
		"bytes after it":   append(slices.Clone(body), 0),
		"no record count":  body[:3],
		"count over bytes": append([]byte{3, 0, 0, 0}, body[4:]...),
	} {
		if _, err := decodeUpserts(def, bad, mem); !errors.Is(err, catalog.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
}
