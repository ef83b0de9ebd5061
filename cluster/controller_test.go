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
		drain []string
		want  meta.Bucket
		ok    bool
	}{
		{"all alive", st("a", 1, "a", "b", "c"), []string{"a", "b", "c"}, nil, st("a", 1, "a", "b", "c"), false},
		{"follower dies: the leader's to take out", st("a", 1, "a", "b", "c"), []string{"a", "b"}, nil, st("a", 1, "a", "b", "c"), false},
		{"leader dies: next in placement order", st("a", 1, "a", "b", "c"), []string{"b", "c"}, nil, st("b", 2, "b", "c"), true},
		{"leader dies: skip a replica out of sync", st("a", 1, "a", "c"), []string{"b", "c"}, nil, st("c", 2, "c"), true},
		{"no in-sync replica alive: offline, fenced", st("a", 1, "a"), []string{"b", "c"}, nil, st("", 2, "a"), true},
		{"offline stays offline", st("", 2, "a"), []string{"b", "c"}, nil, st("", 2, "a"), false},
		{"an in-sync replica returns", st("", 2, "a"), []string{"a"}, nil, st("a", 3, "a"), true},
		{"draining leader hands off, the set stays", st("a", 1, "a", "b", "c"), []string{"a", "b", "c"}, []string{"a"}, st("b", 2, "a", "b", "c"), true},
		{"hand-off skips a replica out of sync", st("a", 1, "a", "c"), []string{"a", "b", "c"}, []string{"a"}, st("c", 2, "a", "c"), true},
		{"hand-off skips a draining replica", st("a", 1, "a", "b", "c"), []string{"a", "b", "c"}, []string{"a", "b"}, st("c", 2, "a", "b", "c"), true},
		{"no one to hand off to: keeps leading", st("a", 1, "a", "b"), []string{"a", "b"}, []string{"a", "b"}, st("a", 1, "a", "b"), false},
		{"no one in sync to hand off to", st("a", 1, "a"), []string{"a", "b", "c"}, []string{"a"}, st("a", 1, "a"), false},
		{"hand-off drops a follower that stopped", st("a", 1, "a", "b", "c"), []string{"a", "b"}, []string{"a", "c"}, st("b", 2, "a", "b"), true},
		{"a follower that stopped leaves the set", st("a", 1, "a", "b", "c"), []string{"a", "b"}, []string{"c"}, st("a", 1, "a", "b"), true},
		{"a draining follower still alive stays", st("a", 1, "a", "b", "c"), []string{"a", "b", "c"}, []string{"c"}, st("a", 1, "a", "b", "c"), false},
		{"a dead follower not draining stays: the leader's", st("a", 1, "a", "b", "c"), []string{"a", "b"}, nil, st("a", 1, "a", "b", "c"), false},
		{"leader dies: prefer a replica not draining", st("a", 1, "a", "b", "c"), []string{"b", "c"}, []string{"b"}, st("c", 2, "b", "c"), true},
		{"leader dies: a draining replica rather than none", st("a", 1, "a", "b"), []string{"b", "c"}, []string{"b"}, st("b", 2, "b"), true},
		{"a draining leader that died is replaced", st("a", 1, "a", "b", "c"), []string{"b", "c"}, []string{"a"}, st("b", 2, "b", "c"), true},
	} {
		v := View{Alive: func(id string) bool { return slices.Contains(tt.alive, id) }, Draining: func(id string) bool { return slices.Contains(tt.drain, id) }}
		got, ok := Decide(tt.in, v)
		if ok != tt.ok || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: %+v %v, want %+v %v", tt.name, got, ok, tt.want, tt.ok)
		}
	}
}

// Decide never elects a replica out of sync, never lowers the epoch, and
// raises it whenever the leader changes; it hands a draining leader's
// leadership off whenever another replica is alive, in sync and not
// draining; it never changes the replicas — over every subset of live
// nodes, of draining nodes and every in-sync set.
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
				for _, drain := range subsets {
					in := meta.Bucket{Replicas: nodes, Leader: leader, Epoch: 4, ISR: isr}
					v := View{Alive: func(id string) bool { return slices.Contains(live, id) }, Draining: func(id string) bool { return slices.Contains(drain, id) }}
					got, _ := Decide(in, v)
					if !reflect.DeepEqual(got.Replicas, in.Replicas) {
						t.Errorf("%+v live %v draining %v: replicas became %v", in, live, drain, got.Replicas)
					}
					if slices.Contains(live, got.Leader) && slices.Contains(drain, got.Leader) {
						for _, id := range isr {
							if id != got.Leader && slices.Contains(live, id) && !slices.Contains(drain, id) {
								t.Errorf("%+v live %v draining %v: %q leads though %q could", in, live, drain, got.Leader, id)
							}
						}
					}
					if got.Leader != "" && (!slices.Contains(isr, got.Leader) || !slices.Contains(live, got.Leader)) {
						t.Errorf("%+v live %v: elected %q, not alive and in sync", in, live, got.Leader)
					}
					if got.Epoch < in.Epoch || (got.Leader != in.Leader && got.Epoch == in.Epoch) {
						t.Errorf("%+v live %v: leader %q at epoch %d", in, live, got.Leader, got.Epoch)
					}
					if got.Leader != "" && !slices.Contains(got.ISR, got.Leader) {
						t.Errorf("%+v live %v: leader %q outside its in-sync set %v", in, live, got.Leader, got.ISR)
					}
					for _, id := range in.ISR {
						if !slices.Contains(got.ISR, id) && slices.Contains(live, id) {
							t.Errorf("%+v live %v draining %v: live %q left the in-sync set", in, live, drain, id)
						}
					}
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
