// Package membership is the gossip layer of a Lakestream cluster: each
// node runs one Membership, which finds the other nodes (hashicorp's
// memberlist: SWIM failure detection, gossip over UDP with TCP push/pull),
// announces this node's id, Flight and HTTP addresses and rack, and tells
// which nodes are alive, suspect, dead or gone. Gossip carries liveness and
// addresses only, never decisions: who leads a bucket is decided elsewhere
// (docs/cluster.md). Placement (placement.go) is the pure function that
// maps a bucket and the live nodes to its replicas.
//
// membership imports no other Lakestream package.
package membership

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/memberlist"
)

// Config configures one node's membership.
type Config struct {
	// NodeID names the node in the cluster; unique, stable across
	// restarts. Required.
	NodeID string
	// Gossip is the address gossip binds to, host:port (UDP and TCP).
	// Required.
	Gossip string
	// Advertise is the gossip address other nodes reach this one at;
	// default Gossip (which must then not be a wildcard address).
	Advertise string
	// Join are gossip addresses of nodes already in the cluster; empty for
	// the first node. Start fails when none of them answers.
	Join []string
	// Flight and HTTP are the addresses this node serves clients on, as
	// other nodes and clients reach them; Rack is its rack (or zone)
	// label, which placement spreads replicas over. All optional.
	Flight, HTTP, Rack string
	// Key, when set, encrypts and authenticates gossip (AES-GCM) with a
	// shared 16, 24 or 32-byte key: a node without it cannot join or read
	// the traffic.
	Key []byte
	// Timing is the failure detector's: TimingLAN (default) or
	// TimingLocal (loopback clusters and tests). See docs/cluster.md.
	Timing Timing
	// OnChange, when set, is called (from memberlist's goroutines, one
	// call at a time) with each member whose state or meta changed.
	OnChange func(Member)
	Logger   *slog.Logger
}

// Timing names a failure-detection profile.
type Timing string

const (
	// TimingLAN is memberlist's LAN profile: a probe every 1 s (500 ms
	// timeout); a node that misses one is suspect, and dead when no one
	// refutes that within the suspicion timeout: 4 probe intervals ×
	// max(1, log10 N) at least, starting 6× higher and falling toward it as
	// other nodes confirm (so 4–24 s in a small cluster).
	TimingLAN Timing = "lan"
	// TimingLocal is for clusters on one host and tests: a probe every
	// 200 ms (100 ms timeout), suspicion 3 intervals at least (0.6–3.6 s).
	TimingLocal Timing = "local"
)

// State is a member's state as this node sees it.
type State string

const (
	Alive   State = "alive"   // answering probes
	Suspect State = "suspect" // a probe failed; others are asked to confirm
	Dead    State = "dead"    // declared failed
	Left    State = "left"    // left gracefully (Leave)
)

// Member is one node of the cluster.
type Member struct {
	ID     string `json:"id"`
	Gossip string `json:"gossip"`
	Flight string `json:"flight,omitempty"`
	HTTP   string `json:"http,omitempty"`
	Rack   string `json:"rack,omitempty"`
	State  State  `json:"state"`
	// Since is when this node saw the member enter State.
	Since time.Time `json:"since"`
}

// meta is what a node announces in its memberlist meta (at most 512 bytes).
type meta struct {
	V       int    `json:"v"`
	Leaving bool   `json:"l,omitempty"` // announced by Leave before it leaves
	Flight  string `json:"f,omitempty"`
	HTTP    string `json:"h,omitempty"`
	Rack    string `json:"r,omitempty"`
}

const metaVersion = 1

// Membership is a running node's view of the cluster.
type Membership struct {
	cfg  Config
	ml   *memberlist.Memberlist
	meta []byte

	probe time.Duration // memberlist's probe interval

	mu      sync.Mutex
	members map[string]Member // by id, every member ever seen
	leaving map[string]bool   // members that announced Leave
	acked   map[string]time.Time
	left    bool
}

// ErrConfig marks an invalid Config.
var ErrConfig = errors.New("membership: invalid configuration")

// Start starts gossip on cfg.Gossip and joins cfg.Join.
func Start(cfg Config) (*Membership, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	mc, err := cfg.memberlistConfig()
	if err != nil {
		return nil, err
	}
	m := &Membership{cfg: cfg, members: map[string]Member{}, leaving: map[string]bool{}, acked: map[string]time.Time{}, probe: mc.ProbeInterval}
	m.meta, err = json.Marshal(meta{V: metaVersion, Flight: cfg.Flight, HTTP: cfg.HTTP, Rack: cfg.Rack})
	if err != nil {
		return nil, err
	}
	if len(m.meta) > memberlist.MetaMaxSize {
		return nil, fmt.Errorf("%w: the node's addresses and rack take %d bytes, more than gossip's %d", ErrConfig, len(m.meta), memberlist.MetaMaxSize)
	}
	mc.Delegate = delegate{m}
	mc.Events = events{m}
	mc.Ping = pings{m}
	if m.ml, err = memberlist.Create(mc); err != nil {
		return nil, fmt.Errorf("membership: start gossip on %s: %w", cfg.Gossip, err)
	}
	if len(cfg.Join) > 0 {
		n, err := m.ml.Join(cfg.Join)
		if n == 0 {
			_ = m.ml.Shutdown()
			return nil, fmt.Errorf("membership: join %v: no node answered: %w", cfg.Join, err)
		}
		if err != nil {
			cfg.Logger.Warn("some join addresses did not answer", "joined", n, "error", err)
		}
	}
	return m, nil
}

func (c Config) memberlistConfig() (*memberlist.Config, error) {
	var errs []error
	if c.NodeID == "" {
		errs = append(errs, errors.New("a node id is required"))
	}
	host, port, err := splitHostPort(c.Gossip)
	if err != nil {
		errs = append(errs, fmt.Errorf("gossip address %q: %w", c.Gossip, err))
	}
	adv := c.Advertise
	if adv == "" {
		adv = c.Gossip
		if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
			errs = append(errs, fmt.Errorf("gossip address %q is a wildcard: set the advertised address", c.Gossip))
		}
	}
	advHost, advPort, err := splitHostPort(adv)
	if err != nil {
		errs = append(errs, fmt.Errorf("advertised address %q: %w", adv, err))
	}
	switch len(c.Key) {
	case 0, 16, 24, 32:
	default:
		errs = append(errs, fmt.Errorf("the gossip key is %d bytes; it must be 16, 24 or 32", len(c.Key)))
	}
	var mc *memberlist.Config
	switch c.Timing {
	case "", TimingLAN:
		mc = memberlist.DefaultLANConfig()
	case TimingLocal:
		mc = memberlist.DefaultLocalConfig()
		mc.ProbeInterval = 200 * time.Millisecond
		mc.ProbeTimeout = 100 * time.Millisecond
		mc.GossipInterval = 50 * time.Millisecond
		mc.PushPullInterval = 5 * time.Second
	default:
		errs = append(errs, fmt.Errorf("timing %q: want %q or %q", c.Timing, TimingLAN, TimingLocal))
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%w: %w", ErrConfig, errors.Join(errs...))
	}
	mc.Name = c.NodeID
	mc.BindAddr, mc.BindPort = host, port
	mc.AdvertiseAddr, mc.AdvertisePort = advHost, advPort
	if len(c.Key) > 0 {
		mc.SecretKey = slices.Clone(c.Key)
	}
	mc.Logger = log.New(&slogWriter{c.Logger}, "", 0)
	return mc, nil
}

func splitHostPort(addr string) (string, int, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("port %q", p)
	}
	if host == "" {
		host = "0.0.0.0"
	}
	return host, port, nil
}

// Members returns every member this node has seen, itself included, by id.
func (m *Membership) Members() []Member {
	m.poll()
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Member, 0, len(m.members)+1)
	for _, mb := range m.members {
		out = append(out, mb)
	}
	slices.SortFunc(out, func(a, b Member) int { return cmpString(a.ID, b.ID) })
	return out
}

// Live returns the members that are alive or suspect (a suspect node may
// still be serving: it is not yet declared failed), by id.
func (m *Membership) Live() []Member {
	var out []Member
	for _, mb := range m.Members() {
		if mb.State == Alive || mb.State == Suspect {
			out = append(out, mb)
		}
	}
	return out
}

// Self is this node's member.
func (m *Membership) Self() Member {
	m.poll()
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.members[m.cfg.NodeID]
}

// Leave tells the cluster this node is leaving — it announces so in its
// meta, so that the others mark it left rather than dead, then sends
// memberlist's leave — waiting up to timeout for each to spread, and stops
// gossip. SIGTERM leaves; kill -9 does not.
func (m *Membership) Leave(timeout time.Duration) error {
	m.mu.Lock()
	md, err := json.Marshal(meta{V: metaVersion, Leaving: true, Flight: m.cfg.Flight, HTTP: m.cfg.HTTP, Rack: m.cfg.Rack})
	if err == nil {
		m.meta = md
	}
	m.mu.Unlock()
	err = errors.Join(err, m.ml.UpdateNode(timeout))
	m.mu.Lock()
	m.left = true
	m.mu.Unlock()
	err = errors.Join(err, m.ml.Leave(timeout))
	return errors.Join(err, m.ml.Shutdown())
}

// Close stops gossip without leaving (the others will find this node
// dead): what a crash looks like.
func (m *Membership) Close() error { return m.ml.Shutdown() }

// refresh records n's state and meta; it reports the member when it
// changed.
func (m *Membership) refresh(n *memberlist.Node, st State) {
	mb := Member{ID: n.Name, Gossip: n.Address(), State: st}
	var md meta
	if len(n.Meta) > 0 {
		if err := json.Unmarshal(n.Meta, &md); err != nil {
			m.cfg.Logger.Warn("a member announces meta this node cannot read", "member", n.Name, "error", err)
		}
	}
	mb.Flight, mb.HTTP, mb.Rack = md.Flight, md.HTTP, md.Rack
	m.mu.Lock()
	if md.Leaving {
		m.leaving[n.Name] = true
	}
	if mb.State == Dead && m.leaving[n.Name] {
		mb.State = Left
	}
	old, seen := m.members[n.Name]
	if seen && old.State == mb.State {
		mb.Since = old.Since
	} else {
		mb.Since = time.Now()
	}
	changed := !seen || old.State != mb.State || old.Flight != mb.Flight || old.HTTP != mb.HTTP || old.Rack != mb.Rack || old.Gossip != mb.Gossip
	m.members[n.Name] = mb
	m.mu.Unlock()
	if changed {
		m.cfg.Logger.Info("cluster member", "member", mb.ID, "state", string(mb.State), "gossip", mb.Gossip, "flight", mb.Flight)
		if m.cfg.OnChange != nil {
			m.cfg.OnChange(mb)
		}
	}
}

// suspectAfter is how long without an acknowledged probe makes a member
// that memberlist still counts as alive suspect here: every member is
// probed once per round of probe intervals over the others, so a member
// whose acks stopped for two such rounds has missed its probes.
func (m *Membership) suspectAfter(n int) time.Duration {
	return 2 * time.Duration(max(n, 2)) * m.probe
}

type events struct{ m *Membership }

func (e events) NotifyJoin(n *memberlist.Node) {
	e.m.mu.Lock()
	e.m.acked[n.Name] = time.Now() // counts as heard from
	delete(e.m.leaving, n.Name)    // a node that left and came back
	e.m.mu.Unlock()
	e.m.refresh(n, Alive)
}
func (e events) NotifyUpdate(n *memberlist.Node) { e.m.refresh(n, e.m.liveState(n.Name, 0)) }

// NotifyLeave: memberlist does not say whether the node left or failed;
// a node that announced Leave (in its meta) left, any other died.
func (e events) NotifyLeave(n *memberlist.Node) { e.m.refresh(n, Dead) }

// liveState is Alive, or Suspect when the member's probes have gone
// unanswered (memberlist does not report suspicion itself).
func (m *Membership) liveState(id string, members int) State {
	if id == m.cfg.NodeID {
		return Alive
	}
	m.mu.Lock()
	last, ok := m.acked[id]
	m.mu.Unlock()
	if ok && time.Since(last) > m.suspectAfter(members) {
		return Suspect
	}
	return Alive
}

// pings records each member's last acknowledged probe.
type pings struct{ m *Membership }

func (p pings) AckPayload() []byte { return nil }
func (p pings) NotifyPingComplete(other *memberlist.Node, _ time.Duration, _ []byte) {
	p.m.mu.Lock()
	p.m.acked[other.Name] = time.Now()
	p.m.mu.Unlock()
}

// delegate announces the node's meta; Lakestream sends no user messages
// over gossip (decisions do not travel by gossip).
type delegate struct{ m *Membership }

func (d delegate) NodeMeta(limit int) []byte {
	d.m.mu.Lock()
	defer d.m.mu.Unlock()
	return d.m.meta
}
func (d delegate) NotifyMsg([]byte)                           {}
func (d delegate) GetBroadcasts(overhead, limit int) [][]byte { return nil }
func (d delegate) LocalState(join bool) []byte                { return nil }
func (d delegate) MergeRemoteState(buf []byte, join bool)     {}

// poll reads the states of the members memberlist knows as not dead:
// its events do not report a member becoming suspect (or alive again).
func (m *Membership) poll() {
	m.mu.Lock()
	left := m.left
	m.mu.Unlock()
	if left {
		return
	}
	// memberlist's Members returns its own nodes, which it changes under
	// a lock of its own: only their names (set once) are read here; the
	// addresses and meta come from its events, which it sends under that
	// lock.
	live := m.ml.Members()
	names := make([]string, len(live))
	for i, n := range live {
		names[i] = n.Name
	}
	for _, name := range names {
		m.setState(name, m.liveState(name, len(names)))
	}
}

// setState records a known member's state (alive or suspect, as poll
// finds it); it reports the member when its state changed.
func (m *Membership) setState(name string, st State) {
	m.mu.Lock()
	mb, seen := m.members[name]
	if !seen || mb.State == st {
		m.mu.Unlock() // unknown yet: its join event adds it
		return
	}
	mb.State, mb.Since = st, time.Now()
	m.members[name] = mb
	m.mu.Unlock()
	m.cfg.Logger.Info("cluster member", "member", mb.ID, "state", string(mb.State), "gossip", mb.Gossip, "flight", mb.Flight)
	if m.cfg.OnChange != nil {
		m.cfg.OnChange(mb)
	}
}

// slogWriter turns memberlist's log lines ("[WARN] memberlist: ...") into
// slog records of the matching level.
type slogWriter struct{ l *slog.Logger }

func (w *slogWriter) Write(p []byte) (int, error) {
	line := string(bytes.TrimSpace(p))
	level := slog.LevelInfo
	for prefix, lv := range map[string]slog.Level{"[DEBUG]": slog.LevelDebug, "[INFO]": slog.LevelDebug, "[WARN]": slog.LevelWarn, "[ERR]": slog.LevelError} {
		if len(line) >= len(prefix) && line[:len(prefix)] == prefix {
			level, line = lv, string(bytes.TrimSpace([]byte(line[len(prefix):])))
			break
		}
	}
	w.l.Log(nil, level, line, "component", "gossip")
	return len(p), nil
}

var _ io.Writer = (*slogWriter)(nil)

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
