package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// Transport reaches a bucket's leader: the fetch handler of service.go over
// gRPC between nodes, or a direct call in tests.
type Transport interface {
	Fetch(ctx context.Context, leaderAddr string, q FetchRequest) (FetchResponse, error)
	EndForEpoch(ctx context.Context, leaderAddr string, q EpochRequest) (EpochResponse, error)
}

// errStaleView ends a follower loop whose view of the bucket is older than
// the leader's: the node refreshes its assignments and starts anew.
var errStaleView = errors.New("the bucket's leadership changed")

// follower copies one bucket's log from its leader.
type follower struct {
	self       string
	ref        BucketRef
	log        Log
	epoch      int32
	leaderAddr string
	tr         Transport
	cfg        Config
	logger     *slog.Logger
}

// run reconciles the log with the leader's epoch history, then fetches
// until ctx ends or the leader says the view is stale.
func (f *follower) run(ctx context.Context) error {
	backoff := f.cfg.RetryBackoff
	for ctx.Err() == nil {
		err := f.reconcile(ctx)
		if err == nil {
			err = f.fetchLoop(ctx)
		}
		if errors.Is(err, errStaleView) || ctx.Err() != nil {
			return err
		}
		f.logger.Warn("replica fetch", "bucket", f.ref.String(), "leader", f.leaderAddr, "error", err)
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, f.cfg.RetryBackoffMax)
	}
	return ctx.Err()
}

// reconcile cuts the tail that the leader's log does not have, found from
// the epoch histories (Kafka's KIP-279): where the leader's copy of the
// follower's last epoch ends, or, when the leader never had that epoch,
// where the last epoch both had ends.
func (f *follower) reconcile(ctx context.Context) error {
	last := f.log.LastEpoch()
	if last < 0 {
		return nil
	}
	resp, err := f.tr.EndForEpoch(ctx, f.leaderAddr, EpochRequest{BucketRef: f.ref, Epoch: f.epoch, Asked: last})
	if err != nil {
		return err
	}
	if err := f.check(resp.Code, resp.Epoch, resp.Message); err != nil {
		return err
	}
	to := resp.EndOffset
	switch {
	case resp.FoundEpoch < 0:
		to = f.log.Start() // nothing of ours is in the leader's history
	case resp.FoundEpoch < last:
		_, ours := f.log.EndForEpoch(resp.FoundEpoch)
		to = min(to, ours)
	}
	if to < f.log.Durable() {
		f.logger.Info("replica truncates a divergent tail", "bucket", f.ref.String(), "from", f.log.Durable(), "to", to, "epoch", last, "leader_epoch", resp.Epoch)
		if err := f.log.Truncate(to); err != nil {
			return fmt.Errorf("truncate %s to %d: %w", f.ref, to, err)
		}
	}
	return nil
}

// fetchLoop fetches from the follower's end and appends what comes.
func (f *follower) fetchLoop(ctx context.Context) error {
	for ctx.Err() == nil {
		q := FetchRequest{BucketRef: f.ref, Epoch: f.epoch, Offset: f.log.Durable(), MaxBytes: int32(f.cfg.FetchMaxBytes),
			MaxWaitMs: int32(f.cfg.FetchMaxWait / time.Millisecond), Follower: f.self}
		resp, err := f.tr.Fetch(ctx, f.leaderAddr, q)
		if err != nil {
			return err
		}
		if err := f.check(resp.Code, resp.Epoch, resp.Message); err != nil {
			return err
		}
		if len(resp.Batches) > 0 {
			if err := f.log.AppendReplica(resp.Batches); err != nil {
				return fmt.Errorf("append to %s at %d: %w", f.ref, q.Offset, err)
			}
		}
		f.log.SetHighWatermark(min(resp.HW, f.log.Durable()))
	}
	return ctx.Err()
}

// check turns a response's code into what the follower does next.
func (f *follower) check(code Code, epoch int32, msg string) error {
	switch code {
	case CodeOK:
		return nil
	case CodeFencedEpoch, CodeNotLeader:
		return fmt.Errorf("%w: %s from the leader at epoch %d (%s)", errStaleView, code, epoch, msg)
	case CodeOutOfRange:
		// Our end is past the leader's (a tail it never had that
		// reconcile did not find) or below its retained log.
		return fmt.Errorf("%s: %s", code, msg)
	default:
		return fmt.Errorf("%s: %s", code, msg)
	}
}
