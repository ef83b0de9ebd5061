package node

import (
	"context"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"

	"github.com/lakestream/lakestream/auth"
	"github.com/lakestream/lakestream/catalog"
)

// The HTTP views of the node — the status page, /status.json and /metrics —
// show a user the tables it may SELECT, as a query would (docs/security.md,
// "HTTP"): a superuser, and the anonymous caller with authentication off,
// sees everything; another user sees the node-wide figures, and of the
// tables only its own.

// visibleTables reports which "table" label values (tableLabels) the
// caller of ctx may see, or nil when it sees every table. Every HTTP
// request carries an identity (secureHTTP); a context without one is the
// node's own (tests, the text status), which sees everything.
func (n *Node) visibleTables(ctx context.Context) func(label string) bool {
	id, ok := auth.FromContext(ctx)
	if !ok || id.Superuser {
		return nil
	}
	labels := n.tableLabels(ctx)
	see := make(map[string]bool, len(labels))
	check := func(tid int64, db, name string) {
		if l, ok := labels[tid]; ok && auth.Authorize(ctx, n.cat, catalog.PrivSelect, db, name) == nil {
			see[l] = true
		}
	}
	if defs, err := n.cat.AllTables(ctx); err == nil {
		for _, d := range defs {
			check(d.ID, d.DB, d.Name)
		}
	}
	if broken, err := n.cat.BrokenTables(ctx); err == nil {
		for _, b := range broken {
			check(b.ID, b.DB, b.Name)
		}
	}
	return func(label string) bool { return see[label] }
}

// filterStatus keeps what a user that sees only the tables see admits: the
// rows of those tables, the totals recounted over them, and none of what
// names the node's files (the data directory, directories without a table)
// or other users' calls (the recent errors, which carry their messages).
// The node-wide rates and memory stay.
func filterStatus(st *Status, see func(string) bool) {
	st.DataDir = ""
	st.Orphans = []string{}
	st.Errors = []StatusError{}
	st.Tables = keep(st.Tables, func(t StatusTable) string { return t.Name }, see)
	st.Lake = keep(st.Lake, func(b StatusLakeBucket) string { return b.Table }, see)
	st.Subscriptions = keep(st.Subscriptions, func(s StatusSubscription) string { return s.Table }, see)
	st.Quarantined = keep(st.Quarantined, func(q StatusQuarantined) string { return q.Table }, see)
	if st.Cluster != nil {
		st.Cluster.Buckets = keep(st.Cluster.Buckets, func(b StatusClusterBucket) string { return b.Table }, see)
	}
	st.Totals.Tables, st.Totals.Rows, st.Totals.DiskBytes, st.Totals.LakeBytes = len(st.Tables), 0, 0, 0
	for _, t := range st.Tables {
		st.Totals.Rows += t.Rows
		st.Totals.DiskBytes += t.DiskBytes
		st.Totals.LakeBytes += t.LakeBytes
	}
	st.Totals.Subscriptions = len(st.Subscriptions)
}

// keep is the items of xs whose table see admits.
func keep[T any](xs []T, table func(T) string, see func(string) bool) []T {
	out := make([]T, 0, len(xs))
	for _, x := range xs {
		if see(table(x)) {
			out = append(out, x)
		}
	}
	return out
}

// metricsHandler serves /metrics from reg: to a user that sees only some
// tables, without the series labelled with the others.
func (n *Node) metricsHandler(reg *prometheus.Registry, opts promhttp.HandlerOpts) http.Handler {
	all := promhttp.HandlerFor(reg, opts)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		see := n.visibleTables(r.Context())
		if see == nil {
			all.ServeHTTP(w, r)
			return
		}
		filtered := prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
			mfs, err := reg.Gather()
			out := mfs[:0]
			for _, mf := range mfs {
				mf.Metric = keep(mf.Metric, tableLabel, func(l string) bool { return l == "" || see(l) })
				if len(mf.Metric) > 0 {
					out = append(out, mf)
				}
			}
			return out, err
		})
		promhttp.HandlerFor(filtered, opts).ServeHTTP(w, r)
	})
}

// tableLabel is a series' "table" label, "" when it has none.
func tableLabel(m *dto.Metric) string {
	for _, lp := range m.GetLabel() {
		if lp.GetName() == "table" {
			return lp.GetValue()
		}
	}
	return ""
}
