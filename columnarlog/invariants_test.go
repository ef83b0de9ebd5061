package columnarlog

import (
	"errors"
	"math"
	"testing"

	"github.com/lakestream/lakestream/internal/invariants"
	"github.com/lakestream/lakestream/internal/vfs"
)

// Under -tags invariants, each check fires when its invariant is broken.
// The state is broken by hand, as only a bug could break it.
func TestInvariantChecksFire(t *testing.T) {
	if !invariants.Enabled {
		t.Skip("the checks are compiled in with -tags invariants")
	}
	for _, c := range []struct {
		invariant string
		breakIt   func(t *testing.T, tl *TableLog)
	}{
		{"dense offsets", func(t *testing.T, tl *TableLog) {
			l := tl.Bucket(0)
			l.mu.Lock()
			l.mu.next++ // the log's end no longer where its active segment ends
			l.mu.Unlock()
			tl.Append([][]Batch{{payload(t, 2, 1, 10)}, nil})
		}},
		{"committed <= written end", func(t *testing.T, tl *TableLog) {
			l := tl.Bucket(0)
			l.publish(l.Stats().Next + 1)
		}},
		{"index entries sorted", func(t *testing.T, tl *TableLog) {
			l := tl.Bucket(0)
			l.mu.Lock()
			s := l.mu.segments[len(l.mu.segments)-1]
			s.index[len(s.index)-1].ts = math.MaxInt64
			l.mu.Unlock()
			tl.Append([][]Batch{{payload(t, 2, 1, 10)}, nil}) // the first batch took the index interval
		}},
		{"segments tile the log", func(t *testing.T, tl *TableLog) {
			l := tl.Bucket(1)
			l.mu.Lock()
			l.mu.start = 1 // the log starts inside its first segment
			l.mu.Unlock()
			l.ApplyRetention(Retention{Floor: math.MaxInt64})
		}},
		{"committed ends never move back", func(t *testing.T, tl *TableLog) {
			ends := []int64{100, 100}
			tl.ends.Store(&ends)
			tl.Append([][]Batch{{payload(t, 2, 1, 10)}, nil})
		}},
	} {
		t.Run(c.invariant, func(t *testing.T) {
			tl, err := OpenTable("/t", 2, memOpts(vfs.NewMem()))
			if err != nil {
				t.Fatal(err)
			}
			// A first batch of 300 bytes: the next one gets an index entry.
			if _, err := tl.Append([][]Batch{{payload(t, 1, 3, 300)}, {payload(t, 1, 2, 10)}}); err != nil {
				t.Fatal(err)
			}
			defer func() {
				var v *invariants.Violation
				err, _ := recover().(error)
				if !errors.As(err, &v) || v.Invariant != c.invariant {
					t.Fatalf("got %v, want a violation of %q", err, c.invariant)
				}
			}()
			c.breakIt(t, tl)
		})
	}
}
