//go:build faultinject

package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/lakestream/lakestream/internal/vfs"
	"github.com/lakestream/lakestream/node"
)

// A binary built with -tags faultinject takes two more serve flags, for
// the cluster fault tests (tests/clustertest builds such a binary; the
// released one has neither flag). docs/cluster.md says how the tests use
// them.
//
//   - --fault-dial ADDR=PROXY[,ADDR=PROXY]: the node's replication
//     connections to ADDR (another node's advertised address) go to PROXY,
//     a proxy of the test that can cut the link.
//   - --fault-disk FILE: every fsync of the table logs (a file's or a
//     directory's) first reads FILE: while it holds "fail" the fsync fails
//     with EIO, while it holds "stall" the fsync waits, and otherwise (or
//     without the file) it runs.
func bindFaultFlags(fs *flag.FlagSet, cfg *node.Config) {
	fs.Func("fault-dial", "test only: ADDR=PROXY,...: replication connections to ADDR go to PROXY", func(v string) error {
		to := map[string]string{}
		for _, pair := range strings.Split(v, ",") {
			addr, proxy, ok := strings.Cut(strings.TrimSpace(pair), "=")
			if !ok || addr == "" || proxy == "" {
				return fmt.Errorf("%q: want ADDR=PROXY", pair)
			}
			to[addr] = proxy
		}
		var d net.Dialer
		cfg.Cluster.Dial = func(ctx context.Context, addr string) (net.Conn, error) {
			if p, ok := to[addr]; ok {
				addr = p
			}
			return d.DialContext(ctx, "tcp", addr)
		}
		return nil
	})
	fs.Func("fault-disk", "test only: FILE: table-log fsyncs fail while FILE holds 'fail', wait while it holds 'stall'", func(v string) error {
		cfg.LogFS = vfs.WithInjector(vfs.OS(), diskFaults(v))
		return nil
	})
}

// diskFaults is the injector of --fault-disk: it reads the control file
// before each fsync.
func diskFaults(control string) vfs.Injector {
	mode := func() string {
		b, err := os.ReadFile(control)
		if err != nil {
			return "" // no file: no fault
		}
		return strings.TrimSpace(string(b))
	}
	return func(op vfs.Op, _ string) error {
		if op != vfs.OpSync && op != vfs.OpSyncDir {
			return nil
		}
		for {
			switch mode() {
			case "fail":
				return syscall.EIO
			case "stall":
				time.Sleep(10 * time.Millisecond) // a stalled disk: wait until the test lets it go on
				continue
			}
			return nil
		}
	}
}
