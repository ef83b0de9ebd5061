package bench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"
)

// pkProfile, when Config.CPUProfile is set, writes a CPU profile of the
// Lakestream side of one pk figure (base with "-pk-<which>" before its
// extension), run untimed for profileFor after the measurement, and
// reports the process's CPU time per call over that run: client and node
// share the process, so it bounds the node's per-call CPU from above (the
// profile splits the two).
func pkProfile(ctx context.Context, e *env, w *WorkloadReport, group, which string, clients int, call func(ctx context.Context, client int, rng *rand.Rand) (int, error)) error {
	if e.cfg.CPUProfile == "" {
		return nil
	}
	ext := filepath.Ext(e.cfg.CPUProfile)
	path := strings.TrimSuffix(e.cfg.CPUProfile, ext) + "-pk-" + which + ext
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	e.prog.step(0, "", "pk %s: CPU profile to %s", which, path)
	cpu0, err := processCPU()
	if err != nil {
		return errors.Join(err, f.Close())
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		return errors.Join(err, f.Close())
	}
	r, err := timedClients(ctx, clients, profileFor, call)
	pprof.StopCPUProfile()
	if err = errors.Join(err, f.Close()); err != nil {
		return fmt.Errorf("profile %s: %w", which, err)
	}
	cpu1, err := processCPU()
	if err != nil {
		return err
	}
	perCall := float64(cpu1-cpu0) / float64(time.Microsecond) / float64(r.calls)
	w.figure(group, "lakestream", "process CPU per call (client and node)", "µs", []float64{perCall})
	e.prog.logf("pk %s: %d calls in %.1f s, process CPU %s µs per call, p50 %s ms, p99 %s ms; profile in %s",
		which, r.calls, r.secs, human(perCall), human(r.p50), human(r.p99), path)
	return nil
}

// processCPU is the CPU time (user and system) the process has used.
func processCPU() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("getrusage: %w", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}
