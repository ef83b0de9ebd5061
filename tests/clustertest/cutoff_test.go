package clustertest

import (
	"context"
	"os"
	"path/filepath"
	"time"
)

// The harness cuts links and fails disks: the links are TCP proxies
// (proxy_test.go) that every node's replication connections to the others
// (--fault-dial) and its metadata store sessions (its --meta URL) go
// through; the disks are the nodes' --fault-disk control files.
//
// Gossip is not cut. A node cut off from the replication links but still
// gossiping, and still holding its node lease in the metadata store, is
// the case where liveness and reachability disagree, and the one the
// cluster has to get right without an election: gossip and the lease say
// the leader is alive, so only its in-sync set protects the writes
// ("isolate-leader"). Cutting its metadata store link as well makes its
// lease lapse, which is what the controller decides liveness by whatever
// gossip says ("isolate-leader-meta"); a node cut off from gossip as well
// is what a frozen node already shows ("pause-leader").

// linksOf are node id's replication links both ways, and with meta its
// link to the metadata store.
func (h *harness) linksOf(id string, meta bool) []*link {
	var out []*link
	for k, l := range h.repl {
		if k[0] == id || k[1] == id {
			out = append(out, l)
		}
	}
	if meta {
		out = append(out, h.metaLink[id])
	}
	return out
}

// setDisk makes node id's log fsyncs fail ("fail"), hang ("stall") or run
// (""): the control file is replaced whole, so a reader sees one or the
// other.
func (h *harness) setDisk(id, mode string) {
	h.t.Helper()
	p := h.nodes[id]
	tmp := filepath.Join(filepath.Dir(p.disk), "."+filepath.Base(p.disk))
	if err := os.WriteFile(tmp, []byte(mode), 0o644); err != nil {
		h.t.Fatal(err)
	}
	if err := os.Rename(tmp, p.disk); err != nil {
		h.t.Fatal(err)
	}
}

// staleWrites sends n calls straight to node id, a leader cut off from
// its followers, each once, with a writer of its own, and returns how
// many were acknowledged: a correct cluster acknowledges none. An
// acknowledged one counts as acknowledged in the history too, so that its
// rows must be there at the end.
func (h *harness) staleWrites(id string, hist *history, n int) int {
	acked := 0
	for range n {
		hist.mu.Lock()
		w := &writer{id: 100 + int64(hist.staleCalls)}
		hist.staleCalls++
		hist.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := w.call(ctx, h.nodes[id].cl, "t")
		cancel()
		if err == nil {
			acked++
			hist.ack(w.ids())
		}
	}
	return acked
}

// otherThan is the first of ids that is not not.
func otherThan(ids []string, not string) string {
	for _, id := range ids {
		if id != not {
			return id
		}
	}
	return ""
}
