package duck

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lakestream/lakestream/internal/scan"
)

// scanner reads the parts of one plan in parallel goroutines into a bounded
// channel, from which DuckDB's threads take records in the table function.
//
// Why goroutines and a channel rather than pulling from the part streams
// inside the callback: a part's Next may block on I/O or wait for another
// goroutine, and iter.Pull-style coroutines crash when resumed from a cgo
// callback (measured; docs/architecture.md, "Query execution"). The channel
// also decouples how many parts
// are read at once (readers) from how many DuckDB threads consume.
type scanner struct {
	ctx    context.Context
	cancel context.CancelFunc
	out    chan arrow.RecordBatch
	wg     sync.WaitGroup

	mu struct {
		sync.Mutex
		err error
	}
}

// startScan starts reading parts, at most readers at a time, into a channel
// of capacity buffer. The scan stops when ctx is cancelled or stop is called.
func startScan(ctx context.Context, parts []scan.Part, readers, buffer int) *scanner {
	ctx, cancel := context.WithCancel(ctx)
	s := &scanner{ctx: ctx, cancel: cancel, out: make(chan arrow.RecordBatch, buffer)}
	work := make(chan int, len(parts))
	for i := range parts {
		work <- i
	}
	close(work)
	readers = max(1, min(readers, len(parts)))
	s.wg.Add(readers)
	for range readers {
		go func() {
			defer s.wg.Done()
			for i := range work {
				if err := s.readPart(i, parts[i]); err != nil {
					s.fail(err)
					return
				}
			}
		}()
	}
	go func() {
		s.wg.Wait()
		close(s.out)
	}()
	return s
}

func (s *scanner) readPart(i int, p scan.Part) (err error) {
	if err := s.ctx.Err(); err != nil {
		return err
	}
	rs, err := p.Open(s.ctx)
	if err != nil {
		return fmt.Errorf("open part %d: %w", i, err)
	}
	defer func() {
		if cerr := rs.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("close part %d: %w", i, cerr)
		}
	}()
	for {
		rec, err := rs.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read part %d: %w", i, err)
		}
		if err := s.send(rec); err != nil {
			return err
		}
	}
}

// morselRows is the most rows one record on the channel carries. Bigger
// records are sliced (zero-copy), so that DuckDB threads share the work of
// a part that comes in few large records.
const morselRows = 16 * 2048

// send hands rec, in morsels, to the consumers. It takes ownership of rec.
func (s *scanner) send(rec arrow.RecordBatch) error {
	defer rec.Release()
	rows := rec.NumRows()
	for lo := int64(0); lo < rows; lo += morselRows {
		m := rec
		if rows > morselRows {
			m = rec.NewSlice(lo, min(lo+morselRows, rows))
		} else {
			m.Retain()
		}
		select {
		case s.out <- m:
		case <-s.ctx.Done():
			m.Release()
			return s.ctx.Err()
		}
	}
	return nil
}

func (s *scanner) fail(err error) {
	s.mu.Lock()
	if s.mu.err == nil {
		s.mu.err = err
	}
	s.mu.Unlock()
	s.cancel()
}

func (s *scanner) err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.err
}

// next returns the next record, nil at the end of the scan. With wait false
// it returns nil, nil at once when no record is ready.
func (s *scanner) next(wait bool) (arrow.RecordBatch, error) {
	if !wait {
		select {
		case rec, ok := <-s.out:
			if !ok {
				return nil, s.err()
			}
			return rec, nil
		default:
			return nil, nil
		}
	}
	select {
	case rec, ok := <-s.out:
		if !ok {
			return nil, s.err()
		}
		return rec, nil
	case <-s.ctx.Done():
		if err := s.err(); err != nil {
			return nil, err
		}
		return nil, s.ctx.Err()
	}
}

// stop cancels the readers, waits for them and releases records nobody
// took. It is safe to call more than once.
func (s *scanner) stop() {
	s.cancel()
	s.wg.Wait()
	for rec := range s.out {
		rec.Release()
	}
}
