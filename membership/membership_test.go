package membership

import (
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"
)

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func start(t *testing.T, id string, key []byte, join ...string) *Membership {
	t.Helper()
	m, err := Start(Config{
		NodeID: id, Gossip: freeAddr(t), Join: join, Key: key, Timing: TimingLocal,
		Flight: "flight-" + id, HTTP: "http-" + id, Rack: "r" + id[len(id)-1:],
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatalf("start %s: %v", id, err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m
}

// waitFor polls cond (gossip converges in its own time) up to 15 s.
func waitFor(t *testing.T, what string, cond func() bool, extra ...func() string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s (%v)", what, describe(extra))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func states(m *Membership) string {
	var parts []string
	for _, mb := range m.Members() {
		parts = append(parts, mb.ID+"="+string(mb.State))
	}
	return strings.Join(parts, " ")
}

// Three nodes find each other and each other's addresses; one that
// leaves is seen as left, one that stops answering as dead.
func TestMembership(t *testing.T) {
	key := []byte("0123456789abcdef")
	a := start(t, "n1", key)
	b := start(t, "n2", key, a.cfg.Gossip)
	c := start(t, "n3", key, b.cfg.Gossip)
	for _, m := range []*Membership{a, b, c} {
		waitFor(t, m.cfg.NodeID+" sees three alive", func() bool { return states(m) == "n1=alive n2=alive n3=alive" })
	}
	for _, mb := range a.Members() {
		if mb.Flight != "flight-"+mb.ID || mb.HTTP != "http-"+mb.ID || mb.Rack == "" || mb.Gossip == "" {
			t.Errorf("member as n1 sees it: %+v", mb)
		}
	}
	if self := b.Self(); self.ID != "n2" || self.State != Alive {
		t.Errorf("self: %+v", self)
	}
	if err := c.Leave(time.Second); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "n3 left", func() bool { return states(a) == "n1=alive n2=alive n3=left" }, func() string { return states(a) })
	if err := b.Close(); err != nil { // a crash: no leave message
		t.Fatal(err)
	}
	waitFor(t, "n2 dead", func() bool { return states(a) == "n1=alive n2=dead n3=left" })
	if live := a.Live(); len(live) != 1 || live[0].ID != "n1" {
		t.Errorf("live: %+v", live)
	}
}

func TestMembershipKeyRequired(t *testing.T) {
	a := start(t, "n1", []byte("0123456789abcdef"))
	_, err := Start(Config{NodeID: "n2", Gossip: freeAddr(t), Join: []string{a.cfg.Gossip}, Timing: TimingLocal,
		Logger: slog.New(slog.DiscardHandler)})
	if err == nil {
		t.Fatal("a node without the gossip key joined")
	}
	_, err = Start(Config{NodeID: "n3", Gossip: freeAddr(t), Join: []string{a.cfg.Gossip}, Timing: TimingLocal,
		Key: []byte("fedcba9876543210"), Logger: slog.New(slog.DiscardHandler)})
	if err == nil {
		t.Fatal("a node with another gossip key joined")
	}
	if got := states(a); got != "n1=alive" {
		t.Errorf("n1 sees %s", got)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Gossip: "127.0.0.1:0"}, "node id"},
		{Config{NodeID: "x", Gossip: "nope"}, "gossip address"},
		{Config{NodeID: "x", Gossip: "0.0.0.0:7946"}, "wildcard"},
		{Config{NodeID: "x", Gossip: "127.0.0.1:0", Key: []byte("short")}, "16, 24 or 32"},
		{Config{NodeID: "x", Gossip: "127.0.0.1:0", Timing: "wan"}, "timing"},
		{Config{NodeID: "x", Gossip: "127.0.0.1:0", Rack: strings.Repeat("r", 600)}, "bytes"},
	} {
		m, err := Start(c.cfg)
		if err == nil {
			m.Close()
			t.Errorf("%+v: started", c.cfg)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.cfg, err, c.want)
		}
	}
}

func describe(fs []func() string) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f())
	}
	return out
}
