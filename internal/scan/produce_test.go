package scan

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

func oneRow(mem memory.Allocator) arrow.RecordBatch {
	b := array.NewInt64Builder(mem)
	defer b.Release()
	b.Append(1)
	a := b.NewArray()
	defer a.Release()
	return array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}}, nil), []arrow.Array{a}, 1)
}

// Records come in order, then the producer's error, then EOF.
func TestProduceSendsThenFails(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	boom := errors.New("boom")
	s := Produce(context.Background(), 1, func(ctx context.Context, send func(arrow.RecordBatch) bool) error {
		for range 3 {
			if !send(oneRow(mem)) {
				return nil
			}
		}
		return boom
	})
	defer s.Close()
	for i := range 3 {
		rec, err := s.Next()
		if err != nil || rec.NumRows() != 1 {
			t.Fatalf("record %d: %v", i, err)
		}
		rec.Release()
	}
	if _, err := s.Next(); !errors.Is(err, boom) {
		t.Fatalf("after the records: %v, want the producer's error", err)
	}
	if _, err := s.Next(); !errors.Is(err, io.EOF) {
		t.Fatalf("at the end: %v, want EOF", err)
	}
}

// Closing early stops the producer (send returns false) and releases
// what it sent that was not read.
func TestProduceCloseStopsAndReleases(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	stopped := make(chan struct{})
	s := Produce(context.Background(), 2, func(ctx context.Context, send func(arrow.RecordBatch) bool) error {
		defer close(stopped)
		for send(oneRow(mem)) {
		}
		return ctx.Err()
	})
	rec, err := s.Next()
	if err != nil {
		t.Fatal(err)
	}
	rec.Release()
	s.Close()
	<-stopped
	mem.AssertSize(t, 0)
}
