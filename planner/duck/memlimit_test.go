package duck

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestMemAccount drives the estimate with samples and checks whom it
// charges and stops.
func TestMemAccount(t *testing.T) {
	const mib = 1 << 20
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	type sample struct {
		ms   int
		used int64
		live map[string]int // statement → start, in ms
		stop string         // the statement stopped at this sample, "" for none
	}
	for _, c := range []struct {
		name    string
		samples []sample
	}{{
		name: "alone: stopped once over the limit",
		samples: []sample{
			{0, 10 * mib, nil, ""},
			{100, 60 * mib, map[string]int{"bomb": 50}, ""},
			{200, 110 * mib, map[string]int{"bomb": 50}, ""},
			{300, 115 * mib, map[string]int{"bomb": 50}, "bomb"},
		},
	}, {
		name: "a bomb next to short queries: the bomb is stopped, not them",
		samples: []sample{
			{0, 0, map[string]int{"bomb": 0}, ""},
			{100, 50 * mib, map[string]int{"bomb": 0, "q1": 98}, ""},
			{200, 90 * mib, map[string]int{"bomb": 0, "q2": 199}, ""},
			{300, 130 * mib, map[string]int{"bomb": 0, "q3": 295}, "bomb"},
		},
	}, {
		name: "an ended statement's memory, freed late, is not charged to the next",
		samples: []sample{
			{0, 0, map[string]int{"big": 0}, ""},
			{100, 90 * mib, map[string]int{"big": 0}, ""},
			// big ends; DuckDB frees its 90 MiB only over the next
			// samples while next grows to 40 MiB.
			{200, 90 * mib, map[string]int{"next": 150}, ""},
			{300, 100 * mib, map[string]int{"next": 150}, ""},
			{400, 40 * mib, map[string]int{"next": 150}, ""},
			{500, 95 * mib, map[string]int{"next": 150}, ""},
			{600, 150 * mib, map[string]int{"next": 150}, "next"},
		},
	}, {
		name: "an ended statement's memory never freed (a cache) is nobody's",
		samples: []sample{
			{0, 0, map[string]int{"big": 0}, ""},
			{100, 95 * mib, map[string]int{"big": 0}, ""},
			{200, 95 * mib, map[string]int{"q": 150}, ""},
			{1200, 95 * mib, map[string]int{"q": 150}, ""},
			{1300, 150 * mib, map[string]int{"q": 150}, ""},
			{1400, 200 * mib, map[string]int{"q": 150}, "q"},
		},
	}, {
		name: "memory freed lowers the charges",
		samples: []sample{
			{0, 0, map[string]int{"a": 0}, ""},
			{100, 90 * mib, map[string]int{"a": 0}, ""},
			{200, 20 * mib, map[string]int{"a": 0}, ""},
			{300, 99 * mib, map[string]int{"a": 0}, ""},
			{400, 101 * mib, map[string]int{"a": 0}, "a"},
		},
	}} {
		t.Run(c.name, func(t *testing.T) {
			a := newMemAccount[string](100*time.Millisecond, 100*mib)
			for _, s := range c.samples {
				live := map[string]time.Time{}
				for k, ms := range s.live {
					live[k] = at(ms)
				}
				victim, held, stop := a.tick(at(s.ms), s.used, live)
				if s.stop == "" && stop {
					t.Fatalf("at %dms: stopped %s holding %d MiB", s.ms, victim, held>>20)
				}
				if s.stop != "" && (!stop || victim != s.stop) {
					t.Fatalf("at %dms: stopped %q (%v), want %s; charges %v", s.ms, victim, stop, s.stop, a.charges)
				}
			}
		})
	}
}

// TestQueryMemoryLimit: a query that builds a large sort is stopped with
// a *QueryMemoryError, while short queries beside it succeed, and the
// engine serves the next query.
func TestQueryMemoryLimit(t *testing.T) {
	e, err := New(newFakeResolver(), Options{Threads: 2, MemoryLimit: "1GiB", QueryMemoryLimit: 64 << 20,
		MemoryCheckEvery: 20 * time.Millisecond, QueryTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	var small int
	var smallErr error
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			if _, err := tryQuery(e, "SELECT sum(range) FROM range(1000)"); err != nil {
				smallErr = err
				return
			}
			small++
		}
	}()
	// A cross join materialised by a sort: gigabytes.
	_, err = tryQuery(e, "SELECT a.range, b.range FROM range(100000) a, range(100000) b ORDER BY a.range * b.range DESC")
	close(done)
	wg.Wait()
	var me *QueryMemoryError
	if !errors.As(err, &me) || !strings.Contains(err.Error(), "query memory limit of 64 MiB exceeded") {
		t.Fatalf("the bomb: %v, want a QueryMemoryError", err)
	}
	if smallErr != nil || small == 0 {
		t.Fatalf("short queries beside the bomb: %d ran, then %v", small, smallErr)
	}
	wantRows(t, query(t, e, "SELECT count(*) FROM range(1000)"), "1000")
	used, err := e.MemoryUsed()
	if err != nil || used > 64<<20 {
		t.Fatalf("engine memory after the bomb: %d bytes (%v)", used, err)
	}
}
