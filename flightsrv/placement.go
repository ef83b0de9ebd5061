package flightsrv

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow/flight"

	"github.com/lakestream/lakestream/tables"
)

// In a cluster each bucket is read on a node that holds it, and the
// endpoints of a plan say which (docs/flight.md, "Endpoints in a
// cluster"): a plain scan and a subscription get, beside the parts this
// node serves itself, endpoints for each other serving node (their share
// of the plan's endpoints), located at its Flight address. An endpoint served elsewhere cannot pin its log range
// here (this node may hold no replica of the bucket), so its ticket names
// the buckets and the node that serves it captures them at DoGet; the
// ticket is signed with the cluster's shared key, so it is valid on every
// node that holds the buckets, and any other node refuses it with
// Unavailable naming the one to go to (errElsewhere).

// Placement says where a cluster's buckets are read; nil on a single
// node, where every bucket is read here and endpoints carry no location.
type Placement interface {
	// ReadFrom returns, for each of a table's buckets, the node that serves
	// its reads in plans made here: this node when it leads the bucket (or,
	// with follower reads, holds it in sync), else the bucket's leader. A
	// bucket without a leader has a Location without a URI.
	ReadFrom(ctx context.Context, tableID int64, buckets int) ([]Location, error)
	// ReadHere reports whether this node can serve reads of bucket b (it
	// holds an in-sync replica of it); when it cannot, serving is the node
	// that can. The error is that of finding it (the metadata store's).
	ReadHere(ctx context.Context, tableID int64, b int) (serving Location, ok bool, err error)
	// Self is this node's location.
	Self() Location
}

// Location is a node that serves reads.
type Location struct {
	Node string // node id
	// URI is the node's Flight location ("grpc+tcp://host:port", or
	// grpc+tls with TLS on); "" when no node serves the bucket now.
	URI  string
	Self bool
}

// errElsewhere refuses the DoGet of a ticket whose buckets this node does
// not hold (Unavailable): the message names the node that does.
var errElsewhere = errors.New("not held in sync by this node")

// elsewhere is the redirect of bucket b of t to the node that serves it.
func elsewhere(t *tables.Table, b int, to Location) error {
	if to.URI == "" {
		return fmt.Errorf("%w: bucket %d of %s has no leader now (no in-sync replica is alive): retry", tables.ErrReplicaUnavailable, b, t.Name())
	}
	return fmt.Errorf("bucket %d of %s is %w: read it from node %s at %s", b, t.Name(), errElsewhere, to.Node, to.URI)
}

// checkHere refuses, with the node to go to, a bucket this node cannot
// read; on a single node every bucket is read here.
func (s *Server) checkHere(ctx context.Context, t *tables.Table, buckets []int) error {
	if s.opts.Placement == nil {
		return nil
	}
	for _, b := range buckets {
		to, ok, err := s.opts.Placement.ReadHere(ctx, t.Def().ID, b)
		if err != nil {
			return err
		}
		if !ok {
			return elsewhere(t, b, to)
		}
	}
	return nil
}

// locate adds loc to ep; a single node's endpoints carry none.
func locate(ep *flight.FlightEndpoint, loc Location) *flight.FlightEndpoint {
	if loc.URI != "" {
		ep.Location = []*flight.Location{{Uri: loc.URI}}
	}
	return ep
}

// ticketBuckets are the buckets a scan or changes ticket reads (those out
// of range are refused as the ticket is read).
func ticketBuckets(t *tables.Table, tk *ticket) []int {
	out := slices.Clone(tk.Buckets)
	for _, r := range tk.Ranges {
		out = append(out, r.Bucket)
	}
	if tk.State {
		for b := range t.Log().Buckets() {
			out = append(out, b)
		}
	}
	return out
}

// locateHere locates ep at this node in a cluster, where a client may
// hold several nodes' endpoints; a single node's carry no location.
func (s *Server) locateHere(ep *flight.FlightEndpoint) *flight.FlightEndpoint {
	if s.opts.Placement == nil {
		return ep
	}
	return locate(ep, s.opts.Placement.Self())
}

// remoteGroup is the buckets one other node serves.
type remoteGroup struct {
	at      Location
	buckets []int
}

// splitByNode sorts a table's buckets into those this node serves and
// groups for the other nodes, in the order of their first bucket. A
// bucket without a leader fails the plan with Unavailable.
func splitByNode(t *tables.Table, locs []Location) (here []int, there []remoteGroup, err error) {
	idx := map[string]int{}
	for b, loc := range locs {
		switch {
		case loc.URI == "":
			return nil, nil, elsewhere(t, b, loc)
		case loc.Self:
			here = append(here, b)
		default:
			i, ok := idx[loc.Node]
			if !ok {
				i = len(there)
				idx[loc.Node] = i
				there = append(there, remoteGroup{at: loc})
			}
			there[i].buckets = append(there[i].buckets, b)
		}
	}
	return here, there, nil
}

// clusterScanInfo adds to info the endpoints of a plain scan of a table
// layer in a cluster: the parts of the capture v of the buckets this node
// serves, grouped as on a single node, and one endpoint per other serving
// node. It reports false when every bucket is served here (the plan is
// then a single node's, each endpoint located here).
func (s *Server) clusterScanInfo(ctx context.Context, r *plainScan, v *tables.View, files []tables.LakeFile, info *flight.FlightInfo) (bool, error) {
	p := s.opts.Placement
	locs, err := p.ReadFrom(ctx, r.def.ID, r.t.Log().Buckets())
	if err != nil {
		return false, err
	}
	here, there, err := splitByNode(r.t, locs)
	if err != nil || len(there) == 0 {
		return false, err
	}
	var paths []string
	if len(files) > 0 {
		// Each node tiers its replicas into a lake of its own, whose
		// files are not cut by bucket: they go with the buckets served
		// here when they hold rows of no other bucket; else a node
		// holding every bucket in sync serves the scan alone.
		if !lakeOnly(v, here) {
			for b := range locs {
				_, ok, err := p.ReadHere(ctx, r.def.ID, b)
				if err != nil {
					return false, err
				}
				if !ok {
					return false, fmt.Errorf("%w: %s has rows of buckets served by other nodes tiered into this node's lake: plan the scan on a node that holds every bucket, or read it with a query", errSpread, r.def.FullName())
				}
			}
			return false, nil
		}
		for _, f := range files {
			paths = append(paths, f.Path)
		}
	}
	var ranges []tables.Range
	for _, rg := range v.Ranges {
		if slices.Contains(here, rg.Bucket) {
			ranges = append(ranges, rg)
		}
	}
	// Each node's buckets get their share of MaxEndpoints, so a client
	// reads with the parallelism of a single node's plan.
	self, total := p.Self(), len(locs)
	for _, g := range endpointGroups(files, ranges, endpointShare(len(here), total, s.opts.MaxEndpoints)) { // queryplan.go
		tk := &ticket{Kind: "scan", Table: r.def.ID, Schema: r.def.SchemaID, Cols: r.cols, Files: g.files, Ranges: g.ranges}
		if len(g.files) > 0 {
			tk.Snapshot = v.Lake.ID
		}
		ep, err := s.endpoint(ctx, tk)
		if err != nil {
			return false, err
		}
		info.Endpoint = append(info.Endpoint, locate(ep, self))
	}
	for _, g := range there {
		parts := roundRobin(g.buckets, endpointShare(len(g.buckets), total, s.opts.MaxEndpoints))
		for _, buckets := range parts {
			tk := &ticket{Kind: "scan", Table: r.def.ID, Schema: r.def.SchemaID, Cols: r.cols, Buckets: buckets}
			if len(parts) > 1 {
				tk.Group = g.buckets
			}
			ep, err := s.endpoint(ctx, tk)
			if err != nil {
				return false, err
			}
			info.Endpoint = append(info.Endpoint, locate(ep, g.at))
		}
	}
	info.TotalRecords = -1 // the other nodes' rows are counted at DoGet
	return true, nil
}

// endpointShare is the endpoints of n of total buckets when a plan has at most
// limit: at least one, at most n.
func endpointShare(n, total, limit int) int {
	return min(n, max(1, limit*n/total))
}

// roundRobin splits buckets into k groups, round robin.
func roundRobin(buckets []int, k int) [][]int {
	out := make([][]int, k)
	for i, b := range buckets {
		out[i%k] = append(out[i%k], b)
	}
	return out
}

// errSpread refuses a plan that no one node can serve (FailedPrecondition).
var errSpread = errors.New("the table's parts are spread over nodes")

// lakeOnly says whether the lake rows of capture v are all of buckets:
// every other bucket's tiered offset is 0.
func lakeOnly(v *tables.View, buckets []int) bool {
	for b, o := range v.Lake.Offsets {
		if o > 0 && !slices.Contains(buckets, b) {
			return false
		}
	}
	return true
}

// bucketCapture is what DoGet of a ticket naming buckets reads, captured
// now: the buckets' log ranges, and the node's lake files when they hold
// rows of the ticket's group alone (the part holding the group's first
// bucket reads them). A node's lake holds the rows it tiered of every
// bucket it holds, and its files are not cut by bucket: a lake with rows
// of other buckets is refused.
type bucketCapture struct {
	snapshot int64
	files    []string
	ranges   []tables.Range
}

func captureBuckets(ctx context.Context, t *tables.Table, tk *ticket) (*bucketCapture, error) {
	v, err := t.Capture(ctx, tables.LayerTable)
	if err != nil {
		return nil, err
	}
	files, err := v.Files(ctx)
	if err != nil {
		return nil, err
	}
	out := &bucketCapture{}
	group := tk.Group
	if len(group) == 0 {
		group = tk.Buckets
	}
	if len(files) > 0 {
		if !lakeOnly(v, group) {
			return nil, fmt.Errorf("%w: %s has rows of buckets this node does not serve in the plan tiered into its lake: plan the scan on a node that holds every bucket, or read it with a query", errSpread, t.Def().FullName())
		}
		if slices.Contains(tk.Buckets, slices.Min(group)) {
			out.snapshot = v.Lake.ID
			for _, f := range files {
				out.files = append(out.files, f.Path)
			}
		}
	}
	for _, rg := range v.Ranges {
		if slices.Contains(tk.Buckets, rg.Bucket) {
			out.ranges = append(out.ranges, rg)
		}
	}
	return out, nil
}
