package cluster

import (
	"context"
	"reflect"
	"slices"
	"testing"

	"github.com/lakestream/lakestream/cluster/meta"
	"github.com/lakestream/lakestream/membership"
)

func TestReassign(t *testing.T) {
	ref := BucketRef{TableID: 1}
	st := func(leader string, epoch int32, replicas, isr []string) meta.Bucket {
		return meta.Bucket{Key: ref, Replicas: replicas, Leader: leader, Epoch: epoch, ISR: isr, Version: 5}
	}
	l := func(ids ...string) []string { return ids }
	nodes := func(ids ...string) []membership.Node {
		var out []membership.Node
		for _, id := range ids {
			out = append(out, membership.Node{ID: id})
		}
		return out
	}
	decom := func(ids ...string) func(string) bool { return func(id string) bool { return slices.Contains(ids, id) } }
	for _, tt := range []struct {
		name  string
		in    meta.Bucket
		decom func(string) bool
		want  int
		nodes []membership.Node
		out   meta.Bucket
		ok    bool
	}{
		{"nothing decommissioned", st("a", 1, l("a", "b"), l("a", "b")), decom(), 2, nodes("a", "b", "c"), st("a", 1, l("a", "b"), l("a", "b")), false},
		{"a replica is added outside the set", st("a", 1, l("a", "b"), l("a", "b")), decom("b"), 2, nodes("a", "c"), st("a", 2, l("a", "b", "c"), l("a", "b")), true},
		{"it catches up first", st("a", 2, l("a", "b", "c"), l("a", "b")), decom("b"), 2, nodes("a", "c"), st("a", 2, l("a", "b", "c"), l("a", "b")), false},
		{"then the old one goes", st("a", 2, l("a", "b", "c"), l("a", "b", "c")), decom("b"), 2, nodes("a", "c"), st("a", 3, l("a", "c"), l("a", "c")), true},
		{"a leader goes last: Decide hands it off", st("b", 2, l("b", "a", "c"), l("a", "b", "c")), decom("b"), 2, nodes("a", "c"), st("b", 2, l("b", "a", "c"), l("a", "b", "c")), false},
		{"no node to move to", st("a", 1, l("a", "b", "c"), l("a", "b", "c")), decom("b"), 3, nodes("a", "c"), st("a", 1, l("a", "b", "c"), l("a", "b", "c")), false},
		{"a decommissioned node is no target", st("a", 1, l("a", "b"), l("a", "b")), decom("b", "c"), 2, nodes("a", "c"), st("a", 1, l("a", "b"), l("a", "b")), false},
		{"an offline bucket waits", st("", 3, l("a", "b"), l("a")), decom("b"), 2, nodes("c"), st("", 3, l("a", "b"), l("a")), false},
	} {
		got, ok := Reassign(tt.in, tt.decom, tt.want, tt.nodes)
		if ok != tt.ok || !reflect.DeepEqual(got, tt.out) {
			t.Errorf("%s: %+v %v, want %+v %v", tt.name, got, ok, tt.out, tt.ok)
		}
		if ok {
			if err := storable(tt.in, got); err != nil {
				t.Errorf("%s: %v", tt.name, err)
			}
		}
	}
}

// storable checks that the metadata store takes the decision: the leader a
// replica and in sync, the set within the replicas, the epoch rule.
func storable(from, to meta.Bucket) error {
	m := meta.NewMem(meta.Options{})
	ctx := context.Background()
	if err := m.CreateBuckets(ctx, []meta.Bucket{from}); err != nil {
		return err
	}
	to.Version = 1
	_, err := m.UpdateBucket(ctx, to)
	return err
}
