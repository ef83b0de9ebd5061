package flightsrv

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// The budget grants charges in arrival order: a large charge waiting at
// the head is not overtaken by smaller ones that would fit.
func TestBudgetGrantsInOrder(t *testing.T) {
	b := newBudget(100)
	ctx := context.Background()
	if n, err := b.acquire(ctx, 60, time.Minute, nil); err != nil || n != 60 {
		t.Fatalf("first charge: %d %v", n, err)
	}
	big := make(chan error, 1)
	go func() { _, err := b.acquire(ctx, 70, time.Minute, nil); big <- err }()
	waitFor(t, func() bool { _, _, w := b.stats(); return w == 1 })
	small := make(chan error, 1)
	go func() { _, err := b.acquire(ctx, 10, time.Minute, nil); small <- err }()
	waitFor(t, func() bool { _, _, w := b.stats(); return w == 2 })
	select {
	case <-small:
		t.Fatal("a small charge overtook the large one waiting before it")
	default:
	}
	b.release(60)
	if err := <-big; err != nil {
		t.Fatal(err)
	}
	if err := <-small; err != nil {
		t.Fatal(err)
	}
	if used, peak, waiting := b.stats(); used != 80 || peak != 80 || waiting != 0 {
		t.Fatalf("used %d, peak %d, waiting %d; want 80, 80, 0", used, peak, waiting)
	}
}

// A charge gives up after the timeout with a budgetError naming the
// budget, or with the context's error, and leaves nothing charged; one
// larger than the budget is cut to it and waits for all of it.
func TestBudgetTimeoutCancelAndClamp(t *testing.T) {
	b := newBudget(100)
	ctx := context.Background()
	if _, err := b.acquire(ctx, 100, time.Minute, nil); err != nil {
		t.Fatal(err)
	}
	_, err := b.acquire(ctx, 1, 10*time.Millisecond, nil)
	var be budgetError
	if !errors.As(err, &be) || !strings.Contains(err.Error(), "budget of 100 bytes") || !strings.Contains(err.Error(), "10ms") {
		t.Fatalf("a charge past the timeout: %v, want a budgetError naming the budget and the wait", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := b.acquire(cctx, 1, time.Minute, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled charge: %v", err)
	}
	got := make(chan int64, 1)
	go func() { n, _ := b.acquire(ctx, 1000, time.Minute, nil); got <- n }()
	waitFor(t, func() bool { _, _, w := b.stats(); return w == 1 })
	b.release(100)
	if n := <-got; n != 100 {
		t.Fatalf("a charge of 1000 in a budget of 100 was charged %d, want 100", n)
	}
	b.release(100)
	if used, _, waiting := b.stats(); used != 0 || waiting != 0 {
		t.Fatalf("after every release: used %d, waiting %d", used, waiting)
	}
}

// waitFor waits until cond holds, failing the test after 10s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 10s")
		}
		time.Sleep(time.Millisecond) // polling a condition that has no event to wait on
	}
}
