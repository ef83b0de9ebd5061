package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Baselines are the external systems Run can start beside the node, each
// once per invocation, and stop at the end (their process groups killed):
//
//	postgres  PostgreSQL (initdb + postgres from the machine, as the user
//	          nobody under root); ingest (COPY), query and pk
//	          (upserts, lookups)                    — postgres.go, pk_pg.go
//	kafka     Apache Kafka in KRaft mode, one broker+controller, assembled
//	          from Maven Central jars; ingest and subscribe — kafka.go
//	kafka3    the same on three brokers, each broker and controller, topics
//	          of replication factor 3; cluster                — kafka.go
//	fluss     Apache Fluss, a coordinator, a tablet server and ZooKeeper,
//	          assembled from Maven Central jars, driven by a Java driver;
//	          ingest and subscribe                          — fluss.go
//
// A baseline that is not selected, or that cannot start, is reported by
// every workload that would have used it as missing, with the reason.
var Baselines = []string{"postgres", "kafka", "kafka3", "fluss"}

// baselineUsers are the workloads that measure against each baseline.
var baselineUsers = map[string][]string{
	"postgres": {"ingest", "query", "pk"},
	"kafka":    {"ingest", "subscribe"},
	"kafka3":   {"cluster"},
	"fluss":    {"ingest", "subscribe"},
}

// baselineTitles name the baselines in the report's missing entries.
var baselineTitles = map[string]string{
	"postgres": "PostgreSQL",
	"kafka":    "Apache Kafka (KRaft, producer acks=all)",
	"kafka3":   "Apache Kafka, 3 KRaft brokers, replication factor 3 (min.insync.replicas 2, producer acks=all)",
	"fluss":    "Apache Fluss (log table, writer acks=all)",
}

// baselineSystems name the baselines in figures and ratios.
var baselineSystems = map[string]string{"postgres": "postgresql", "kafka": "kafka", "kafka3": "kafka-rf3", "fluss": "fluss"}

// baselines are the running baselines; a nil server is missing, and why
// says the reason.
type baselines struct {
	pg     *pgServer
	kafka  *kafkaServer
	kafka3 *kafkaServer // three brokers, for the cluster workload
	fluss  *flussServer
	why    map[string]string
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
		case "kafka3":
			prog.logf("starting Kafka on 3 brokers (jars in %s)", cfg.KafkaDir)
			if b.kafka3, err = startKafkaBrokers(ctx, cfg, prog, 3, 1); err == nil {
				stops = append(stops, b.kafka3.stop)
				prog.logf("Kafka %s on %s", b.kafka3.version, strings.Join(b.kafka3.seeds, ", "))
			}
		case "fluss":
			prog.logf("starting Fluss (jars in %s)", cfg.FlussDir)
			if b.fluss, err = startFluss(ctx, cfg, prog); err == nil {
				stops = append(stops, b.fluss.stop)
				prog.logf("Fluss %s on %s", b.fluss.version, b.fluss.bootstrap())
			}
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
