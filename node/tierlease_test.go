package node

import (
	"testing"

	"github.com/lakestream/lakestream/cluster/meta"
)

// The lake committer lease goes only to a node holding a replica of
// every bucket, in sync and not draining; once held, a replica of each
// keeps it while the node does not drain.
func TestMayCommit(t *testing.T) {
	b := func(replicas, isr []string) meta.Bucket { return meta.Bucket{Replicas: replicas, ISR: isr} }
	all := []string{"n1", "n2", "n3"}
	for _, tt := range []struct {
		name           string
		buckets        []meta.Bucket
		held, draining bool
		want           bool
	}{
		{"every bucket in sync", []meta.Bucket{b(all, all), b(all, all)}, false, false, true},
		{"no buckets placed", nil, false, false, false},
		{"a bucket without a replica here", []meta.Bucket{b(all, all), b([]string{"n2", "n3"}, []string{"n2", "n3"})}, false, false, false},
		{"held, a bucket without a replica here", []meta.Bucket{b(all, all), b([]string{"n2", "n3"}, []string{"n2", "n3"})}, true, false, false},
		{"out of a bucket's in-sync set: not taken", []meta.Bucket{b(all, all), b(all, []string{"n2", "n3"})}, false, false, false},
		{"out of a bucket's in-sync set: kept", []meta.Bucket{b(all, all), b(all, []string{"n2", "n3"})}, true, false, true},
		{"draining: not taken", []meta.Bucket{b(all, all)}, false, true, false},
		{"draining: given up", []meta.Bucket{b(all, all)}, true, true, false},
	} {
		if got := mayCommit(tt.buckets, "n1", tt.held, tt.draining); got != tt.want {
			t.Errorf("%s: mayCommit = %v, want %v", tt.name, got, tt.want)
		}
	}
}
