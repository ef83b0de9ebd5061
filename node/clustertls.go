package node

import (
	"context"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/peer"

	"github.com/lakestream/lakestream/auth"
	"github.com/lakestream/lakestream/cluster"
)

// Node-to-node calls (replication, and every other service named
// lakestream.* on the Flight port) run over mutual TLS when the cluster's
// certificates are configured (docs/security.md, "Between nodes"): a node
// dials with its node certificate and checks the peer's against the
// cluster CA; the listener serves the node certificate to a handshake
// that names auth.ClusterServerName and requires the caller's; the Flight
// interceptor then lets only such callers, as nodes, call those services
// (flightsrv.Options.Nodes), whatever user credentials a call carries.

// openClusterTLS loads the node's certificate and the cluster CA. The
// certificate must name this node: a node presenting another's could
// fetch as that node's replica.
func (n *Node) openClusterTLS() error {
	c := n.cfg.Cluster
	if !c.tls() {
		return nil
	}
	ct, err := auth.NewClusterTLS(c.TLSCert, c.TLSKey, c.TLSCA, n.cfg.Logger)
	if err != nil {
		return err
	}
	if got := ct.NodeID(); got != c.NodeID {
		return fmt.Errorf("cluster tls: certificate %s names node %q (its subject common name), this node is %q (--node-id): each node needs a certificate of its own id", c.TLSCert, got, c.NodeID)
	}
	n.sec.cluster = ct
	return nil
}

// clusterDialOptions are how the node reaches other nodes: over
// ClusterConfig.Dial when set (the fault tests' proxies wrap the TCP
// connection, TLS runs through them), with the node certificate when the
// cluster has them.
func (n *Node) clusterDialOptions() []grpc.DialOption {
	creds := insecure.NewCredentials()
	if n.sec.cluster != nil {
		creds = credentials.NewTLS(n.sec.cluster.ClientConfig())
	}
	opts := []grpc.DialOption{grpc.WithTransportCredentials(creds)}
	if d := n.cfg.Cluster.Dial; d != nil {
		opts = append(opts, grpc.WithContextDialer(d))
	}
	return opts
}

// nodeAuthenticator is flightsrv.Options.Nodes: nil without cluster TLS
// (node-to-node calls then need a superuser, which with authentication
// off every caller is).
func (n *Node) nodeAuthenticator() func(context.Context) (context.Context, error) {
	if n.sec.cluster == nil {
		return nil
	}
	return authenticateNode
}

// authenticateNode gives a node-to-node call the identity of the node
// whose certificate its connection presented, or refuses it.
func authenticateNode(ctx context.Context) (context.Context, error) {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return ctx, fmt.Errorf("%w: no peer", auth.ErrUnauthenticated)
	}
	info, ok := p.AuthInfo.(credentials.TLSInfo)
	if !ok {
		return ctx, fmt.Errorf("%w: only another node of the cluster may call the node-to-node services, over mutual TLS", auth.ErrUnauthenticated)
	}
	id, err := auth.NodeOf(info.State)
	if err != nil {
		return ctx, err
	}
	ctx = auth.WithIdentity(ctx, auth.NodeIdentity(id))
	return cluster.WithPeerNode(ctx, id), nil
}
