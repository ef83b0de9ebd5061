//go:build !faultinject

package main

import (
	"flag"

	"github.com/lakestream/lakestream/node"
)

// bindFaultFlags binds nothing: the fault-injection flags exist only in
// binaries built with -tags faultinject (faults.go).
func bindFaultFlags(*flag.FlagSet, *node.Config) {}
