package flightsrv

import (
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc/peer"

	"github.com/lakestream/lakestream/audit"
	"github.com/lakestream/lakestream/auth"
	"github.com/lakestream/lakestream/catalog"
	"github.com/lakestream/lakestream/planner"
)

// callCtx is the context of a call by user (none: "") from addr.
func callCtx(user, addr string) context.Context {
	ctx := peer.NewContext(context.Background(), &peer.Peer{Addr: &net.TCPAddr{IP: net.IPv4(10, 0, 0, 1), Port: len(addr) + 1000}})
	if user != "" {
		ctx = auth.WithIdentity(ctx, auth.Identity{User: user, Method: auth.MethodToken})
	}
	return ctx
}

// TestLimiterModel drives the limiter with random acquires and releases
// and checks each answer against a model: a plain count per key.
func TestLimiterModel(t *testing.T) {
	l := newLimiter(Limits{QueriesPerUser: 3, SubscriptionsPerSession: 2, PreparedPerSession: 1})
	type held struct {
		kind    limitKind
		who     string
		release func()
	}
	var open []held
	model := map[limitKey]int{}
	users := []string{"", "alice", "bob"}
	addrs := []string{"a", "bb", "ccc"}
	rng := rand.New(rand.NewPCG(1, 2))
	for step := range 5000 {
		if len(open) > 0 && rng.IntN(2) == 0 {
			i := rng.IntN(len(open))
			h := open[i]
			h.release()
			h.release() // twice is once
			model[limitKey{h.kind, h.who}]--
			open = append(open[:i], open[i+1:]...)
			continue
		}
		kind := limitKind(rng.IntN(3))
		ctx := callCtx(users[rng.IntN(3)], addrs[rng.IntN(3)])
		who := whoOf(ctx, kind)
		k := limitKey{kind, who}
		release, err := l.acquire(ctx, kind)
		if fits := model[k] < l.max(kind); fits != (err == nil) {
			t.Fatalf("step %d: %v for %s holding %d of %d: %v", step, kind, who, model[k], l.max(kind), err)
		}
		var le *limitError
		if err != nil && (!errors.As(err, &le) || le.who != who) {
			t.Fatalf("step %d: error %v", step, err)
		}
		if err == nil {
			model[k]++
			open = append(open, held{kind, who, release})
		}
		if got := l.held(kind, who); got != model[k] {
			t.Fatalf("step %d: holds %d, model %d", step, got, model[k])
		}
	}
	for _, h := range open {
		h.release()
	}
	if n := len(l.mu.held); n != 0 {
		t.Fatalf("%d keys left after every release", n)
	}
}

// TestLimiterConcurrent: under concurrent acquires no key ever holds more
// than its cap (run with -race).
func TestLimiterConcurrent(t *testing.T) {
	l := newLimiter(Limits{QueriesPerUser: 4})
	ctx := callCtx("alice", "x")
	var inside, most atomic.Int64
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 500 {
				release, err := l.acquire(ctx, limitQueries)
				if err != nil {
					continue
				}
				n := inside.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				inside.Add(-1)
				release()
			}
		}()
	}
	wg.Wait()
	if m := most.Load(); m > 4 {
		t.Fatalf("%d inside at once, cap 4", m)
	}
	if got := l.held(limitQueries, `user "alice"`); got != 0 {
		t.Fatalf("holds %d after all released", got)
	}
}

func TestAuditKind(t *testing.T) {
	for sql, want := range map[string]audit.Kind{
		"CREATE TABLE t (a INT)":          audit.KindDDL,
		"DROP VIEW v":                     audit.KindDDL,
		"grant SELECT ON TABLE t TO bob":  audit.KindPrivilege,
		"REVOKE ALL ON DATABASE d FROM x": audit.KindPrivilege,
		"CREATE ROLE analysts":            audit.KindPrivilege,
		"drop role analysts":              audit.KindPrivilege,
	} {
		if got := auditKind(&planner.Statement{SQL: sql}); got != want {
			t.Errorf("%s: %s, want %s", sql, got, want)
		}
	}
	if got := auditKind(&planner.Statement{SQL: "CREATE USER u WITH PASSWORD 'x'", DDL: &catalog.CreateUser{}}); got != audit.KindUser {
		t.Errorf("CREATE USER: %s", got)
	}
}
