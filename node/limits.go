package node

import (
	"fmt"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lakestream/lakestream/catalog"
	"github.com/lakestream/lakestream/flightsrv"
)

// LimitsConfig is what one client may hold of a node at once
// (docs/security.md, "Resource limits"); with Config.EngineMemory and
// Config.QueryTimeout, the limits that keep one client from taking the
// node down. Each field documents its default; a negative count is no cap.
type LimitsConfig struct {
	// QueryMemory stops a query that holds more than this much of the
	// engine's memory (Config.EngineMemory, which all queries share), with
	// ResourceExhausted: a size ("512MiB"), a percentage of EngineMemory
	// ("50%"), or "off". Default "50%": one query cannot take the memory
	// the others need. The engine estimates each query's share
	// (planner/duck, memlimit.go).
	QueryMemory string
	// QueriesPerUser caps the queries one user runs at once (per client
	// connection for calls without a user, authentication off). Default 8.
	QueriesPerUser int
	// SubscriptionsPerSession caps the change streams one client
	// connection has open. Default 64.
	SubscriptionsPerSession int
	// PreparedPerSession caps the prepared statements one client
	// connection holds. Default 256.
	PreparedPerSession int
}

func (l *LimitsConfig) ensureDefaults() {
	if l.QueryMemory == "" {
		l.QueryMemory = "50%"
	}
	if l.QueriesPerUser == 0 {
		l.QueriesPerUser = 8
	}
	if l.SubscriptionsPerSession == 0 {
		l.SubscriptionsPerSession = 64
	}
	if l.PreparedPerSession == 0 {
		l.PreparedPerSession = 256
	}
}

// minQueryMemory is the smallest query memory limit accepted.
const minQueryMemory = 16 << 20

// validate checks the limits against the engine's memory.
func (l *LimitsConfig) validate(engineMemory int64) []error {
	var errs []error
	if n, err := l.queryMemory(engineMemory); err != nil {
		errs = append(errs, err)
	} else if n > 0 && (n < minQueryMemory || (engineMemory > 0 && n > engineMemory)) {
		errs = append(errs, fmt.Errorf("query memory limit %q: %d bytes, want at least 16MiB and at most the engine memory (%d bytes), or off", l.QueryMemory, n, engineMemory))
	}
	return errs
}

// queryMemory is QueryMemory in bytes; 0 is off.
func (l *LimitsConfig) queryMemory(engineMemory int64) (int64, error) {
	v := strings.TrimSpace(l.QueryMemory)
	if strings.EqualFold(v, "off") {
		return 0, nil
	}
	if p, ok := strings.CutSuffix(v, "%"); ok {
		var pct float64
		if _, err := fmt.Sscanf(p, "%g", &pct); err != nil || pct <= 0 || pct > 100 {
			return 0, fmt.Errorf("query memory limit %q: want a percentage of the engine memory from 1%% to 100%%, a size, or off", l.QueryMemory)
		}
		return int64(float64(engineMemory) * pct / 100), nil
	}
	n, err := catalog.ParseSize(v)
	if err != nil {
		return 0, fmt.Errorf("query memory limit %q: want a size such as 512MiB, a percentage of the engine memory, or off", l.QueryMemory)
	}
	return n, nil
}

// flightLimits are the caps flightsrv applies.
func (l *LimitsConfig) flightLimits() flightsrv.Limits {
	return flightsrv.Limits{QueriesPerUser: l.QueriesPerUser, SubscriptionsPerSession: l.SubscriptionsPerSession, PreparedPerSession: l.PreparedPerSession}
}

var descLimitHits = prometheus.NewDesc("lakestream_limit_hits_total",
	"Calls refused at a cap (max_queries_per_user, max_subscriptions_per_session, max_prepared_per_session) and queries stopped at a limit (query_timeout, query_memory_limit, engine_memory), by the flag that sets it.",
	[]string{"limit"}, nil)

// limitCollector reports the calls refused or stopped at each limit.
type limitCollector struct{ n *Node }

func (c *limitCollector) Describe(ch chan<- *prometheus.Desc) { ch <- descLimitHits }

func (c *limitCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.n.flight.LimitStats()
	for _, h := range []struct {
		limit string
		n     int64
	}{
		{"max_queries_per_user", s.QueriesPerUser}, {"max_subscriptions_per_session", s.SubscriptionsPerSession},
		{"max_prepared_per_session", s.PreparedPerSession}, {"query_timeout", s.QueryTimeout},
		{"query_memory_limit", s.QueryMemory}, {"engine_memory", s.EngineMemory},
	} {
		metric(ch, descLimitHits, prometheus.CounterValue, float64(h.n), h.limit)
	}
}
