package columnarlog

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/lakestream/lakestream/internal/vfs"
)

// SyncPolicy says when appended batches are made durable.
type SyncPolicy int

const (
	// SyncAlways acknowledges an append only after an fsync that covers it.
	// Concurrent appenders share one fsync (group commit). The default.
	SyncAlways SyncPolicy = iota
	// SyncNever acknowledges once the batch is written to the OS and leaves
	// flushing to it: a machine crash can lose acknowledged batches, a process
	// crash cannot. For benchmarks and throwaway data.
	SyncNever
)

func (p SyncPolicy) String() string {
	switch p {
	case SyncAlways:
		return "always"
	case SyncNever:
		return "never"
	}
	return fmt.Sprintf("SyncPolicy(%d)", int(p))
}

// ParseSyncPolicy reads "always" or "never".
func ParseSyncPolicy(s string) (SyncPolicy, error) {
	switch s {
	case "always", "":
		return SyncAlways, nil
	case "never":
		return SyncNever, nil
	}
	return 0, fmt.Errorf("unknown sync policy %q (want always or never)", s)
}

// Options configure a log. The zero value of each field means its default.
type Options struct {
	// FS is the filesystem. Default: the OS filesystem.
	FS vfs.FS
	// SegmentBytes rolls the active segment once it holds this many bytes.
	// Default 256 MiB; at most 2 GiB (index positions are 32-bit).
	SegmentBytes int64
	// SegmentAge rolls the active segment once its first batch is this old.
	// Default 7 days.
	SegmentAge time.Duration
	// IndexIntervalBytes is the spacing of sparse index entries. Default 4 KiB.
	IndexIntervalBytes int64
	// Sync is the durability policy. Default SyncAlways.
	Sync SyncPolicy
	// MaxBatchBytes refuses larger batches. Default 256 MiB.
	MaxBatchBytes int
	// WriterExpiry is how long the state of an idempotent writer (the
	// writer id and sequence of its last batch) is kept after its last
	// write: it is dropped when a segment rolls or the log opens, whatever
	// retention deleted meanwhile. Default 7 days, as Kafka's
	// transactional.id.expiration.ms.
	WriterExpiry time.Duration
	// LeaderEpoch is stamped on every appended batch until Log.BecomeLeader
	// changes it: the initial leader epoch. Default 0.
	LeaderEpoch int32
	// Replicated makes a TableLog a replica of a cluster's buckets
	// (replica.go): each bucket keeps a leader-epoch history and a high
	// watermark, readers see rows only up to the high watermark, and
	// followers store the leader's batches with AppendReplica. Default
	// false: a single node's table, whose high watermark is its committed
	// end. Only OpenTable takes it.
	Replicated bool
	// Now is the clock for commit timestamps and segment age. Default time.Now.
	Now func() time.Time
	// Logger receives recovery and retention events. Default: discard.
	Logger *slog.Logger
	// OnSync, when set, is told how long each fsync of the commit path
	// took: "segment" for a bucket's data, "commit" for the table's commit
	// record (the node's fsync latency histogram). It runs on the
	// committing goroutine after the fsync, failed or not, and must be
	// quick. Default: none.
	OnSync func(file string, took time.Duration)
}

// EnsureDefaults fills unset fields with their defaults.
func (o *Options) EnsureDefaults() {
	if o.FS == nil {
		o.FS = vfs.Default
	}
	if o.SegmentBytes == 0 {
		o.SegmentBytes = 256 << 20
	}
	if o.SegmentAge == 0 {
		o.SegmentAge = 7 * 24 * time.Hour
	}
	if o.IndexIntervalBytes == 0 {
		o.IndexIntervalBytes = 4 << 10
	}
	if o.WriterExpiry == 0 {
		o.WriterExpiry = 7 * 24 * time.Hour
	}
	if o.MaxBatchBytes == 0 {
		o.MaxBatchBytes = 256 << 20
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// Validate reports every problem with the options at once.
func (o *Options) Validate() error {
	var errs []error
	if o.SegmentBytes < 1<<10 || o.SegmentBytes > 1<<31-1 {
		errs = append(errs, fmt.Errorf("segment bytes %d: want 1 KiB to 2 GiB", o.SegmentBytes))
	}
	if o.SegmentAge < 0 {
		errs = append(errs, fmt.Errorf("segment age %v: want > 0", o.SegmentAge))
	}
	if o.WriterExpiry < 0 {
		errs = append(errs, fmt.Errorf("writer expiry %v: want > 0", o.WriterExpiry))
	}
	if o.IndexIntervalBytes <= 0 {
		errs = append(errs, fmt.Errorf("index interval %d: want > 0", o.IndexIntervalBytes))
	}
	if o.MaxBatchBytes < HeaderSize {
		errs = append(errs, fmt.Errorf("max batch bytes %d: want at least %d", o.MaxBatchBytes, HeaderSize))
	}
	if o.Sync != SyncAlways && o.Sync != SyncNever {
		errs = append(errs, fmt.Errorf("sync policy %d unknown", o.Sync))
	}
	return errors.Join(errs...)
}
