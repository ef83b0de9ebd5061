package node

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/lakestream/lakestream/membership"
)

// ClusterConfig makes a node a member of a cluster (docs/cluster.md). The
// zero value is a single node: no gossip, nothing else started, the node
// exactly as without it.
type ClusterConfig struct {
	// NodeID names the node in the cluster: unique and stable across
	// restarts. Required with Gossip.
	NodeID string
	// Gossip is the address gossip binds to (UDP and TCP, host:port).
	// Empty: no cluster.
	Gossip string
	// GossipAdvertise is the gossip address other nodes reach this one at.
	// Default Gossip, which must then not be a wildcard address.
	GossipAdvertise string
	// Join are gossip addresses of members already running; empty for the
	// first node. Start fails when none of them answers.
	Join []string
	// Advertise is the Flight SQL address clients and other nodes reach
	// this node at, announced in gossip. Default Listen, which must then
	// not be a wildcard address.
	Advertise string
	// Rack is the node's rack (or zone) label, over which placement
	// spreads a bucket's replicas. Default none.
	Rack string
	// GossipKeyFile holds the shared key that encrypts and authenticates
	// gossip: 16, 24 or 32 bytes, written in hex or base64. Every member
	// needs the same key. Default: gossip in the clear, which a node off
	// loopback should not use.
	GossipKeyFile string
	// TLSCert, TLSKey and TLSCA make node-to-node calls mutual TLS
	// (docs/security.md, "Between nodes"): the node's certificate, issued
	// by the cluster CA with the node id as its subject common name, its
	// key, and the cluster CA, which must issue node certificates only.
	// All three or none; read again when they change. With them the
	// node-to-node services accept only other nodes, by certificate, and
	// authentication may be on. Default: none, node-to-node calls in the
	// clear, which a node with authentication on refuses.
	TLSCert, TLSKey, TLSCA string
	// GossipTiming is the failure detector's profile: "lan" (default; a
	// member that stops answering is dead within 4–24 s) or "local" (one
	// host, tests: 0.6–3.6 s). See docs/cluster.md.
	GossipTiming string
	// Meta is the metadata store that holds each bucket's replicas,
	// leader, leader epoch and in-sync set: a postgres:// URL that every
	// node of the cluster reaches, or sqlite://FILE. Default: the file
	// cluster.db in the data directory, which only a cluster of one node
	// can use.
	Meta string
	// FollowerReads makes this node plan the reads of every bucket it
	// holds in sync (scans and changes() endpoints) here, not on the
	// bucket's leader: the reads spread over the replicas, and a
	// subscription outlives its bucket's leader. A follower serves rows
	// up to its high watermark, which may trail the leader's by a fetch.
	// Default false: endpoints are located at the leaders
	// (docs/flight.md, "Endpoints in a cluster").
	FollowerReads bool
	// Dial opens the connections this node makes to other nodes'
	// replication services (its followers' fetches from their leaders),
	// given the address the other node advertises. Default: a TCP dial.
	// The cluster fault tests route each link through a proxy that can
	// cut it (tests/clustertest, docs/cluster.md).
	Dial func(ctx context.Context, addr string) (net.Conn, error)
	// LeaveTimeout bounds the graceful leave at shutdown: the node
	// announces that it leaves and waits this long for the others to
	// hear it. Default 5s.
	LeaveTimeout time.Duration
	// DrainTimeout bounds the hand-off at a graceful stop: the node asks
	// the controller to move the leadership of every bucket it leads to
	// an in-sync replica and waits this long for it (docs/cluster.md).
	// Default 10s.
	DrainTimeout time.Duration
}

// enabled says whether the node joins a cluster.
func (c ClusterConfig) enabled() bool { return c.Gossip != "" }

func (c *ClusterConfig) ensureDefaults() {
	if c.GossipTiming == "" {
		c.GossipTiming = string(membership.TimingLAN)
	}
	if c.LeaveTimeout == 0 {
		c.LeaveTimeout = 5 * time.Second
	}
	if c.DrainTimeout == 0 {
		c.DrainTimeout = 10 * time.Second
	}
}

// validate reports every problem of the cluster settings; listen is the
// node's Flight address, the default of Advertise.
func (c ClusterConfig) validate(listen string) []error {
	if !c.enabled() {
		var errs []error
		for flag, v := range map[string]string{"node-id": c.NodeID, "gossip-advertise": c.GossipAdvertise, "advertise": c.Advertise,
			"rack": c.Rack, "gossip-key-file": c.GossipKeyFile, "meta": c.Meta,
			"cluster-tls-cert": c.TLSCert, "cluster-tls-key": c.TLSKey, "cluster-tls-ca": c.TLSCA} {
			if v != "" {
				errs = append(errs, fmt.Errorf("%s is set but gossip is not: a cluster node needs --gossip", flag))
			}
		}
		if len(c.Join) > 0 {
			errs = append(errs, errors.New("join is set but gossip is not: a cluster node needs --gossip"))
		}
		return errs
	}
	var errs []error
	if c.NodeID == "" {
		errs = append(errs, errors.New("node id: a cluster node needs --node-id"))
	} else if len(c.NodeID) > 64 || strings.ContainsAny(c.NodeID, " \t\n/,") {
		errs = append(errs, fmt.Errorf("node id %q: at most 64 characters, without spaces, commas or slashes", c.NodeID))
	}
	if _, err := c.advertise(listen); err != nil {
		errs = append(errs, err)
	}
	switch membership.Timing(c.GossipTiming) {
	case membership.TimingLAN, membership.TimingLocal:
	default:
		errs = append(errs, fmt.Errorf("gossip timing %q: want %s or %s", c.GossipTiming, membership.TimingLAN, membership.TimingLocal))
	}
	if c.GossipKeyFile != "" {
		if _, err := c.gossipKey(); err != nil {
			errs = append(errs, err)
		}
	}
	if set := btoi(c.TLSCert != "") + btoi(c.TLSKey != "") + btoi(c.TLSCA != ""); set != 0 && set != 3 {
		errs = append(errs, errors.New("cluster tls: give all of --cluster-tls-cert, --cluster-tls-key and --cluster-tls-ca, or none"))
	}
	if m := c.Meta; m != "" && !strings.HasPrefix(m, "postgres://") && !strings.HasPrefix(m, "postgresql://") && !strings.HasPrefix(m, "sqlite://") {
		errs = append(errs, fmt.Errorf("meta %q: want postgres://… (shared by the cluster's nodes) or sqlite://FILE", m))
	}
	if c.DrainTimeout < 0 {
		errs = append(errs, fmt.Errorf("drain timeout %s: want a positive duration", c.DrainTimeout))
	}
	if c.LeaveTimeout < 0 {
		errs = append(errs, fmt.Errorf("leave timeout %s: want a positive duration", c.LeaveTimeout))
	}
	return errs
}

// tls says whether node-to-node calls run over mutual TLS.
func (c ClusterConfig) tls() bool { return c.TLSCert != "" }

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// advertise is the Flight address announced to the cluster.
func (c ClusterConfig) advertise(listen string) (string, error) {
	addr := c.Advertise
	if addr == "" {
		addr = listen
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("advertised address %q: %v", addr, err)
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		return "", fmt.Errorf("advertised address %q is a wildcard: set --advertise to the address other nodes and clients reach this node at", addr)
	}
	return addr, nil
}

// gossipKey reads the gossip key file: hex or base64 of 16, 24 or 32 bytes.
func (c ClusterConfig) gossipKey() ([]byte, error) {
	raw, err := os.ReadFile(c.GossipKeyFile)
	if err != nil {
		return nil, fmt.Errorf("gossip key: %w", err)
	}
	s := strings.TrimSpace(string(raw))
	for _, dec := range []func(string) ([]byte, error){hex.DecodeString, base64.StdEncoding.DecodeString} {
		if k, err := dec(s); err == nil {
			switch len(k) {
			case 16, 24, 32:
				return k, nil
			}
		}
	}
	return nil, fmt.Errorf("gossip key file %s: want 16, 24 or 32 bytes written in hex or base64", c.GossipKeyFile)
}

// startMembership starts gossip: the node announces its id, its Flight and
// HTTP addresses and its rack, and joins the cluster.
func (n *Node) startMembership() error {
	c := n.cfg.Cluster
	if !c.enabled() {
		return nil
	}
	flightAddr, err := c.advertise(n.Addr())
	if err != nil {
		return err
	}
	var key []byte
	if c.GossipKeyFile != "" {
		if key, err = c.gossipKey(); err != nil {
			return err
		}
	}
	httpAddr := ""
	if n.httpL != nil {
		httpAddr = n.HTTPAddr()
	}
	m, err := membership.Start(membership.Config{
		NodeID:    c.NodeID,
		Gossip:    c.Gossip,
		Advertise: c.GossipAdvertise,
		Join:      c.Join,
		Flight:    flightAddr,
		HTTP:      httpAddr,
		Rack:      c.Rack,
		Key:       key,
		Timing:    membership.Timing(c.GossipTiming),
		Logger:    n.cfg.Logger,
	})
	if err != nil {
		return err
	}
	n.members.Store(m)
	n.cfg.Logger.Info("joined the cluster", "node_id", c.NodeID, "gossip", c.Gossip, "members", len(m.Live()))
	return nil
}

// leaveCluster announces that the node leaves, so the others see it left
// rather than failed, and stops gossip.
func (n *Node) leaveCluster() error {
	m := n.members.Swap(nil)
	if m == nil {
		return nil
	}
	err := m.Leave(n.cfg.Cluster.LeaveTimeout) // stops gossip too
	if err != nil {
		n.cfg.Logger.Warn("leaving the cluster", "error", err)
	}
	return err
}

// Members is the node's view of the cluster, nil on a single node.
func (n *Node) Members() *membership.Membership { return n.members.Load() }
