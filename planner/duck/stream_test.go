package duck

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"testing"
)

// TestStreamingResult: a result of many chunks arrives as many batches,
// records larger than a DuckDB chunk are split, and nothing is lost.
func TestStreamingResult(t *testing.T) {
	mem := checkedAlloc(t)
	r := newFakeResolver()
	rec := eventsRecord(mem, 10_000)
	defer rec.Release()
	addTable(t, r, "default.big", rec, 5_000) // records of 3334/3333 rows > 2048
	e := newTestEngine(t, r)

	got := query(t, e, "SELECT id, kind FROM big")
	if len(got.rows) != 10_000 {
		t.Fatalf("%d rows, want 10000", len(got.rows))
	}
	if got.batches < 5 {
		t.Errorf("%d batches, want a streamed result of at least 5", got.batches)
	}
	seen := make([]bool, 10_000)
	for _, row := range got.rows {
		id, err := strconv.Atoi(row[0])
		if err != nil || seen[id] || row[1] != string(rune('a'+id%3)) {
			t.Fatalf("bad or duplicate row %v", row)
		}
		seen[id] = true
	}
	wantRows(t, query(t, e, "SELECT count(*), sum(id), count(DISTINCT kind) FROM big"), "10000|49995000|3")
}

// TestCloseEarlyStopsQuery: closing a stream of an endless scan stops the
// scan: its part stream is closed by the time Close returns.
func TestCloseEarlyStopsQuery(t *testing.T) {
	mem := checkedAlloc(t)
	r := newFakeResolver()
	endless := newEndlessTable("default.endless", 1000, mem)
	r.add(endless)
	e := newTestEngine(t, r)

	s, _, err := e.Query(context.Background(), "SELECT n * 2 AS m FROM endless WHERE n % 7 <> 0")
	if err != nil {
		t.Fatal(err)
	}
	rows := 0
	for range 5 {
		rec, err := s.Next()
		if err != nil {
			t.Fatal(err)
		}
		rows += int(rec.NumRows())
		rec.Release()
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if o, c := endless.opened.Load(), endless.closed.Load(); o != 1 || c != 1 {
		t.Errorf("after Close: part streams opened %d, closed %d; want 1 and 1", o, c)
	}
	if _, err := s.Next(); err == nil {
		t.Error("Next after Close: no error")
	}
	t.Logf("read %d rows of %d produced", rows, endless.batches.Load()*1000)
}

// TestCancelBlockedQuery cancels a query that never produces a row (an
// aggregate over an endless scan): Query or Next returns ctx's error.
func TestCancelBlockedQuery(t *testing.T) {
	mem := checkedAlloc(t)
	r := newFakeResolver()
	endless := newEndlessTable("default.endless", 500, mem)
	r.add(endless)
	e := newTestEngine(t, r)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		s, _, err := e.Query(ctx, "SELECT count(*) FROM endless")
		if err == nil {
			_, err = s.Next()
			s.Close()
		}
		errc <- err
	}()
	for range 5 {
		<-endless.produced // the scan is running
	}
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled query: error %v, want context.Canceled", err)
	}
	if o, c := endless.opened.Load(), endless.closed.Load(); o != 1 || c != 1 {
		t.Errorf("after cancel: part streams opened %d, closed %d; want 1 and 1", o, c)
	}
	// The engine is still usable.
	wantRows(t, query(t, e, "SELECT 1"), "1")
}

// TestCancelStreamingQuery cancels while a result is being read.
func TestCancelStreamingQuery(t *testing.T) {
	mem := checkedAlloc(t)
	r := newFakeResolver()
	r.add(newEndlessTable("default.endless", 1000, mem))
	e := newTestEngine(t, r)

	ctx, cancel := context.WithCancel(context.Background())
	s, _, err := e.Query(ctx, "SELECT n FROM endless")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rec, err := s.Next()
	if err != nil {
		t.Fatal(err)
	}
	rec.Release()
	cancel()
	for i := 0; ; i++ {
		rec, err := s.Next()
		if err != nil {
			if !errors.Is(err, context.Canceled) {
				t.Errorf("Next after cancel: %v, want context.Canceled", err)
			}
			break
		}
		rec.Release()
		if i > 10_000 {
			t.Fatal("stream did not stop after cancel")
		}
	}
}

// TestScanError: an error from a part fails the query, keeping the error.
func TestScanError(t *testing.T) {
	mem := checkedAlloc(t)
	r := newFakeResolver()
	rec := eventsRecord(mem, 30)
	defer rec.Release()
	boom := errors.New("disk on fire")
	ft := newFakeTable("default.broken", rec, 3, 4)
	t.Cleanup(ft.release)
	r.add(&failingTable{fakeTable: ft, err: boom})
	e := newTestEngine(t, r)

	_, err := tryQuery(e, "SELECT sum(id) FROM broken")
	if !errors.Is(err, boom) {
		t.Errorf("error %v, want one wrapping %v", err, boom)
	}
	if o, c := ft.opened.Load(), ft.closed.Load(); o != c {
		t.Errorf("part streams opened %d, closed %d", o, c)
	}
}

// TestConcurrentQueries runs queries from several goroutines at once.
func TestConcurrentQueries(t *testing.T) {
	e, _, _ := withEvents(t)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 5 {
				want := fmt.Sprint(30 - (g+i)%30)
				got, err := tryQuery(e, "SELECT count(*) FROM events WHERE id >= ?", (g+i)%30)
				if err != nil {
					errs <- err
					return
				}
				if got.rows[0][0] != want {
					errs <- fmt.Errorf("count = %s, want %s", got.rows[0][0], want)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestNextAfterEOF: a finished stream keeps returning io.EOF.
func TestNextAfterEOF(t *testing.T) {
	e := newTestEngine(t, newFakeResolver())
	s, _, err := e.Query(context.Background(), "SELECT 42 WHERE false")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for range 2 {
		if rec, err := s.Next(); !errors.Is(err, io.EOF) {
			t.Fatalf("Next = %v, %v; want io.EOF", rec, err)
		}
	}
}

// TestEngineCloseStopsQueries: Close interrupts running queries and closes
// streams their owners left open.
func TestEngineCloseStopsQueries(t *testing.T) {
	mem := checkedAlloc(t)
	r := newFakeResolver()
	endless := newEndlessTable("default.endless", 500, mem)
	r.add(endless)
	e, err := New(r, Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}

	open, _, err := e.Query(context.Background(), "SELECT n FROM endless")
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() {
		s, _, err := e.Query(context.Background(), "SELECT max(n) FROM endless")
		if err == nil {
			_, err = s.Next()
			s.Close()
		}
		errc <- err
	}()
	for range 5 {
		<-endless.produced
	}
	if err := e.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := <-errc; err == nil {
		t.Error("query running during Close: no error")
	}
	if _, err := open.Next(); err == nil {
		t.Error("Next on a stream closed by Engine.Close: no error")
	}
	if err := open.Close(); err != nil {
		t.Errorf("Close of a stream closed by Engine.Close: %v", err)
	}
	if o, c := endless.opened.Load(), endless.closed.Load(); o != c {
		t.Errorf("part streams opened %d, closed %d", o, c)
	}
}
