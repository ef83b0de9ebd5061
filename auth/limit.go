package auth

import (
	"sync"
	"time"
)

// limiter counts failed logins per key (a user name, a peer's host) in a
// token bucket: a key may fail burst times at once, and one more time per
// refill after that. A key whose bucket is empty is refused before its
// password is checked, so a guesser learns nothing while refused. It
// holds no goroutine: time is passed in.
type limiter struct {
	burst  float64
	refill time.Duration
	max    int // keys kept at most; full buckets are forgotten first
	mu     struct {
		sync.Mutex
		m map[string]bucket
	}
}

type bucket struct {
	tokens float64
	at     time.Time
}

func newLimiter(burst int, refill time.Duration, max int) *limiter {
	l := &limiter{burst: float64(burst), refill: refill, max: max}
	l.mu.m = map[string]bucket{}
	return l
}

// levelLocked is key's bucket refilled up to now.
func (l *limiter) levelLocked(key string, now time.Time) bucket {
	b, ok := l.mu.m[key]
	if !ok {
		return bucket{tokens: l.burst, at: now}
	}
	if d := now.Sub(b.at); d > 0 {
		b.tokens = min(l.burst, b.tokens+float64(d)/float64(l.refill))
		b.at = now
	}
	return b
}

// allow reports whether key may try a password now, and if not, how long
// until it may.
func (l *limiter) allow(key string, now time.Time) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.levelLocked(key, now)
	if b.tokens >= 1 {
		return true, 0
	}
	return false, time.Duration((1 - b.tokens) * float64(l.refill))
}

// fail records a failed login of key.
func (l *limiter) fail(key string, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.levelLocked(key, now)
	b.tokens = max(0, b.tokens-1)
	if len(l.mu.m) >= l.max {
		l.pruneLocked(now)
	}
	l.mu.m[key] = b
}

// pruneLocked forgets the keys whose buckets have refilled (they are as if
// never seen), and, should that not make room (a flood of distinct keys),
// every key: the limit then restarts rather than the map growing without
// bound.
func (l *limiter) pruneLocked(now time.Time) {
	for k := range l.mu.m {
		if l.levelLocked(k, now).tokens >= l.burst {
			delete(l.mu.m, k)
		}
	}
	if len(l.mu.m) >= l.max {
		clear(l.mu.m)
	}
}
