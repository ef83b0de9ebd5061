package node

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lakestream/lakestream/tiering"
)

var (
	descSubs         = prometheus.NewDesc("lakestream_subscriptions", "Change streams (subscriptions) being served, by table.", []string{"table"}, nil)
	descSubLag       = prometheus.NewDesc("lakestream_subscription_lag_rows", "Rows committed to the table and not yet read by its most lagging subscription.", []string{"table"}, nil)
	descPrepared     = prometheus.NewDesc("lakestream_prepared_statements", "Prepared statements open (they expire after 10 minutes idle).", nil, nil)
	descTableRows    = prometheus.NewDesc("lakestream_table_rows", "Rows committed to the table's log since it was created (the sum of its buckets' committed offsets).", []string{"table"}, nil)
	descTableDisk    = prometheus.NewDesc("lakestream_table_disk_bytes", "Bytes of the table's log segments on local disk.", []string{"table"}, nil)
	descTableLake    = prometheus.NewDesc("lakestream_table_lake_bytes", "Bytes of the data files of the table's current lake (Iceberg) snapshot.", []string{"table"}, nil)
	descEngineLimit  = prometheus.NewDesc("lakestream_engine_memory_limit_bytes", "Memory limit of the query engine (DuckDB's memory_limit, --engine-memory).", nil, nil)
	descEngineUsed   = prometheus.NewDesc("lakestream_engine_memory_used_bytes", "Memory the query engine holds now (DuckDB's buffer manager: intermediates, hash tables, caches).", nil, nil)
	descCacheLimit   = prometheus.NewDesc("lakestream_cache_limit_bytes", "Size limit of the decoded-column cache (--cache); 0 when it is off.", nil, nil)
	descUptime       = prometheus.NewDesc("lakestream_uptime_seconds", "Seconds since the node started.", nil, nil)
	descBuildVersion = prometheus.NewDesc("lakestream_build_info", "Always 1; the labels say which build runs.", []string{"version"}, nil)
)

// nodeCollector reports, at scrape time, what is read from the node's
// parts: subscriptions, prepared statements, the size of every table on
// disk and in the lake, memory limits and uptime.
type nodeCollector struct{ n *Node }

func (c *nodeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descSubs, descSubLag, descPrepared, descTableRows, descTableDisk, descTableLake,
		descEngineLimit, descEngineUsed, descCacheLimit, descUptime, descBuildVersion} {
		ch <- d
	}
}

func (c *nodeCollector) Collect(ch chan<- prometheus.Metric) {
	n := c.n
	count, lag := map[string]int{}, map[string]int64{}
	for _, s := range n.flight.Subscriptions() {
		count[s.Table]++
		lag[s.Table] = max(lag[s.Table], s.LagRows)
	}
	for _, t := range tableNames(count) {
		gauge(ch, descSubs, float64(count[t]), t)
		gauge(ch, descSubLag, float64(lag[t]), t)
	}
	gauge(ch, descPrepared, float64(n.flight.PreparedOpen()))
	for _, t := range n.tableSizes(context.Background(), n.lakeStatus()) {
		gauge(ch, descTableRows, float64(t.Rows), t.Name)
		gauge(ch, descTableDisk, float64(t.DiskBytes), t.Name)
		if t.Datalake {
			gauge(ch, descTableLake, float64(t.LakeBytes), t.Name)
		}
	}
	engine, _ := n.cfg.engineMemory()
	gauge(ch, descEngineLimit, float64(engine))
	if used, err := n.engine.MemoryUsed(); err == nil {
		gauge(ch, descEngineUsed, float64(used))
	}
	cache, _ := n.cfg.cacheBytes()
	gauge(ch, descCacheLimit, float64(max(0, cache)))
	gauge(ch, descUptime, n.uptime().Seconds())
	gauge(ch, descBuildVersion, 1, n.cfg.Version)
}

// tableSize is a table's size in rows, on disk and in the lake.
type tableSize struct {
	Name      string
	Buckets   int
	Rows      int64 // committed to the log since creation
	DiskBytes int64 // log segments
	Datalake  bool
	LakeBytes int64
	LakeRows  int64
	LagRows   int64   // committed, not yet in the lake
	LagSecs   float64 // age of the oldest row not yet in the lake
	Refusing  string  // why the log refuses writes, "" when it takes them
}

// lakeStatus is the tiering service's status of every tiered bucket.
func (n *Node) lakeStatus() []tiering.BucketStatus {
	if n.lake == nil {
		return nil
	}
	return n.lake.Status()
}

// tableSizes measures every open table, by label (tableLabels), with the
// lake's state from lake (lakeStatus).
func (n *Node) tableSizes(ctx context.Context, lake []tiering.BucketStatus) []tableSize {
	defs, err := n.cat.AllTables(ctx)
	if err != nil {
		return nil
	}
	labels := n.tableLabels(ctx)
	byID := map[int64]int{}
	var out []tableSize
	for _, d := range defs {
		t, err := n.store.ByID(ctx, d.ID)
		if err != nil {
			continue
		}
		s := tableSize{Name: labels.of(d.ID, d.FullName()), Buckets: t.Log().Buckets(), Datalake: d.Options.DatalakeEnabled}
		for b := 0; b < s.Buckets; b++ {
			st := t.Log().Bucket(b).Stats()
			s.Rows += st.Committed
			s.DiskBytes += st.Bytes
		}
		if err := t.Log().Err(); err != nil {
			s.Refusing = err.Error()
		}
		byID[d.ID] = len(out)
		out = append(out, s)
	}
	for _, st := range lake {
		i, ok := byID[st.TableID]
		if !ok {
			continue
		}
		out[i].LakeBytes, out[i].LakeRows = st.LakeBytes, st.LakeRows
		out[i].LagRows += st.LagRows
		out[i].LagSecs = max(out[i].LagSecs, st.Lag.Seconds())
	}
	return out
}
