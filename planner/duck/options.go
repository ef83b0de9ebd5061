package duck

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"time"
)

// Options configures an Engine. The zero value is valid: every field
// documents its default.
type Options struct {
	// Threads is the number of DuckDB worker threads, which also bounds how
	// many parts of one scan are read at once. Default: runtime.GOMAXPROCS(0).
	Threads int

	// MemoryLimit is DuckDB's memory_limit, e.g. "4GB" or "512MiB". Default
	// "": DuckDB's own default (80% of physical memory); a node sets its
	// own (node.Config.EngineMemory). A query that needs more fails with
	// an "Out of Memory Error": nothing spills to disk, as the engine has no
	// temp directory (openDB says why).
	MemoryLimit string

	// QueryTimeout bounds each statement, from Query or Describe until
	// its stream is closed: at the deadline DuckDB is interrupted, and the
	// stream fails with a *QueryTimeoutError (which is a
	// context.DeadlineExceeded). Default 0: no timeout.
	QueryTimeout time.Duration

	// QueryMemoryLimit stops, with a *QueryMemoryError, a statement that
	// holds more than this many bytes of the engine's memory (memlimit.go
	// says how a statement's share is estimated). Default 0: no limit but
	// MemoryLimit, which all statements share.
	QueryMemoryLimit int64

	// MemoryCheckEvery is how often the memory watchdog samples the
	// engine's memory, when QueryMemoryLimit is set. Default 100ms.
	MemoryCheckEvery time.Duration

	// NoFilterPushdown turns off handing simple WHERE conjuncts to the
	// scans (filters.go), for comparisons and as a way out. Default false:
	// filters are pushed down.
	NoFilterPushdown bool

	// Logger receives engine events (start-up settings, scan errors).
	// Default: a logger that discards everything.
	Logger *slog.Logger
}

// EnsureDefaults fills unset fields with their defaults.
func (o *Options) EnsureDefaults() {
	if o.Threads == 0 {
		o.Threads = runtime.GOMAXPROCS(0)
	}
	if o.MemoryCheckEvery == 0 {
		o.MemoryCheckEvery = 100 * time.Millisecond
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
}

// Validate reports every problem with the options at once.
func (o *Options) Validate() error {
	var errs []error
	if o.Threads < 0 {
		errs = append(errs, fmt.Errorf("threads %d: must be positive", o.Threads))
	}
	if o.QueryTimeout < 0 {
		errs = append(errs, fmt.Errorf("query timeout %s: must be positive", o.QueryTimeout))
	}
	if o.QueryMemoryLimit < 0 || o.MemoryCheckEvery < 0 {
		errs = append(errs, fmt.Errorf("query memory limit %d, checked every %s: must be positive", o.QueryMemoryLimit, o.MemoryCheckEvery))
	}
	for _, c := range o.MemoryLimit {
		// The value is spliced into a SET statement; DuckDB's own parser
		// checks the unit.
		if c == '\'' || c == ';' {
			errs = append(errs, fmt.Errorf("memory limit %q: invalid character %q", o.MemoryLimit, c))
			break
		}
	}
	return errors.Join(errs...)
}
