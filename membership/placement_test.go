package membership

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

func nodes(n int, racks int) []Node {
	out := make([]Node, n)
	for i := range out {
		out[i] = Node{ID: fmt.Sprintf("node-%d", i)}
		if racks > 0 {
			out[i].Rack = fmt.Sprintf("rack-%d", i%racks)
		}
	}
	return out
}

func TestPlaceDeterministicAndOrderFree(t *testing.T) {
	ns := nodes(7, 0)
	rng := rand.New(rand.NewPCG(1, 1))
	for b := 0; b < 200; b++ {
		key := fmt.Sprintf("db.t/%d", b)
		want := Place(key, 3, ns)
		if len(want) != 3 || len(slices.Compact(slices.Sorted(slices.Values(want)))) != 3 {
			t.Fatalf("%s: %v, want 3 distinct nodes", key, want)
		}
		shuffled := slices.Clone(ns)
		rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		if got := Place(key, 3, shuffled); !slices.Equal(got, want) {
			t.Fatalf("%s: %v with the nodes shuffled, %v before", key, got, want)
		}
	}
	if got := Place("k", 5, nodes(2, 0)); len(got) != 2 {
		t.Errorf("more replicas than nodes: %v", got)
	}
	if got := Place("k", 3, nil); len(got) != 0 {
		t.Errorf("no nodes: %v", got)
	}
}

// A node that joins takes replicas only from buckets it now outscores a
// replica of, and a node that leaves moves only its own replicas; about
// n/N of the buckets move either way, and the load is even.
func TestPlaceMovesFewAndBalances(t *testing.T) {
	const buckets, rf = 3000, 3
	before, after := nodes(5, 0), nodes(6, 0)
	moved := 0
	load := map[string]int{}
	for b := 0; b < buckets; b++ {
		key := fmt.Sprintf("db.t/p/%d", b)
		old, cur := Place(key, rf, before), Place(key, rf, after)
		for _, id := range cur {
			load[id]++
			if !slices.Contains(old, id) {
				if id != "node-5" {
					t.Fatalf("%s: %s gained a replica when node-5 joined (%v → %v)", key, id, old, cur)
				}
				moved++
			}
		}
		// node-5 leaving again: the placement is the old one.
		if back := Place(key, rf, before); !slices.Equal(back, old) {
			t.Fatalf("%s: not pure", key)
		}
	}
	// Expected: each bucket gains node-5 with probability rf/6.
	if want := buckets * rf / 6; moved < want*8/10 || moved > want*12/10 {
		t.Errorf("%d replicas moved to the new node, want about %d", moved, want)
	}
	mean := buckets * rf / len(after)
	for id, n := range load {
		if n < mean*85/100 || n > mean*115/100 {
			t.Errorf("%s holds %d replicas, mean %d", id, n, mean)
		}
	}
}

func TestPlaceSpreadsRacks(t *testing.T) {
	ns := nodes(9, 3) // three racks of three
	rack := map[string]string{}
	for _, n := range ns {
		rack[n.ID] = n.Rack
	}
	for b := 0; b < 500; b++ {
		got := Place(fmt.Sprintf("t/%d", b), 3, ns)
		seen := map[string]bool{}
		for _, id := range got {
			seen[rack[id]] = true
		}
		if len(seen) != 3 {
			t.Fatalf("bucket %d: replicas %v in racks %v, want three racks", b, got, seen)
		}
	}
	// Fewer racks than replicas: every rack is used, then the best of the rest.
	two := nodes(4, 2)
	for b := 0; b < 100; b++ {
		got := Place(fmt.Sprintf("t/%d", b), 3, two)
		if len(got) != 3 {
			t.Fatalf("%v", got)
		}
		racks := map[string]bool{}
		for _, id := range got {
			racks[two[slices.IndexFunc(two, func(n Node) bool { return n.ID == id })].Rack] = true
		}
		if len(racks) != 2 {
			t.Fatalf("bucket %d: %v uses racks %v", b, got, racks)
		}
	}
}
