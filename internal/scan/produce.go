package scan

import (
	"context"
	"errors"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
)

// Produce returns the stream of the records fn sends from a goroutine of
// its own, through a buffer of the given size. send returns false once the
// stream is closed: fn must then return (the record it tried to send is
// released). The error fn returns, unless it is the closing stream's
// cancellation, is the stream's last item.
func Produce(ctx context.Context, buffer int, fn func(ctx context.Context, send func(arrow.RecordBatch) bool) error) RecordStream {
	ctx, cancel := context.WithCancel(ctx)
	s := &produced{ch: make(chan produceItem, buffer), cancel: cancel}
	go func() {
		defer close(s.ch)
		send := func(rec arrow.RecordBatch) bool {
			select {
			case s.ch <- produceItem{rec: rec}:
				return true
			case <-ctx.Done():
				rec.Release()
				return false
			}
		}
		if err := fn(ctx, send); err != nil && !errors.Is(err, context.Canceled) {
			select {
			case s.ch <- produceItem{err: err}:
			case <-ctx.Done():
			}
		}
	}()
	return s
}

type produceItem struct {
	rec arrow.RecordBatch
	err error
}

type produced struct {
	ch     chan produceItem
	cancel context.CancelFunc
}

func (s *produced) Next() (arrow.RecordBatch, error) {
	it, ok := <-s.ch
	if !ok {
		return nil, io.EOF
	}
	return it.rec, it.err
}

// Close stops the producer and releases what it sent and no one read.
func (s *produced) Close() error {
	s.cancel()
	for it := range s.ch {
		if it.rec != nil {
			it.rec.Release()
		}
	}
	return nil
}

// Send opens part and calls send with each of its records, in order,
// releasing each once sent; it stops at the first error.
func Send(ctx context.Context, part Part, send func(arrow.RecordBatch) error) error {
	rs, err := part.Open(ctx)
	if err != nil {
		return err
	}
	defer rs.Close()
	for {
		rec, err := rs.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		err = send(rec)
		rec.Release()
		if err != nil {
			return err
		}
	}
}
