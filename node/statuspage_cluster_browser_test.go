package node

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The status page of a cluster node in a real headless browser shows the
// cluster: every member, each bucket with its leader and in-sync set, and
// the change of leader when the leader stops, without a reload and
// without console errors. A screenshot is left as TestStatusPageInBrowser
// leaves its own.
func TestStatusPageShowsClusterInBrowser(t *testing.T) {
	c := newHTTPCluster(t, "n1", "n2", "n3")
	c.exec("CREATE TABLE t (id BIGINT, v VARCHAR) WITH ('bucket.num' = '1')")
	b0 := c.bucket("n1")
	waitUntil(t, func() bool { b0 = c.bucket("n1"); return b0.Leader != "" && len(b0.ISR) == 3 })
	watcher := "n1"
	if b0.Leader == watcher {
		watcher = "n2"
	}

	ctx, finish := browser(t, 1200)

	leaderCell := `document.querySelector('tr[data-bucket="default.t/0"] td.leader')`
	if err := chromedp.Do(ctx,
		chromedp.Navigate("http://"+c.nodes[watcher].n.HTTPAddr()+"/"),
		chromedp.WaitVisible(chromedp.CSS(`#cluster`)),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-node="n3"]`)),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-bucket="default.t/0"]`)),
	); err != nil {
		t.Fatalf("the page does not show the cluster: %v", err)
	}
	if got, err := chromedp.Run(ctx, chromedp.Evaluate[string](leaderCell+`.textContent`)); err != nil || got != b0.Leader {
		t.Fatalf("the bucket's leader reads %q (%v), want %s", got, err, b0.Leader)
	}
	members, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('#members tbody tr[data-node]').length`))
	if err != nil || members != 3 {
		t.Fatalf("%d members shown (%v), want 3", members, err)
	}

	// The leader stops: the page follows the hand-off in place.
	leader := c.nodes[b0.Leader]
	leader.stop()
	if err := <-leader.done; err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](leaderCell+`?.textContent !== "`+b0.Leader+`"`, chromedp.WithPollingInterval(100*time.Millisecond))); err != nil {
		t.Fatalf("the page did not show the new leader: %v", err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.querySelector('tr[data-node="`+b0.Leader+`"] td.warn')?.textContent === "stopping"`,
		chromedp.WithPollingInterval(100*time.Millisecond))); err != nil {
		t.Fatalf("the page does not mark %s as stopping: %v", b0.Leader, err)
	}
	note, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById('cluster-note').textContent`))
	if err != nil || !strings.Contains(note, "This node: "+watcher) {
		t.Errorf("the cluster's note reads %q (%v)", note, err)
	}

	finish("status-page-cluster.png")
}
