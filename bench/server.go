package bench

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/lakestream/lakestream/internal/proc"
	"github.com/lakestream/lakestream/node"
)

// The node and the ceiling run each in a child process of their own when
// Config.ServerCommand is set (the CLI's default), so that the CPU each
// spends is read from its own process (/proc/<pid>/stat) apart from the
// clients': on a machine whose clients share the server's cores, CPU per
// row is the server's efficiency, whatever the wall clock says. In this
// process (ServerCommand empty, as in go test ./bench/) the CPU figures
// are not reported.

// server is where a node or the ceiling answers, and what its CPU time
// is so far (nil: it runs in this process, not measurable apart).
type server struct {
	addr string
	cpu  func() (float64, error)
	pid  int // 0: this process
	stop func() error
}

// ServeChild is the body of `lakestream bench-server`: it serves a node
// (-role node, as openEnv's in-process node: -data-dir, -sync) or the
// ceiling (-role ceiling) on -listen until SIGTERM or SIGINT, with
// -cpuprofile writing a CPU profile of that whole time.
func ServeChild(args []string, stderr io.Writer) (err error) {
	fs := flag.NewFlagSet("bench-server", flag.ContinueOnError)
	fs.SetOutput(stderr)
	role := fs.String("role", "", "node or ceiling")
	listen := fs.String("listen", "127.0.0.1:0", "address to serve Flight on")
	dataDir := fs.String("data-dir", "", "the node's data directory")
	syncMode := fs.String("sync", "always", "the node's sync: always or never")
	profile := fs.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *profile != "" {
		f, ferr := os.Create(*profile) // not err: the deferred Close below sets the result
		if ferr != nil {
			return ferr
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return errors.Join(err, f.Close())
		}
		defer func() {
			pprof.StopCPUProfile()
			if cerr := f.Close(); cerr != nil {
				err = errors.Join(err, fmt.Errorf("cpu profile: %w", cerr))
			}
		}()
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	switch *role {
	case "node":
		if *dataDir == "" {
			return errors.New("bench-server: -role node needs -data-dir")
		}
		n, err := startNode(ctx, *dataDir, *listen, *syncMode)
		if err != nil {
			return err
		}
		return n.Serve(ctx)
	case "ceiling":
		_, _, stopCeil, err := startCeiling(ctx, *listen)
		if err != nil {
			return err
		}
		<-ctx.Done()
		stopCeil()
		return nil
	}
	return fmt.Errorf("bench-server: -role %q: want node or ceiling", *role)
}

// startNode starts the benchmark's node: no HTTP, logs discarded.
func startNode(ctx context.Context, dir, listen, syncMode string) (*node.Node, error) {
	n, err := node.Start(ctx, node.Config{DataDir: dir, Listen: listen, HTTP: "off", Sync: syncMode,
		Version: "bench", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return nil, fmt.Errorf("start node: %w", err)
	}
	return n, nil
}

// startChild runs command + "-role role" + args in a process group of its
// own, listening on a free loopback port, and waits until it accepts
// connections.
func startChild(command []string, role string, args ...string) (*server, error) {
	port, err := proc.FreePort()
	if err != nil {
		return nil, err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	argv := append(append(command[1:len(command):len(command)], "-role", role, "-listen", addr), args...)
	p, err := proc.Start("bench "+role, exec.Command(command[0], argv...), nil, syscall.SIGTERM)
	if err != nil {
		return nil, err
	}
	err = p.WaitReady(2*time.Minute, func() error {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
		}
		return err
	})
	if err != nil {
		return nil, errors.Join(err, p.Stop())
	}
	pid := p.Pid()
	return &server{addr: addr, pid: pid, stop: p.Stop, cpu: func() (float64, error) { return childCPU(pid) }}, nil
}

// childCPU is the CPU time, user and system, that process pid has used
// so far, in seconds: fields 14 and 15 of /proc/<pid>/stat, in clock ticks
// of 1/100 s (USER_HZ, 100 on every Linux architecture Go supports).
func childCPU(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("cpu of process %d: %w", pid, err)
	}
	return parseProcStatCPU(b)
}

// parseProcStatCPU reads utime + stime from a /proc/<pid>/stat line. The
// second field, the command in parentheses, may hold spaces and
// parentheses itself, so the fields are counted from the last ')'.
func parseProcStatCPU(b []byte) (float64, error) {
	end := -1
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] == ')' {
			end = i
			break
		}
	}
	if end < 0 {
		return 0, fmt.Errorf("/proc stat %q: no command field", truncate(b))
	}
	// After "pid (comm)": state is field 3, utime field 14, stime 15.
	fields := strings.Fields(string(b[end+1:]))
	if len(fields) < 13 {
		return 0, fmt.Errorf("/proc stat %q: %d fields after the command, want at least 13", truncate(b), len(fields))
	}
	utime, err1 := strconv.ParseUint(fields[11], 10, 64)
	stime, err2 := strconv.ParseUint(fields[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("/proc stat %q: %w", truncate(b), err)
	}
	return float64(utime+stime) / userHZ, nil
}

// userHZ is the unit of /proc's CPU times.
const userHZ = 100

func truncate(b []byte) string {
	if len(b) > 80 {
		return string(b[:80]) + "…"
	}
	return string(b)
}

// cpuSpan measures the CPU a server spends while f runs, in seconds; with
// no meter (a server in this process) it runs f and reports ok false.
func cpuSpan(meter func() (float64, error), f func() error) (secs float64, ok bool, err error) {
	if meter == nil {
		return 0, false, f()
	}
	before, err := meter()
	if err != nil {
		return 0, false, err
	}
	if err := f(); err != nil {
		return 0, false, err
	}
	after, err := meter()
	if err != nil {
		return 0, false, err
	}
	return after - before, true, nil
}

// The server CPU figures: CPU-seconds of the server process per million
// rows ingested or scanned.
const (
	serverCPU = "server CPU"
	cpuUnit   = "CPU-s/Mrows"
)

// cpuMissing is the note of a workload whose servers ran in this process.
const cpuMissing = "server CPU per row not measured: the node and the ceiling ran in the benchmark's process (Config.ServerCommand unset)"

// note adds a note to w once.
func (w *WorkloadReport) note(s string) {
	if !slices.Contains(w.Notes, s) {
		w.Notes = append(w.Notes, s)
	}
}
