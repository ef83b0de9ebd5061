package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/lakestream/lakestream/bench"
)

// runBench binds flags to bench.Config, runs the suite, prints the table to
// out and the progress line to stderr.
func runBench(ctx context.Context, args []string, out, progress io.Writer) error {
	cfg, err := benchConfig(args)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	cfg.Progress = progress
	rep, err := bench.Run(ctx, cfg)
	if rep != nil {
		if werr := rep.WriteText(out); werr != nil && err == nil {
			err = werr
		}
	}
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	if cfg.OutDir != "" {
		fmt.Fprintf(out, "\nwrote %s and %s\n", filepath.Join(cfg.OutDir, "results.json"), filepath.Join(cfg.OutDir, "results.html"))
	}
	return nil
}

func benchConfig(args []string) (bench.Config, error) {
	var cfg bench.Config
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	workloads := fs.String("workloads", strings.Join(bench.DefaultWorkloads, ","), "workloads to run, comma-separated, of "+strings.Join(bench.Workloads, ","))
	batchRows := fs.String("batch-rows", "", "rows per ingest call, comma-separated, one measurement each (default 4096,65536; -short: 4096)")
	fs.IntVar(&cfg.Rows, "rows", 0, "rows per ingest measurement and of the scanned table (default 2000000; -short: 40000)")
	fs.IntVar(&cfg.QueryRows, "query-rows", 0, "rows of the query workload's table (default 2000000; -short: 40000)")
	fs.IntVar(&cfg.Writers, "writers", 0, "concurrent ingest clients (default 4)")
	fs.StringVar(&cfg.CPUProfile, "cpuprofile", "", `CPU profile of the union workload's Lakestream side, per query and scan, to this path with "-q<n>", "-scan", "-scan-lake" before the extension; of the pk workload's point and batch lookups and aggregate with "-pk-point", "-pk-batch", "-pk-aggregate"`)
	fs.IntVar(&cfg.Runs, "runs", 0, "runs per figure; the median and min–max are reported (default 3; -short: 1)")
	fs.IntVar(&cfg.Rate, "rate", 0, "subscription target rate, rows/s (default 10000)")
	fs.IntVar(&cfg.SubscribeBatchRows, "subscribe-batch-rows", 0, "rows per ingest call in the subscription workload (default 500)")
	fs.DurationVar(&cfg.Duration, "duration", 0, "length of each subscription measurement (default 5s; -short: 500ms)")
	fs.IntVar(&cfg.MaxRate, "max-rate", 0, "cap of the highest-sustainable-rate search, rows/s (default 2560000; -short: 40000)")
	fs.StringVar(&cfg.Sync, "sync", "always", "node log durability: always (fsync before acknowledging) or never")
	fs.StringVar(&cfg.Codec, "codec", "lz4", "log.compression of the benchmark tables: lz4 (the table default), zstd or none")
	fs.StringVar(&cfg.DataDir, "data-dir", "", "node data directory, kept afterwards (default: a temp dir, removed)")
	fs.StringVar(&cfg.OutDir, "out", "bench-results", `directory for results.json and results.html ("" writes none)`)
	baselines := fs.String("baselines", strings.Join(bench.Baselines, ","), `baselines to start and measure against, comma-separated, or "none"; the others are reported missing`)
	fs.StringVar(&cfg.KafkaDir, "kafka-dir", "", "cache of the Kafka jars, fetched with Maven when absent (default .cache/kafka in the source tree)")
	fs.StringVar(&cfg.FlussDir, "fluss-dir", "", "cache of the Fluss jars and driver, fetched with Maven when absent (default .cache/fluss in the source tree)")
	fs.IntVar(&cfg.PKRows, "pk-rows", 0, "rows upserted per run by the pk workload (default 10000000; -short: 20000)")
	fs.IntVar(&cfg.PKKeys, "pk-keys", 0, "key space of the pk workload, at most -pk-rows (default 5000000; -short: 10000)")
	fs.IntVar(&cfg.PKBatchRows, "pk-batch-rows", 0, "rows per upsert call of the pk workload, at most pk keys / writers (default 65536; -short: 2048)")
	fs.IntVar(&cfg.PKClients, "pk-clients", 0, "concurrent lookup clients of the pk workload (default 8)")
	fs.IntVar(&cfg.PKBatchKeys, "pk-batch-keys", 0, "keys per batch lookup call of the pk workload (default 1000)")
	fs.DurationVar(&cfg.PKDuration, "pk-duration", 0, "length of each lookup measurement of the pk workload (default 5s; -short: 300ms)")
	fs.IntVar(&cfg.PKLakeKeys, "pklake-keys", 0, "keys in the lake of the pklake workload's union read and pyiceberg figures (default 10000000; -short: 20000)")
	fs.IntVar(&cfg.PKLakeUpdates, "pklake-updates", 0, "keys the pklake workload updates in the log tail, at most -pklake-keys, and the inserts (then as many updates) of its tiering stream (default 1000000; -short: 2000)")
	fs.BoolVar(&cfg.Short, "short", false, "smoke-test sizes: seconds, for correctness, not figures")
	inProcess := fs.Bool("in-process", false, "run the node and the ceiling in the benchmark's process (no server CPU figures) instead of a child process each")
	fs.StringVar(&cfg.ServerCPUProfile, "server-cpuprofile", "", `CPU profile of the node process's whole run to this path, the ceiling's with "-ceiling" before the extension`)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: lakestream bench [flags]\n\nRuns the benchmark suite (docs/benchmarks.md) against a node and its baselines.\n\nflags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("bench: unexpected argument %q", fs.Arg(0))
	}
	if !*inProcess {
		exe, err := os.Executable()
		if err != nil {
			return cfg, fmt.Errorf("bench: the node's process: %w", err)
		}
		cfg.ServerCommand = []string{exe, "bench-server"}
	}
	cfg.Workloads = splitList(*workloads)
	cfg.Baselines = []string{} // none unless listed
	if *baselines != "none" {
		cfg.Baselines = append(cfg.Baselines, splitList(*baselines)...)
	}
	for _, s := range splitList(*batchRows) {
		n, err := strconv.Atoi(s)
		if err != nil {
			return cfg, fmt.Errorf("bench: -batch-rows %q: %v", s, err)
		}
		cfg.BatchRows = append(cfg.BatchRows, n)
	}
	return cfg, nil
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// runBenchServer is `lakestream bench-server`, which `lakestream bench`
// starts to run its node, and its ceiling, each in a process of its own.
func runBenchServer(args []string) error { return bench.ServeChild(args, os.Stderr) }
