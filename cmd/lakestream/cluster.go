package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc"

	"github.com/lakestream/lakestream/cluster/meta"
	"github.com/lakestream/lakestream/node"
)

// runCluster runs a `lakestream cluster` subcommand (docs/cluster.md,
// "Operations"):
//
//	status                 members, buckets, leaders, in-sync sets, lag — read over Flight SQL from any node
//	decommission NODE-ID   move the node's replicas to other nodes (writes the metadata store)
//	recommission NODE-ID   take the decommission mark off
func runCluster(ctx context.Context, args []string, out io.Writer) error {
	if len(args) == 0 {
		return errors.New("cluster: want a subcommand: status, decommission NODE-ID or recommission NODE-ID")
	}
	switch args[0] {
	case "status":
		return runClusterStatus(ctx, args[1:], out)
	case "decommission":
		return runDecommission(ctx, args[1:], out)
	case "recommission":
		return runRecommission(ctx, args[1:], out)
	}
	return fmt.Errorf("cluster: unknown subcommand %q (want status, decommission or recommission)", args[0])
}

// runClusterStatus prints the cluster as one node sees it: its members
// (lakestream.nodes) and every bucket (lakestream.buckets), with each
// follower's lag behind its leader, read from each live member's own
// lakestream.buckets.
func runClusterStatus(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("cluster status", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:31337", "Flight SQL address of any node of the cluster")
	cf := bindClientFlags(fs)
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return fmt.Errorf("cluster status: unexpected argument %q", pos[0])
	}
	if err := cf.load(os.LookupEnv); err != nil {
		return fmt.Errorf("cluster status: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	q := &querier{cf: cf}
	defer q.close()
	members, err := q.rows(ctx, *addr, "SELECT coalesce(node_id, ''), state, coalesce(flight_addr, ''), coalesce(rack, '') FROM lakestream.nodes ORDER BY 1")
	if err != nil {
		return fmt.Errorf("cluster status: %w", err)
	}
	buckets, err := q.rows(ctx, *addr, `SELECT coalesce(table_name, '#' || table_id), table_id, bucket, coalesce(leader, ''), leader_epoch,
		array_to_string(replicas, ','), array_to_string(isr, ','), under_replicated FROM lakestream.buckets ORDER BY table_id, bucket`)
	if err != nil {
		return fmt.Errorf("cluster status: %w", err)
	}
	st := clusterStatus{ends: map[string]map[string]int64{}}
	for _, m := range members {
		st.members = append(st.members, memberRow{id: m[0], state: m[1], addr: m[2], rack: m[3]})
		if m[1] != "alive" && m[1] != "suspect" || m[2] == "" {
			continue
		}
		local, err := q.rows(ctx, m[2], "SELECT table_id, bucket, local_log_end FROM lakestream.buckets WHERE local_log_end IS NOT NULL")
		if err != nil {
			st.unreachable = append(st.unreachable, fmt.Sprintf("%s: %v", m[0], err))
			continue
		}
		for _, l := range local {
			end, _ := strconv.ParseInt(l[2], 10, 64)
			k := l[0] + "/" + l[1]
			if st.ends[k] == nil {
				st.ends[k] = map[string]int64{}
			}
			st.ends[k][m[0]] = end
		}
	}
	for _, b := range buckets {
		epoch, _ := strconv.Atoi(b[4])
		st.buckets = append(st.buckets, bucketRow{table: b[0], key: b[1] + "/" + b[2], bucket: b[2], leader: b[3], epoch: epoch,
			replicas: split(b[5]), isr: split(b[6]), under: b[7] == "true"})
	}
	st.print(out)
	return nil
}

func split(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// querier runs queries on several nodes, one client each.
type querier struct {
	cf      *clientFlags
	clients map[string]*flightsql.Client
}

func (q *querier) close() {
	for _, c := range q.clients {
		c.Close()
	}
}

// rows runs sql on the node at addr and returns every row's cells as text.
func (q *querier) rows(ctx context.Context, addr, sql string) ([][]string, error) {
	cl, ok := q.clients[addr]
	if !ok {
		creds, err := q.cf.grpcCreds()
		if err != nil {
			return nil, err
		}
		if cl, err = flightsql.NewClient(addr, nil, nil, creds, grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64<<20))); err != nil {
			return nil, err
		}
		if q.clients == nil {
			q.clients = map[string]*flightsql.Client{}
		}
		q.clients[addr] = cl
	}
	ctx, err := q.cf.authenticate(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", addr, err)
	}
	info, err := cl.Execute(ctx, sql)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", addr, err)
	}
	var out [][]string
	for _, ep := range info.Endpoint {
		rdr, err := cl.DoGet(ctx, ep.Ticket)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", addr, err)
		}
		for rdr.Next() {
			r := rdr.RecordBatch()
			for i := 0; i < int(r.NumRows()); i++ {
				row := make([]string, r.NumCols())
				for c := range row {
					row[c] = cell(r.Column(c), i)
				}
				out = append(out, row)
			}
		}
		err = rdr.Err()
		rdr.Release()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", addr, err)
		}
	}
	return out, nil
}

type memberRow struct{ id, state, addr, rack string }

type bucketRow struct {
	table, key, bucket, leader string
	epoch                      int
	replicas, isr              []string
	under                      bool
}

// clusterStatus is what `cluster status` prints.
type clusterStatus struct {
	members     []memberRow
	buckets     []bucketRow
	ends        map[string]map[string]int64 // by "table_id/bucket", by node: the replica's log end
	unreachable []string
}

// lag is each replica's lag behind the leader's log end, in offsets
// (rows): "?" for a replica whose node did not answer.
func (s clusterStatus) lag(b bucketRow) string {
	ends := s.ends[b.key]
	lead, ok := ends[b.leader]
	if b.leader == "" || !ok {
		return "?"
	}
	var parts []string
	for _, id := range b.replicas {
		if id == b.leader {
			continue
		}
		if end, ok := ends[id]; ok {
			parts = append(parts, fmt.Sprintf("%s:%d", id, max(0, lead-end)))
		} else {
			parts = append(parts, id+":?")
		}
	}
	return strings.Join(parts, " ")
}

func (s clusterStatus) print(out io.Writer) {
	fmt.Fprintf(out, "members (%d)\n", len(s.members))
	rows := make([][]string, 0, len(s.members))
	for _, m := range s.members {
		rows = append(rows, []string{m.id, m.state, m.addr, m.rack})
	}
	printTable(out, []string{"node_id", "state", "flight_addr", "rack"}, rows)
	under, offline := 0, 0
	rows = rows[:0]
	for _, b := range s.buckets {
		flag := ""
		switch {
		case b.leader == "":
			offline++
			flag = "OFFLINE"
		case b.under:
			under++
			flag = "under-replicated"
		}
		leader := b.leader
		if leader == "" {
			leader = "-"
		}
		rows = append(rows, []string{b.table, b.bucket, leader, strconv.Itoa(b.epoch), strings.Join(b.replicas, ","), strings.Join(b.isr, ","), s.lag(b), flag})
	}
	fmt.Fprintf(out, "\nbuckets (%d; %d under-replicated, %d offline)\n", len(s.buckets), under, offline)
	printTable(out, []string{"table", "bucket", "leader", "epoch", "replicas", "isr", "lag (rows)", "note"}, rows)
	for _, u := range s.unreachable {
		fmt.Fprintf(out, "not reached: %s\n", u)
	}
}

// openMeta opens the metadata store that decommission and recommission
// write.
func openMeta(ctx context.Context, uri string) (meta.Store, error) {
	switch {
	case uri == "":
		return nil, errors.New("--meta is required: the cluster's metadata store, as the nodes' --meta (postgres://…)")
	case strings.HasPrefix(uri, "postgres://"), strings.HasPrefix(uri, "postgresql://"):
		return meta.OpenPostgres(ctx, uri)
	case strings.HasPrefix(uri, "sqlite://"):
		return meta.OpenSQLite(strings.TrimPrefix(uri, "sqlite://"))
	}
	return nil, fmt.Errorf("--meta %q: want postgres://… or sqlite://…", uri)
}

// runDecommission marks a node decommissioned in the metadata store and
// reports, until it holds no replica, how many it still holds: the
// controller moves them (cluster.Reassign) and hands its leaderships off.
func runDecommission(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("cluster decommission", flag.ContinueOnError)
	uri := fs.String("meta", os.Getenv("LAKESTREAM_META"), "the cluster's metadata store, as the nodes' --meta (or $LAKESTREAM_META)")
	wait := fs.Duration("wait", 30*time.Minute, "how long to wait for the replicas to move; 0: mark the node and return")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 || pos[0] == "" {
		return errors.New("cluster decommission: want one node id")
	}
	id := pos[0]
	store, err := openMeta(ctx, *uri)
	if err != nil {
		return fmt.Errorf("cluster decommission: %w", err)
	}
	defer store.Close()
	if _, err := store.AcquireLease(ctx, node.DecommissionLease(id), id, node.DecommissionTTL); err != nil {
		return fmt.Errorf("cluster decommission %s: mark the node: %w", id, err)
	}
	fmt.Fprintf(out, "node %s marked decommissioned: its replicas move to other nodes\n", id)
	if *wait == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, *wait)
	defer cancel()
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	last := ""
	for {
		held, led, err := holdings(ctx, store, id)
		if err == nil {
			if held == 0 {
				fmt.Fprintf(out, "node %s holds no replica: it can be stopped\n", id)
				return nil
			}
			if line := fmt.Sprintf("node %s: %d replicas left, leading %d", id, held, led); line != last {
				fmt.Fprintln(out, line)
				last = line
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster decommission %s: %s after %s (is there a live node to move them to? a bucket keeps bucket.replicas replicas): %w", id, last, *wait, ctx.Err())
		case <-tick.C:
		}
	}
}

// holdings counts the buckets that hold a replica on node id, and those it
// leads.
func holdings(ctx context.Context, store meta.Store, id string) (held, led int, err error) {
	all, err := store.AllBuckets(ctx)
	if err != nil {
		return 0, 0, err
	}
	for _, b := range all {
		for _, r := range b.Replicas {
			if r == id {
				held++
			}
		}
		if b.Leader == id {
			led++
		}
	}
	return held, led, nil
}

// runRecommission takes a node's decommission mark off: placement may put
// replicas on it again, and it may lead again.
func runRecommission(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("cluster recommission", flag.ContinueOnError)
	uri := fs.String("meta", os.Getenv("LAKESTREAM_META"), "the cluster's metadata store, as the nodes' --meta (or $LAKESTREAM_META)")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 || pos[0] == "" {
		return errors.New("cluster recommission: want one node id")
	}
	store, err := openMeta(ctx, *uri)
	if err != nil {
		return fmt.Errorf("cluster recommission: %w", err)
	}
	defer store.Close()
	l, err := store.Lease(ctx, node.DecommissionLease(pos[0]))
	if errors.Is(err, meta.ErrNotFound) {
		return fmt.Errorf("cluster recommission: node %s is not decommissioned", pos[0])
	}
	if err == nil {
		err = store.ReleaseLease(ctx, l)
	}
	if err != nil {
		return fmt.Errorf("cluster recommission %s: %w", pos[0], err)
	}
	fmt.Fprintf(out, "node %s is no longer decommissioned\n", pos[0])
	return nil
}
