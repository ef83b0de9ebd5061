package columnarlog

import (
	"sync"
	"testing"
	"time"

	"github.com/lakestream/lakestream/internal/vfs"
)

// OnSync sees each fsync of a write's commit path, the bucket's segment and
// the table's commit record, and none with SyncNever.
func TestOnSyncObservesCommitPath(t *testing.T) {
	for _, policy := range []SyncPolicy{SyncAlways, SyncNever} {
		var mu sync.Mutex
		seen := map[string]int{}
		opts := memOpts(vfs.NewMem())
		opts.Sync = policy
		opts.OnSync = func(file string, took time.Duration) {
			if took < 0 {
				t.Errorf("%s sync took %s", file, took)
			}
			mu.Lock()
			seen[file]++
			mu.Unlock()
		}
		tl, err := OpenTable("/t", 2, opts)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tl.Append([][]Batch{{payload(t, 1, 1, 10)}, {payload(t, 1, 1, 10)}}); err != nil {
			t.Fatal(err)
		}
		if err := tl.Close(); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		if policy == SyncAlways && (seen["segment"] < 2 || seen["commit"] < 1) {
			t.Errorf("sync always: observed %v, want a segment sync per bucket and a commit sync", seen)
		}
		if policy == SyncNever && len(seen) != 0 {
			t.Errorf("sync never: observed %v, want none", seen)
		}
		mu.Unlock()
	}
}
