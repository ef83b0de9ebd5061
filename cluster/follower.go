package cluster

import (
	"context"
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

// run reconciles the log with the leader's epoch history, then fetches,
// until ctx ends: the node ends the loop when it applies another
// assignment. A refusal — the node asked does not lead at this epoch, or
// not yet — is retried with backoff like a failed call: either that node
// has not applied the election yet, or a newer assignment is in the store
// and will replace this loop.
func (f *follower) run(ctx context.Context) error {
	backoff := f.cfg.RetryBackoff
	for ctx.Err() == nil {
		err := f.reconcile(ctx)
		if err == nil {
			err = f.fetchLoop(ctx)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		level := slog.LevelDebug
		if backoff >= f.cfg.RetryBackoffMax {
			level = slog.LevelWarn // failing for a while, not a blip
		}
		f.logger.Log(ctx, level, "replica fetch", "bucket", f.ref.String(), "leader", f.leaderAddr, "error", err)
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, f.cfg.RetryBackoffMax)
	}
	return ctx.Err()
}

// reconcile cuts the tail that the leader's log does not have, found from
// the two epoch histories (Log.Divergence asks the leader where its epochs
// end until they agree).
func (f *follower) reconcile(ctx context.Context) error {
	to, err := f.log.Divergence(func(epoch int32) (int32, int64, error) {
		resp, err := f.tr.EndForEpoch(ctx, f.leaderAddr, EpochRequest{BucketRef: f.ref, Epoch: f.epoch, Asked: epoch})
		if err != nil {
			return 0, 0, err
		}
		if err := f.check(resp.Code, resp.Epoch, resp.Message); err != nil {
			return 0, 0, err
		}
		return resp.FoundEpoch, resp.EndOffset, nil
	})
	if err != nil {
		return err
	}
	// Cut even at the end: the cut also drops an epoch this replica led
	// without appending to it, which would refuse the leader's batches.
	if durable := f.log.Durable(); to <= durable {
		if to < durable {
			f.logger.Info("replica truncates a divergent tail", "bucket", f.ref.String(), "from", durable, "to", to, "epoch", f.log.LastEpoch(), "leader_epoch", f.epoch)
		}
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
		if resp.Code == CodeOutOfRange && resp.Epoch == f.epoch && q.Offset < resp.Start {
			// The leader deleted what this replica lacks (retention,
			// once tiered): start the log again at the leader's start.
			f.logger.Warn("replica restarts its log at the leader's start", "bucket", f.ref.String(), "end", q.Offset, "leader_start", resp.Start, "leader_epoch", f.epoch)
			if err := f.log.RestartAt(resp.Start); err != nil {
				return fmt.Errorf("restart %s at %d: %w", f.ref, resp.Start, err)
			}
			continue
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

// check turns a response's code into an error to retry after.
func (f *follower) check(code Code, epoch int32, msg string) error {
	if code == CodeOK {
		return nil
	}
	return fmt.Errorf("%s from the node asked (at epoch %d, ours %d): %s", code, epoch, f.epoch, msg)
}
