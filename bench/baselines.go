package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
)

// Baselines are the external systems Run can start beside the node, each
// once per invocation, and stop at the end (their process groups killed):
//
//	postgres  PostgreSQL (initdb + postgres from the machine, as the user
//	          nobody under root); ingest (COPY) and query   — postgres.go
//	kafka     Apache Kafka in KRaft mode, one broker+controller, assembled
//	          from Maven Central jars; ingest and subscribe — kafka.go
//	fluss     Apache Fluss: not assembled (flussMissing says why)
//
// A baseline that is not selected, or that cannot start, is reported by
// every workload that would have used it as missing, with the reason.
var Baselines = []string{"postgres", "kafka", "fluss"}

// baselineUsers are the workloads that measure against each baseline.
var baselineUsers = map[string][]string{
	"postgres": {"ingest", "query"},
	"kafka":    {"ingest", "subscribe"},
	"fluss":    {"ingest", "subscribe"},
}

// baselineTitles name the baselines in the report's missing entries.
var baselineTitles = map[string]string{
	"postgres": "PostgreSQL",
	"kafka":    "Apache Kafka (KRaft, producer acks=all)",
	"fluss":    "Apache Fluss",
}

// baselineSystems name the baselines in figures and ratios.
var baselineSystems = map[string]string{"postgres": "postgresql", "kafka": "kafka", "fluss": "fluss"}

// flussMissing is why Fluss is not measured. Checked on 2026-11-29: the
// server resolves from Maven Central (org.apache.fluss:fluss-server
// 0.9.1-incubating; 0.7.0, 0.8.0-incubating and 0.9.0-incubating do not),
// but it needs a ZooKeeper beside its coordinator and tablet servers, and
// the only Go client is a third-party beta (github.com/pletorco/fluss-go,
// v0.1.0-beta.*, for 0.9.1); the official clients are Java and Rust.
const flussMissing = "not assembled: the server jars resolve from Maven Central (org.apache.fluss:fluss-server:0.9.1-incubating), " +
	"but Fluss also needs ZooKeeper, and has no Go client but a third-party beta (github.com/pletorco/fluss-go); " +
	"driving it from this harness is not built yet"

// baselines are the running baselines; a nil server is missing, and why
// says the reason.
type baselines struct {
	pg    *pgServer
	kafka *kafkaServer
	why   map[string]string
}

// reportMissing adds to w, for each baseline in names that is not
// running, why.
func (b *baselines) reportMissing(w *WorkloadReport, names ...string) {
	for _, n := range names {
		if r, ok := b.why[n]; ok {
			w.missing(baselineTitles[n], r)
		}
	}
}

// startBaselines starts the selected baselines that a selected workload
// uses. Failures to start are not errors: they become missing reasons.
// stop ends every started server.
func startBaselines(ctx context.Context, cfg Config, prog *progress) (b *baselines, stop func() error) {
	b = &baselines{why: map[string]string{}}
	var stops []func() error
	for _, name := range Baselines {
		used := slices.ContainsFunc(baselineUsers[name], cfg.has)
		switch {
		case !used:
			continue
		case !slices.Contains(cfg.Baselines, name):
			b.why[name] = "not selected (-baselines)"
			continue
		}
		var err error
		switch name {
		case "postgres":
			prog.logf("starting PostgreSQL")
			if b.pg, err = startPostgres(ctx, cfg.Sync); err == nil {
				stops = append(stops, b.pg.stop)
				prog.logf("PostgreSQL %s on %s", b.pg.version, b.pg.addr)
			}
		case "kafka":
			prog.logf("starting Kafka (jars in %s)", cfg.KafkaDir)
			if b.kafka, err = startKafka(ctx, cfg, prog); err == nil {
				stops = append(stops, b.kafka.stop)
				prog.logf("Kafka %s on %s", b.kafka.version, b.kafka.addr)
			}
		case "fluss":
			err = errors.New(flussMissing)
		}
		if err != nil {
			b.why[name] = err.Error()
			prog.logf("%s: missing: %v", name, err)
		}
	}
	return b, func() error {
		var errs []error
		for i := len(stops) - 1; i >= 0; i-- {
			errs = append(errs, stops[i]())
		}
		if err := errors.Join(errs...); err != nil {
			return fmt.Errorf("stop baselines: %w", err)
		}
		return nil
	}
}
