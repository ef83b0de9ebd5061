// Command lakestream runs a Lakestream node and talks to one.
//
//	lakestream serve [flags]        run a node (see lakestream serve -h)
//	lakestream sql [--addr A] SQL   run one statement and print the result
//	lakestream status [--http A]    print a node's status (its status page, for terminals)
//	lakestream cluster status|decommission|recommission   operate a cluster (cluster.go)
//	lakestream bench [flags]        run the benchmark suite (see lakestream bench -h)
//	lakestream version              print versions
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// Set by the build (-ldflags "-X main.version=... -X main.commit=...").
var (
	version = "dev"
	commit  = "unknown"
)

func main() {
	if len(os.Args) < 2 {
		usage()
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch os.Args[1] {
	case "serve":
		err = serve(ctx, os.Args[2:])
	case "sql":
		err = runSQL(ctx, os.Args[2:], os.Stdout)
	case "status":
		err = runStatus(ctx, os.Args[2:], os.Stdout)
	case "cluster":
		err = runCluster(ctx, os.Args[2:], os.Stdout)
	case "bench":
		err = runBench(ctx, os.Args[2:], os.Stdout, os.Stderr)
	case "bench-server": // the node or ceiling process of `lakestream bench` (bench.ServeChild)
		err = runBenchServer(os.Args[2:])
	case "version":
		printVersion(os.Stdout)
	case "-h", "--help", "help":
		usage()
	default:
		fmt.Fprintf(os.Stderr, "lakestream: unknown command %q\n", os.Args[1])
		usage()
		os.Exit(2)
	}
	if errors.Is(err, flag.ErrHelp) {
		return // -h: the flag set printed its usage
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "lakestream:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprint(os.Stderr, `usage:
  lakestream serve [flags]          run a node (lakestream serve -h for flags)
  lakestream sql [--addr A] "SQL"   run one statement, print the result
  lakestream status [--http A]      print a node's status: tables, rates, errors
  lakestream cluster status [--addr A]             members, buckets, leaders, in-sync sets, lag
  lakestream cluster decommission --meta M NODE    move a node's replicas away, wait until it holds none
  lakestream cluster recommission --meta M NODE    let a decommissioned node hold replicas again
  lakestream bench [flags]          run the benchmark suite (lakestream bench -h for flags)
  lakestream version                print versions
`)
}
