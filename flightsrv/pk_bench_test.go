package flightsrv_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sort"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// The lookup benchmarks time what a client of a prepared
// SELECT * FROM t WHERE id = ? does per lookup (bind, execute, fetch:
// the three RPCs of ADBC's execute) against a primary-key table of
// pkBenchKeys keys over the OS filesystem, from clients=N concurrent
// connections; they report p50 and p99 per lookup (µs) besides ns/op.
// keys=K binds K keys per call (a batch lookup) and reports keys/s.
//
//	go test -run '^$' -bench 'PKLookup' -benchtime 2000x ./flightsrv/
const pkBenchKeys = 200_000

func BenchmarkPKLookup(b *testing.B) {
	ts := startServer(b, serverConfig{dir: b.TempDir(), goMem: true})
	ctx := context.Background()
	ts.mustExec("CREATE TABLE ev (id BIGINT NOT NULL, amount DOUBLE, kind VARCHAR, ts TIMESTAMPTZ, PRIMARY KEY (id)) WITH ('bucket.num'='4')")
	for from := 0; from < pkBenchKeys; from += benchBatchRows {
		rec := benchRecord(from)
		if n := min(benchBatchRows, pkBenchKeys-from); n < benchBatchRows {
			s := rec.NewSlice(0, int64(n))
			rec.Release()
			rec = s
		}
		ts.mustIngest("ev", "append", rec)
	}
	for _, tc := range []struct{ clients, keys int }{{1, 1}, {8, 1}, {1, 1000}, {8, 1000}} {
		b.Run(fmt.Sprintf("clients=%d/keys=%d", tc.clients, tc.keys), func(b *testing.B) {
			benchLookups(b, ts, ctx, tc.clients, tc.keys)
		})
	}
}

func benchLookups(b *testing.B, ts *testServer, ctx context.Context, clients, keys int) {
	preps := make([]*flightsql.PreparedStatement, clients)
	cls := make([]*flightsql.Client, clients)
	for c := range clients {
		cls[c] = dial(b, ts.addr)
		defer cls[c].Close()
		p, err := cls[c].Prepare(ctx, "SELECT * FROM ev WHERE id = ?")
		if err != nil {
			b.Fatal(err)
		}
		defer p.Close(ctx)
		preps[c] = p
	}
	lat := make([][]time.Duration, clients)
	var wg sync.WaitGroup
	var failed sync.Once
	per := b.N/clients + 1
	cpu0 := processCPU(b)
	b.ResetTimer()
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(c), 1))
			ids := make([]int64, keys)
			for range per {
				start := rng.Int64N(pkBenchKeys)
				for i := range ids {
					ids[i] = (start + int64(i)*7919) % pkBenchKeys
				}
				t0 := time.Now()
				if err := benchLookup(ctx, cls[c], preps[c], ids, nil); err != nil {
					failed.Do(func() { b.Error(err) })
					return
				}
				lat[c] = append(lat[c], time.Since(t0))
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	cpu := processCPU(b) - cpu0
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	if len(all) == 0 {
		return
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	b.ReportMetric(float64(all[len(all)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(all[len(all)*99/100].Microseconds()), "p99-µs")
	b.ReportMetric(float64(len(all)*keys)/b.Elapsed().Seconds(), "keys/s")
	b.ReportMetric(float64(runtime.NumGoroutine()), "goroutines")
	// The process's CPU per lookup, client and server: with N clients on
	// C cores a lookup waits behind about N × this ÷ C.
	b.ReportMetric(float64(cpu.Microseconds())/float64(len(all)), "cpu-µs/call")
}

// processCPU is the CPU time (user and system) the process has used.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchLookup binds ids, executes and fetches, checking one row per key
// that exists (nil: every key) in order. Its context ends with the call: arrow-go's prepared Execute
// does not read the bind DoPut to its end, and gRPC frees a client stream
// only then or when its context ends (else a goroutine per call leaks).
func benchLookup(ctx context.Context, cl *flightsql.Client, p *flightsql.PreparedStatement, ids []int64, exists func(int64) bool) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	want := ids
	if exists != nil {
		want = nil
		for _, id := range ids {
			if exists(id) {
				want = append(want, id)
			}
		}
	}
	bld := array.NewInt64Builder(memory.DefaultAllocator)
	bld.AppendValues(ids, nil)
	col := bld.NewArray()
	bld.Release()
	params := array.NewRecordBatch(p.ParameterSchema(), []arrow.Array{col}, int64(len(ids)))
	col.Release()
	p.SetParameters(params)
	params.Release()
	info, err := p.Execute(ctx)
	if err != nil {
		return err
	}
	got := 0
	for _, ep := range info.GetEndpoint() {
		rdr, err := cl.DoGet(ctx, ep.GetTicket())
		if err != nil {
			return err
		}
		for rdr.Next() {
			for _, id := range rdr.RecordBatch().Column(0).(*array.Int64).Int64Values() {
				if got >= len(want) || id != want[got] {
					rdr.Release()
					return fmt.Errorf("row %d: key %d", got, id)
				}
				got++
			}
		}
		err = rdr.Err()
		rdr.Release()
		if err != nil {
			return err
		}
	}
	if got != len(want) {
		return fmt.Errorf("%d rows for %d keys", got, len(want))
	}
	return nil
}
