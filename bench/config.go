package bench

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// Workloads are the known workloads, in the order Run runs them.
var Workloads = []string{"ingest", "scan", "query", "subscribe", "pk", "tiering", "union", "pklake", "cluster"}

// DefaultWorkloads are the workloads run when none are named: all but pk,
// whose full figure (10M upserts, then lookups) takes as long as the rest
// together, pklake (10M keys in the lake) and cluster (three nodes and
// three Kafka brokers of its own); they run when asked for (-workloads
// pk, make bench-pk; -workloads pklake; -workloads cluster).
var DefaultWorkloads = []string{"ingest", "scan", "query", "subscribe", "tiering", "union"}

// Config configures a benchmark run. The zero value of each field means its
// default; with Short set, the defaults are the smoke-test sizes (seconds
// in all, for correctness checks, not for figures).
type Config struct {
	// Workloads to run, a subset of Workloads. Default: DefaultWorkloads.
	Workloads []string
	// Rows is the rows each ingest measurement writes, and the rows of the
	// scanned table. Default 2,000,000 (short: 40,000).
	Rows int
	// QueryRows is the rows of the query workload's table. Default
	// 2,000,000 (short: 40,000).
	QueryRows int
	// BatchRows are the rows per ingest call that the ingest workload
	// measures, one measurement each. Default [4096, 65536] (short: [4096]).
	BatchRows []int
	// Writers is the number of concurrent ingest clients. Default 4.
	Writers int
	// Runs is how many times each figure is measured; the report gives the
	// median and the min–max. Default 3 (short: 1).
	Runs int
	// Rate is the subscription workload's target rate, rows/s. Default 10,000.
	Rate int
	// SubscribeBatchRows is the rows per ingest call of the subscription
	// workload. Default 500.
	SubscribeBatchRows int
	// Duration is how long each subscription measurement writes at its
	// rate; the search for the highest sustainable rate spends half of it
	// on each step. Default 5 s (short: 500 ms).
	Duration time.Duration
	// MaxRate caps the search for the highest sustainable subscription
	// rate, rows/s. Default 2,560,000 (short: 40,000); Rate or below
	// skips the search.
	MaxRate int
	// Sync is the node's log durability policy, "always" or "never".
	// Default "always".
	Sync string
	// Codec is the log.compression of the benchmark tables: "zstd", "lz4"
	// or "none". Default "lz4" (the table default).
	Codec string
	// DataDir is where the node keeps its data. Default: a new directory
	// under the OS temp dir, removed afterwards. A given directory is kept.
	DataDir string
	// OutDir receives results.json and results.html. Default "": no files.
	OutDir string
	// LakeRounds is the rounds of the tiering workload's flatness series
	// (commit and plan time of the first ten rounds against the last ten),
	// at least 20. Default 1,000 (short: 60).
	LakeRounds int
	// CPUProfile, when set, makes the union workload write a CPU profile
	// of its Lakestream side per query and scan, run for a few seconds
	// after the measurement, to this path with "-q<n>", "-scan" or
	// "-scan-lake" before the extension; and makes the pk workload write
	// one of its point lookups, batch lookups and aggregate each, with
	// "-pk-point", "-pk-batch" and "-pk-aggregate".
	// Default "": none.
	CPUProfile string
	// Baselines are the external systems to start and measure against
	// (baselines.go), a subset of Baselines; the others are reported
	// missing, as not selected. Default (nil): all of them; empty: none.
	Baselines []string
	// KafkaDir caches the Kafka jars, in KafkaDir/jars. When they are
	// absent Run fetches them from Maven Central (bench/kafka/fetch.sh,
	// embedded; needs mvn), except in Short mode, which reports Kafka
	// missing instead. Default: .cache/kafka at the root of the source tree
	// when run inside it, else lakestream/kafka in the user cache dir.
	KafkaDir string
	// FlussDir caches the Fluss jars (in FlussDir/jars, fetched as the
	// Kafka jars are: bench/fluss/fetch.sh, not in Short mode) and the
	// compiled driver (FlussDir/driver-<hash of Driver.java>). Default:
	// .cache/fluss at the root of the source tree when run inside it, else
	// lakestream/fluss in the user cache dir.
	FlussDir string
	// PKRows is the rows the pk workload upserts per run. Default
	// 10,000,000 (short: 20,000).
	PKRows int
	// PKKeys is the key space of the pk workload's upserts, at most
	// PKRows: the first PKKeys rows insert every key, the others update
	// one each. Default 5,000,000 (short: 10,000).
	PKKeys int
	// PKBatchRows is the rows per upsert call, at most PKKeys/Writers (a
	// batch never holds a key twice). Default 65,536 (short: 2,048).
	PKBatchRows int
	// PKClients is the concurrent lookup clients. Default 8.
	PKClients int
	// PKBatchKeys is the keys per batch lookup call, at most PKKeys.
	// Default 1,000.
	PKBatchKeys int
	// PKDuration is how long each lookup measurement runs. Default 5 s
	// (short: 300 ms).
	PKDuration time.Duration
	// PKLakeKeys is the keys of the pklake workload's primary-key table
	// in the lake for its union read and pyiceberg figures. Default
	// 10,000,000 (short: 20,000).
	PKLakeKeys int
	// PKLakeUpdates is the keys the pklake workload updates in the log
	// tail of that table, at most PKLakeKeys, and the inserts (then as
	// many updates) of its tiering stream. Default 1,000,000 (short:
	// 2,000).
	PKLakeUpdates int
	// ServerCommand, when set, runs the node and the ceiling each in a
	// child process: the command (its first element the executable)
	// followed by the flags of ServeChild; the CLI passes its own
	// executable and "bench-server". The ingest and scan workloads then
	// report each server's CPU time per million rows, read from its
	// process apart from the clients'. Default nil: both run in this
	// process, and the CPU figures are not reported.
	ServerCommand []string
	// ServerCPUProfile, with ServerCommand, makes the node process write
	// a CPU profile of its whole run to this path, and the ceiling's to
	// the path with "-ceiling" before the extension. Default "": none.
	ServerCPUProfile string
	// Short selects the smoke-test defaults above.
	Short bool
	// Progress receives a live progress line: updated in place with
	// carriage returns when it is a terminal, plain lines otherwise.
	// Default: none.
	Progress io.Writer
}

// EnsureDefaults fills unset fields.
func (c *Config) EnsureDefaults() {
	pick := func(full, short int) int {
		if c.Short {
			return short
		}
		return full
	}
	if len(c.Workloads) == 0 {
		c.Workloads = slices.Clone(DefaultWorkloads)
	}
	if c.PKRows == 0 {
		c.PKRows = pick(10_000_000, 20_000)
	}
	if c.PKKeys == 0 {
		c.PKKeys = pick(5_000_000, 10_000)
	}
	if c.PKBatchRows == 0 {
		c.PKBatchRows = pick(65536, 2048)
	}
	if c.PKClients == 0 {
		c.PKClients = 8
	}
	if c.PKBatchKeys == 0 {
		c.PKBatchKeys = 1000
	}
	if c.PKDuration == 0 {
		c.PKDuration = time.Duration(pick(int(5*time.Second), int(300*time.Millisecond)))
	}
	if c.PKLakeKeys == 0 {
		c.PKLakeKeys = pick(10_000_000, 20_000)
	}
	if c.PKLakeUpdates == 0 {
		c.PKLakeUpdates = pick(1_000_000, 2_000)
	}
	if c.Rows == 0 {
		c.Rows = pick(2_000_000, 40_000)
	}
	if c.QueryRows == 0 {
		c.QueryRows = pick(2_000_000, 40_000)
	}
	if len(c.BatchRows) == 0 {
		c.BatchRows = []int{4096, 65536}
		if c.Short {
			c.BatchRows = []int{4096}
		}
	}
	if c.Writers == 0 {
		c.Writers = 4
	}
	if c.Runs == 0 {
		c.Runs = pick(3, 1)
	}
	if c.Rate == 0 {
		c.Rate = 10_000
	}
	if c.SubscribeBatchRows == 0 {
		c.SubscribeBatchRows = 500
	}
	if c.Duration == 0 {
		c.Duration = time.Duration(pick(int(5*time.Second), int(500*time.Millisecond)))
	}
	if c.MaxRate == 0 {
		c.MaxRate = pick(2_560_000, 40_000)
	}
	if c.Sync == "" {
		c.Sync = "always"
	}
	if c.Codec == "" {
		c.Codec = "lz4"
	}
	if c.Progress == nil {
		c.Progress = io.Discard
	}
	if c.Baselines == nil {
		c.Baselines = slices.Clone(Baselines)
	}
	if c.KafkaDir == "" {
		c.KafkaDir = defaultKafkaDir()
	}
	if c.FlussDir == "" {
		c.FlussDir = defaultCacheDir("fluss")
	}
	if c.LakeRounds == 0 {
		c.LakeRounds = pick(1000, 60)
	}
}

// Validate reports every problem at once.
func (c *Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	seen := map[string]bool{}
	for _, w := range c.Workloads {
		if !slices.Contains(Workloads, w) {
			bad("workload %q: want one of %s", w, strings.Join(Workloads, ", "))
		} else if seen[w] {
			bad("workload %q given twice", w)
		}
		seen[w] = true
	}
	seenB := map[string]bool{}
	for _, b := range c.Baselines {
		if !slices.Contains(Baselines, b) {
			bad("baseline %q: want one of %s", b, strings.Join(Baselines, ", "))
		} else if seenB[b] {
			bad("baseline %q given twice", b)
		}
		seenB[b] = true
	}
	if c.Rows < 1 {
		bad("rows %d: want at least 1", c.Rows)
	}
	if c.QueryRows < 1 {
		bad("query rows %d: want at least 1", c.QueryRows)
	}
	for _, b := range c.BatchRows {
		if b < 1 || b > 1<<22 {
			bad("batch rows %d: want 1 to %d", b, 1<<22)
		}
	}
	if c.Writers < 1 || c.Writers > 256 {
		bad("writers %d: want 1 to 256", c.Writers)
	}
	if c.Runs < 1 || c.Runs > 100 {
		bad("runs %d: want 1 to 100", c.Runs)
	}
	if c.Rate < 1 {
		bad("rate %d: want at least 1 row/s", c.Rate)
	}
	if c.SubscribeBatchRows < 1 {
		bad("subscribe batch rows %d: want at least 1", c.SubscribeBatchRows)
	}
	if c.Duration < 100*time.Millisecond {
		bad("duration %s: want at least 100ms", c.Duration)
	}
	if c.MaxRate < 1 {
		bad("max rate %d: want at least 1 row/s", c.MaxRate)
	}
	if c.Sync != "always" && c.Sync != "never" {
		bad("sync %q: want always or never", c.Sync)
	}
	if c.Codec != "zstd" && c.Codec != "lz4" && c.Codec != "none" {
		bad("codec %q: want zstd, lz4 or none", c.Codec)
	}
	if c.PKKeys < 1 || c.PKKeys > 1<<31 {
		bad("pk keys %d: want 1 to %d", c.PKKeys, 1<<31)
	}
	if c.PKRows < c.PKKeys {
		bad("pk rows %d: want at least pk keys (%d)", c.PKRows, c.PKKeys)
	}
	if c.PKBatchRows < 1 || c.PKBatchRows > max(1, c.PKKeys/max(1, c.Writers)) {
		bad("pk batch rows %d: want 1 to pk keys / writers (%d)", c.PKBatchRows, max(1, c.PKKeys/max(1, c.Writers)))
	}
	if c.PKClients < 1 || c.PKClients > 256 {
		bad("pk clients %d: want 1 to 256", c.PKClients)
	}
	if c.PKBatchKeys < 1 || c.PKBatchKeys > c.PKKeys {
		bad("pk batch keys %d: want 1 to pk keys (%d)", c.PKBatchKeys, c.PKKeys)
	}
	if c.PKDuration < 100*time.Millisecond {
		bad("pk duration %s: want at least 100ms", c.PKDuration)
	}
	if c.PKLakeKeys < 1 || c.PKLakeKeys > 1<<31 {
		bad("pklake keys %d: want 1 to %d", c.PKLakeKeys, 1<<31)
	}
	if c.PKLakeUpdates < 1 || c.PKLakeUpdates > c.PKLakeKeys {
		bad("pklake updates %d: want 1 to pklake keys (%d)", c.PKLakeUpdates, c.PKLakeKeys)
	}
	if c.LakeRounds < 2*lakeWindow {
		bad("lake rounds %d: want at least %d", c.LakeRounds, 2*lakeWindow)
	}
	if c.ServerCPUProfile != "" && len(c.ServerCommand) == 0 {
		bad("server CPU profile: needs the servers in processes of their own (ServerCommand)")
	}
	return errors.Join(errs...)
}

// has reports whether workload w is selected.
func (c *Config) has(w string) bool { return slices.Contains(c.Workloads, w) }
