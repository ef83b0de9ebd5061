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

// check turns a response's code into an error to retry after.
func (f *follower) check(code Code, epoch int32, msg string) error {
	if code == CodeOK {
		return nil
	}
	return fmt.Errorf("%s from the node asked (at epoch %d, ours %d): %s", code, epoch, f.epoch, msg)
}
