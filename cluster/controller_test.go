package cluster

import (
	"reflect"
	"slices"
	"testing"

	"github.com/lakestream/lakestream/cluster/meta"
	"github.com/lakestream/lakestream/membership"
)

func TestDecide(t *testing.T) {
	ref := BucketRef{TableID: 1}
	st := func(leader string, epoch int32, isr ...string) meta.Bucket {
		return meta.Bucket{Key: ref, Replicas: []string{"a", "b", "c"}, Leader: leader, Epoch: epoch, ISR: isr, Version: 5}
	}
	for _, tt := range []struct {
		name  string
		in    meta.Bucket
		alive []string
		want  meta.Bucket
		ok    bool
	}{
		{"all alive", st("a", 1, "a", "b", "c"), []string{"a", "b", "c"}, st("a", 1, "a", "b", "c"), false},
		{"follower dies: the leader's to take out", st("a", 1, "a", "b", "c"), []string{"a", "b"}, st("a", 1, "a", "b", "c"), false},
		{"leader dies: next in placement order", st("a", 1, "a", "b", "c"), []string{"b", "c"}, st("b", 2, "b", "c"), true},
		{"leader dies: skip a replica out of sync", st("a", 1, "a", "c"), []string{"b", "c"}, st("c", 2, "c"), true},
		{"no in-sync replica alive: offline, fenced", st("a", 1, "a"), []string{"b", "c"}, st("", 2, "a"), true},
		{"offline stays offline", st("", 2, "a"), []string{"b", "c"}, st("", 2, "a"), false},
		{"an in-sync replica returns", st("", 2, "a"), []string{"a"}, st("a", 3, "a"), true},
	} {
		alive := func(id string) bool { return slices.Contains(tt.alive, id) }
		got, ok := Decide(tt.in, alive)
		if ok != tt.ok || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: %+v %v, want %+v %v", tt.name, got, ok, tt.want, tt.ok)
		}
	}
}

// Decide never elects a replica out of sync, never lowers the epoch, and
// raises it whenever the leader changes — over every subset of live nodes
// and every in-sync set.
func TestDecideProperties(t *testing.T) {
	nodes := []string{"a", "b", "c"}
	subsets := func() [][]string {
		var out [][]string
		for m := range 1 << len(nodes) {
			var s []string
			for i, n := range nodes {
				if m&(1<<i) != 0 {
					s = append(s, n)
				}
			}
			out = append(out, s)
		}
		return out
	}()
	for _, isr := range subsets {
		for _, leader := range append([]string{""}, nodes...) {
			if leader != "" && !slices.Contains(isr, leader) {
				continue
			}
			for _, live := range subsets {
				in := meta.Bucket{Replicas: nodes, Leader: leader, Epoch: 4, ISR: isr}
				got, _ := Decide(in, func(id string) bool { return slices.Contains(live, id) })
				if got.Leader != "" && (!slices.Contains(isr, got.Leader) || !slices.Contains(live, got.Leader)) {
					t.Errorf("%+v live %v: elected %q, not alive and in sync", in, live, got.Leader)
				}
				if got.Epoch < in.Epoch || (got.Leader != in.Leader && got.Epoch == in.Epoch) {
					t.Errorf("%+v live %v: leader %q at epoch %d", in, live, got.Leader, got.Epoch)
				}
				if got.Leader != "" && !slices.Contains(got.ISR, got.Leader) {
					t.Errorf("%+v live %v: leader %q outside its in-sync set %v", in, live, got.Leader, got.ISR)
				}
			}
		}
	}
}

func TestPlaceStartsInSync(t *testing.T) {
	nodes := []membership.Node{{ID: "a", Rack: "r1"}, {ID: "b", Rack: "r2"}, {ID: "c", Rack: "r1"}}
	st := Place(BucketRef{TableID: 3, Bucket: 1}, 3, nodes)
	if len(st.Replicas) != 3 || st.Leader != st.Replicas[0] || len(st.ISR) != 3 || st.Epoch != 0 {
		t.Fatalf("placed %+v", st)
	}
	if again := Place(BucketRef{TableID: 3, Bucket: 1}, 3, []membership.Node{nodes[2], nodes[0], nodes[1]}); !reflect.DeepEqual(again, st) {
		t.Fatalf("placement depends on the nodes' order: %+v vs %+v", again, st)
	}
}
