package meta

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// BucketKey names one bucket of a table.
type BucketKey struct {
	TableID int64
	// Partition is the partition's path, "" when the table is not
	// partitioned.
	Partition string
	Bucket    int32
}

func (k BucketKey) String() string {
	if k.Partition == "" {
		return fmt.Sprintf("table %d bucket %d", k.TableID, k.Bucket)
	}
	return fmt.Sprintf("table %d partition %q bucket %d", k.TableID, k.Partition, k.Bucket)
}

// compare orders keys by table, partition (bytewise), bucket: the order of
// Buckets and AllBuckets.
func (k BucketKey) compare(o BucketKey) int {
	switch {
	case k.TableID != o.TableID:
		return cmpInt(k.TableID, o.TableID)
	case k.Partition != o.Partition:
		if k.Partition < o.Partition {
			return -1
		}
		return 1
	default:
		return cmpInt(int64(k.Bucket), int64(o.Bucket))
	}
}

func cmpInt(a, b int64) int {
	if a < b {
		return -1
	}
	if a > b {
		return 1
	}
	return 0
}

// Bucket is the agreed state of one bucket: where its replicas are, which
// of them leads, and which are in sync.
type Bucket struct {
	Key BucketKey
	// Replicas are node ids in placement order (the first is the
	// preferred leader). At least one, no duplicates.
	Replicas []string
	// Leader is the leading node's id, one of Replicas and of ISR; "" when
	// the bucket has no leader (offline).
	Leader string
	// Epoch is the leader epoch: it increases by at least 1 on every leader
	// change (including to and from ""), and never decreases.
	Epoch int32
	// ISR are the in-sync replicas, the leader included; a subset of
	// Replicas, no duplicates.
	ISR []string
	// Version is set by the store: 1 on create, +1 on every write. It is
	// the compare-and-set token of UpdateBucket.
	Version int64
}

// Lease is a named lease (the controller lease, a table's tiering
// committer lease) and its holder.
type Lease struct {
	Name   string
	Holder string
	// Token is the fencing token: a new holder's token is greater than
	// every earlier token of the lease; a renewal keeps it. Whoever acts
	// under a lease passes its token along, and whoever receives the
	// actions refuses tokens below the highest it has seen.
	Token int64
	// Expires is when the holder must stop acting. From AcquireLease it is
	// the caller's clock at the start of the call plus the ttl (with Go's
	// monotonic reading), never later than the store's own expiry; from
	// the Lease method it is the store's expiry, on the store's clock.
	Expires time.Time
}

// Errors, tested with errors.Is.
var (
	// ErrNotFound: no such bucket, or no live lease of that name.
	ErrNotFound = errors.New("not found")
	// ErrExists: CreateBuckets met a bucket that is already stored.
	ErrExists = errors.New("already exists")
	// ErrConflict: UpdateBucket's condition failed; the error is a
	// *ConflictError carrying the stored bucket.
	ErrConflict = errors.New("conflict")
	// ErrLeaseHeld: another holder has the lease; the error is a
	// *LeaseHeldError.
	ErrLeaseHeld = errors.New("lease held")
	// ErrInvalid: an argument breaks the rules of Bucket or Lease; nothing
	// was stored.
	ErrInvalid = errors.New("invalid")
	// ErrClosed is returned by every method of a closed store.
	ErrClosed = errors.New("metadata store closed")
)

// ConflictError is UpdateBucket's failed condition, with the bucket as it
// is stored now: the caller decides again from Current.
type ConflictError struct {
	Current Bucket
	// Reason says which condition failed: the version moved on, or a
	// leader change did not raise the epoch.
	Reason string
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("update %s: conflict: %s (stored: version %d, leader %q, epoch %d)",
		e.Current.Key, e.Reason, e.Current.Version, e.Current.Leader, e.Current.Epoch)
}

func (e *ConflictError) Unwrap() error { return ErrConflict }

// LeaseHeldError is AcquireLease's refusal: another holder has the lease
// until Expires (the store's expiry, on the store's clock).
type LeaseHeldError struct {
	Name    string
	Holder  string
	Expires time.Time
}

func (e *LeaseHeldError) Error() string {
	return fmt.Sprintf("lease %q held by %q until %s", e.Name, e.Holder, e.Expires.UTC().Format(time.RFC3339Nano))
}

func (e *LeaseHeldError) Unwrap() error { return ErrLeaseHeld }

// Store is the linearizable store of cluster decisions. Every write is one
// transaction whose condition is checked inside it. Implementations:
// *SQLite (one node) and *Postgres (a cluster); both are safe for
// concurrent use.
//
// A write that fails with ErrConflict, ErrExists, ErrNotFound, ErrInvalid
// or ErrLeaseHeld stored nothing. Any other error (the connection broke,
// the context ended) leaves the outcome unknown: the write may have
// committed, so the caller reads again before deciding. Calls wait as long
// as their context lets them: give them a deadline.
type Store interface {
	// CreateBuckets stores new buckets (Version 1) all or none; ErrExists
	// when one is already stored.
	CreateBuckets(ctx context.Context, bs []Bucket) error
	// Bucket returns one bucket; ErrNotFound.
	Bucket(ctx context.Context, k BucketKey) (Bucket, error)
	// Buckets returns a table's buckets ordered by partition (bytewise),
	// bucket.
	Buckets(ctx context.Context, tableID int64) ([]Bucket, error)
	// AllBuckets returns every bucket, ordered by table, partition, bucket.
	AllBuckets(ctx context.Context) ([]Bucket, error)
	// UpdateBucket stores b if the stored Version equals b.Version and
	// b.Epoch >= the stored epoch, greater when b.Leader differs from the
	// stored leader; it returns the stored bucket (Version+1). ErrConflict
	// (a *ConflictError with the stored bucket) when the condition fails,
	// ErrNotFound when there is no such bucket.
	UpdateBucket(ctx context.Context, b Bucket) (Bucket, error)
	// DeleteTable deletes a table's buckets; none is no error.
	DeleteTable(ctx context.Context, tableID int64) error
	// Changes returns a counter that increases with every write that
	// changes what a reader sees: every bucket write and every change of a
	// lease's holder (not a renewal, which only moves the expiry). Read it
	// before loading; when it moves, load again.
	Changes(ctx context.Context) (int64, error)
	// AcquireLease takes or renews lease name for holder for ttl. A live
	// lease of another holder: ErrLeaseHeld (a *LeaseHeldError). A new
	// holder gets a token greater than every earlier token of the lease;
	// a holder that still holds the lease (even past its expiry, if nobody
	// took it since) keeps its token.
	AcquireLease(ctx context.Context, name, holder string, ttl time.Duration) (Lease, error)
	// ReleaseLease gives l up if l.Holder still holds it with l.Token;
	// ErrNotFound otherwise. The token is kept: the next holder's is
	// greater.
	ReleaseLease(ctx context.Context, l Lease) error
	// Lease returns the live lease name (holder and token; Expires on the
	// store's clock); ErrNotFound when none is live.
	Lease(ctx context.Context, name string) (Lease, error)
	// Secret returns the value stored under name, storing fresh first when
	// there is none: every caller gets the first value stored, whatever
	// fresh it passed. The cluster's shared keys (the Flight ticket key)
	// live here; fresh must not be empty.
	Secret(ctx context.Context, name string, fresh []byte) ([]byte, error)
	Close() error
}

var (
	_ Store = (*SQLite)(nil)
	_ Store = (*Postgres)(nil)
	_ Store = (*Mem)(nil)
)

// validateBucket checks the rules of Bucket that need no stored state.
func validateBucket(b Bucket) error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if b.Key.TableID < 0 {
		bad("table id %d is negative", b.Key.TableID)
	}
	if b.Key.Bucket < 0 {
		bad("bucket %d is negative", b.Key.Bucket)
	}
	if b.Epoch < 0 {
		bad("epoch %d is negative", b.Epoch)
	}
	if len(b.Replicas) == 0 {
		bad("no replicas")
	}
	if err := checkIDs("replicas", b.Replicas); err != nil {
		errs = append(errs, err)
	}
	if err := checkIDs("isr", b.ISR); err != nil {
		errs = append(errs, err)
	}
	for _, id := range b.ISR {
		if !slices.Contains(b.Replicas, id) {
			bad("isr member %q is not a replica", id)
		}
	}
	if b.Leader != "" && !slices.Contains(b.Replicas, b.Leader) {
		bad("leader %q is not a replica", b.Leader)
	}
	if b.Leader != "" && !slices.Contains(b.ISR, b.Leader) {
		bad("leader %q is not in the isr", b.Leader)
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s: %w: %w", b.Key, ErrInvalid, errors.Join(errs...))
	}
	return nil
}

// checkIDs checks a list of node ids: none empty, no duplicates.
func checkIDs(what string, ids []string) error {
	seen := make(map[string]bool, len(ids))
	for _, id := range ids {
		if id == "" {
			return fmt.Errorf("%s holds an empty node id", what)
		}
		if seen[id] {
			return fmt.Errorf("%s holds %q twice", what, id)
		}
		seen[id] = true
	}
	return nil
}

// validateLease checks AcquireLease's arguments.
func validateLease(name, holder string, ttl time.Duration) error {
	var errs []error
	if name == "" {
		errs = append(errs, errors.New("empty lease name"))
	}
	if holder == "" {
		errs = append(errs, errors.New("empty holder"))
	}
	if ttl < time.Millisecond {
		errs = append(errs, fmt.Errorf("ttl %s is under 1ms", ttl))
	}
	if len(errs) > 0 {
		return fmt.Errorf("lease %q: %w: %w", name, ErrInvalid, errors.Join(errs...))
	}
	return nil
}

// sortBuckets orders bs by key.
func sortBuckets(bs []Bucket) {
	slices.SortFunc(bs, func(a, b Bucket) int { return a.Key.compare(b.Key) })
}
