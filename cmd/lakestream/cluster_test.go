package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestClusterArguments(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{nil, "want a subcommand"},
		{[]string{"rebalance"}, `unknown subcommand "rebalance"`},
		{[]string{"status", "extra"}, `unexpected argument "extra"`},
		{[]string{"decommission"}, "want one node id"},
		{[]string{"decommission", "n1", "n2"}, "want one node id"},
		{[]string{"decommission", "--meta", "", "n1"}, "--meta is required"},
		{[]string{"decommission", "--meta", "mysql://x", "n1"}, "want postgres://… or sqlite://…"},
		{[]string{"recommission", "--meta", "", "n1"}, "--meta is required"},
	} {
		err := runCluster(context.Background(), tt.args, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("cluster %q: %v, want an error containing %q", tt.args, err, tt.want)
		}
	}
}

// decommission and recommission against a metadata store in a SQLite
// file: the mark is set, the wait ends at once when the node holds no
// replica, and recommission takes the mark off (a second one says it is
// not there).
func TestDecommissionMarks(t *testing.T) {
	uri := "sqlite://" + t.TempDir() + "/cluster.db"
	var out bytes.Buffer
	if err := runCluster(context.Background(), []string{"decommission", "--meta", uri, "n3"}, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "node n3 holds no replica") {
		t.Errorf("decommission printed %q", out.String())
	}
	out.Reset()
	if err := runCluster(context.Background(), []string{"recommission", "--meta", uri, "n3"}, &out); err != nil {
		t.Fatal(err)
	}
	if err := runCluster(context.Background(), []string{"recommission", "--meta", uri, "n3"}, &out); err == nil || !strings.Contains(err.Error(), "not decommissioned") {
		t.Errorf("a second recommission: %v", err)
	}
}

func TestClusterStatusLag(t *testing.T) {
	s := clusterStatus{ends: map[string]map[string]int64{"1/0": {"a": 100, "b": 90}}}
	b := bucketRow{key: "1/0", leader: "a", replicas: []string{"a", "b", "c"}}
	if got := s.lag(b); got != "b:10 c:?" {
		t.Errorf("lag %q", got)
	}
	b.leader = ""
	if got := s.lag(b); got != "?" {
		t.Errorf("lag of an offline bucket %q", got)
	}
	var out bytes.Buffer
	s.members = []memberRow{{id: "a", state: "alive"}}
	s.buckets = []bucketRow{{table: "default.t", key: "1/0", bucket: "0", replicas: []string{"a", "b"}, isr: []string{"a"}}}
	s.print(&out)
	for _, want := range []string{"members (1)", "buckets (1; 0 under-replicated, 1 offline)", "OFFLINE"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("status lacks %q:\n%s", want, out.String())
		}
	}
}
