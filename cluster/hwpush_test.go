package cluster

import (
	"context"
	"testing"
	"time"
)

// A follower learns the high watermark that its own fetch moved in the
// answer to that fetch, not once the next write wakes it: readers on a
// follower see an acknowledged write without another write to carry the
// watermark. The leaders hold a fetch at their end for up to a minute, so
// a follower told only with the next write (there is none) would show
// it; ten writes give either follower the turn of the last to report.
func TestFollowerLearnsTheHighWatermarkItMoved(t *testing.T) {
	c := newTestClusterWait(t, time.Minute, time.Minute, "a", "b", "c")
	c.elect("a", []string{"a", "b", "c"}, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range 10 {
		end, err := c.write(ctx, "a", 5)
		if err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for _, id := range []string{"b", "c"} {
			for c.logs[id].HighWatermark() < end {
				if time.Now().After(deadline) {
					t.Fatalf("write %d: follower %s's high watermark is %d, the leader acknowledged %d 10 s ago", i, id, c.logs[id].HighWatermark(), end)
				}
				time.Sleep(time.Millisecond) // polling the follower's state: no event to wait on
			}
		}
	}
}
