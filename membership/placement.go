package membership

import (
	"cmp"
	"hash/fnv"
	"slices"
)

// Node is what placement knows of a node: its id and rack.
type Node struct {
	ID   string
	Rack string
}

// Place returns the ids of the nodes that hold the replicas of the bucket
// named key (for example "db.table/partition/bucket"), n of them at most,
// in preference order — the first is the preferred leader. It is a pure
// function of key, n and the set of nodes (their order does not matter),
// so every node computes the same placement from the same membership.
//
// Rendezvous (highest random weight) hashing: each node scores
// hash(key, node id) and the highest scores win, so a node that joins
// takes a replica only of the buckets where it outscores one of the
// chosen, and a node that leaves moves only its own replicas — about
// n/N of the buckets either way. Rack-aware: the replicas go first to the
// best-scoring node of each rack not yet holding one, then, when there are
// fewer racks than replicas, to the best remaining nodes.
func Place(key string, n int, nodes []Node) []string {
	type scored struct {
		Node
		score uint64
	}
	all := make([]scored, 0, len(nodes))
	for _, nd := range nodes {
		all = append(all, scored{nd, weight(key, nd.ID)})
	}
	slices.SortFunc(all, func(a, b scored) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	n = min(n, len(all))
	out := make([]string, 0, n)
	taken := make([]bool, len(all))
	racks := map[string]bool{}
	for i, s := range all {
		if len(out) == n {
			break
		}
		if !racks[s.Rack] {
			racks[s.Rack] = true
			taken[i] = true
			out = append(out, s.ID)
		}
	}
	for i, s := range all {
		if len(out) == n {
			break
		}
		if !taken[i] {
			out = append(out, s.ID)
		}
	}
	return out
}

// weight is the rendezvous score of a node for a key: FNV-1a over both,
// then a 64-bit finalizer (splitmix64's) so that keys differing in a
// few bits score unrelated.
func weight(key, node string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(key))
	h.Write([]byte{0})
	h.Write([]byte(node))
	x := h.Sum64()
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
