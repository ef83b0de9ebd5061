package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/lakestream/lakestream/planner/duck"
)

func printVersion(w io.Writer) {
	fmt.Fprintf(w, "lakestream %s (commit %s)\n", version, commit)
	fmt.Fprintf(w, "go         %s\n", runtime.Version())
	fmt.Fprintf(w, "duckdb     %s (embedded)\n", duck.Version())
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			switch d.Path {
			case "github.com/apache/arrow-go/v18":
				fmt.Fprintf(w, "arrow-go   %s\n", d.Version)
			case "github.com/duckdb/duckdb-go-bindings":
				fmt.Fprintf(w, "duckdb-go-bindings %s\n", d.Version)
			}
		}
	}
}
