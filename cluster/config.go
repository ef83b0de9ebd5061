package cluster

import (
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// Config is a node's replication settings. Each field documents its
// default (EnsureDefaults).
type Config struct {
	// NodeID is this node's id in the cluster. Required.
	NodeID string
	// ReplicaLagMax takes out of the in-sync set a follower that has not
	// reached the leader's end for this long (Kafka's
	// replica.lag.time.max.ms, 30 s there). While a failed follower is
	// still in the set, acknowledgements wait for it, so this bounds the
	// stall a follower's failure causes when gossip has not yet declared
	// it dead. Default 5s.
	ReplicaLagMax time.Duration
	// FetchMaxBytes bounds one fetch response (at least one batch is sent
	// whatever its size). Default 8 MiB.
	FetchMaxBytes int
	// FetchMaxWait is how long a leader holds a fetch at its end waiting
	// for new batches before answering with none (the follower then asks
	// again, which also tells the leader it is alive). Default 500ms.
	FetchMaxWait time.Duration
	// RetryBackoff and RetryBackoffMax space a follower's retries after a
	// failed fetch, doubling from the first to the second. Defaults 50ms
	// and 1s.
	RetryBackoff, RetryBackoffMax time.Duration
	// Now is the clock of the lag checks. Default time.Now.
	Now    func() time.Time
	Logger *slog.Logger
}

// EnsureDefaults fills unset fields.
func (c *Config) EnsureDefaults() {
	if c.ReplicaLagMax == 0 {
		c.ReplicaLagMax = 5 * time.Second
	}
	if c.FetchMaxBytes == 0 {
		c.FetchMaxBytes = 8 << 20
	}
	if c.FetchMaxWait == 0 {
		c.FetchMaxWait = 500 * time.Millisecond
	}
	if c.RetryBackoff == 0 {
		c.RetryBackoff = 50 * time.Millisecond
	}
	if c.RetryBackoffMax == 0 {
		c.RetryBackoffMax = time.Second
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Validate reports every problem at once.
func (c *Config) Validate() error {
	var errs []error
	if c.NodeID == "" {
		errs = append(errs, errors.New("replication: a node id is required"))
	}
	for name, d := range map[string]time.Duration{"replica lag max": c.ReplicaLagMax, "fetch max wait": c.FetchMaxWait,
		"retry backoff": c.RetryBackoff, "retry backoff max": c.RetryBackoffMax} {
		if d <= 0 {
			errs = append(errs, fmt.Errorf("replication: %s %s: want a positive duration", name, d))
		}
	}
	if c.FetchMaxBytes < 64<<10 || c.FetchMaxBytes > maxFetchBytes {
		errs = append(errs, fmt.Errorf("replication: fetch max bytes %d: want 64KiB to %d", c.FetchMaxBytes, maxFetchBytes))
	}
	if c.RetryBackoffMax < c.RetryBackoff {
		errs = append(errs, fmt.Errorf("replication: retry backoff max %s below the first backoff %s", c.RetryBackoffMax, c.RetryBackoff))
	}
	return errors.Join(errs...)
}

// maxFetchBytes bounds what a fetch may ask for: a response must fit the
// gRPC message limit between nodes (service.go).
const maxFetchBytes = 64 << 20
