package columnarlog

import (
	"fmt"
	"path"
	"sync"
	"testing"
	"time"

	"github.com/lakestream/lakestream/internal/vfs"
)

// BenchmarkAppend measures durable appends on the real filesystem with 1 MiB
// batches, alone and with concurrent appenders sharing fsyncs.
func BenchmarkAppend(b *testing.B) {
	for _, tc := range []struct {
		name    string
		sync    SyncPolicy
		writers int
	}{
		{"fsync/1writer", SyncAlways, 1},
		{"fsync/8writers", SyncAlways, 8},
		{"nosync/1writer", SyncNever, 1},
	} {
		b.Run(tc.name, func(b *testing.B) {
			l := mustOpen(b, b.TempDir(), Options{Sync: tc.sync})
			defer l.Close()
			batch := payload(b, 1, 65536, 1<<20)
			b.SetBytes(int64(len(batch)))
			b.ResetTimer()
			var wg sync.WaitGroup
			per := (b.N + tc.writers - 1) / tc.writers
			for w := 0; w < tc.writers; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					own := append(Batch(nil), batch...)
					for i := 0; i < per; i++ {
						if _, err := l.Append(own); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
		})
	}
}

// BenchmarkScan measures reading stored batches back, from the page cache
// (real filesystem) and from memory. A reader checks every batch it reads
// (CRC-32C of the whole batch, header, offsets); x-raw is, in the same run,
// the time of reading the same files in the same chunks with no check at
// all, over the scan's: the share of a scan's time that is not the checks.
func BenchmarkScan(b *testing.B) {
	for _, fsName := range []string{"os", "mem"} {
		for _, size := range []int{64 << 10, 1 << 20} {
			b.Run(fmt.Sprintf("%s/batch=%dKiB", fsName, size>>10), func(b *testing.B) {
				opts := Options{Sync: SyncNever}
				dir := b.TempDir()
				if fsName == "mem" {
					opts.FS, dir = vfs.NewMem(), "/log"
				}
				l := mustOpen(b, dir, opts)
				defer l.Close()
				const total = 256 << 20
				for i := 0; i < total/size; i++ {
					if _, err := l.Append(payload(b, int64(i), 1000, size)); err != nil {
						b.Fatal(err)
					}
				}
				st := l.Stats()
				b.SetBytes(st.Bytes)
				b.ResetTimer()
				var buf []byte
				var raw time.Duration
				fs := opts.FS
				if fs == nil {
					fs = vfs.Default
				}
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					raw += readRaw(b, fs, dir, buf)
					b.StartTimer()
					r, err := l.NewReader(0)
					if err != nil {
						b.Fatal(err)
					}
					n := 0
					for {
						bs, nb, err := r.Next(buf[:0], 4<<20)
						if err != nil {
							b.Fatal(err)
						}
						buf = nb
						if len(bs) == 0 {
							break
						}
						n += len(bs)
					}
					r.Close()
					if n != total/size {
						b.Fatalf("read %d batches, want %d", n, total/size)
					}
				}
				b.StopTimer()
				b.ReportMetric(float64(raw)/float64(b.Elapsed()), "x-raw")
			})
		}
	}
}

// readRaw reads every segment file of the log in dir in 1 MiB chunks, the
// reader's, into buf, and returns how long that took.
func readRaw(b *testing.B, fs vfs.FS, dir string, buf []byte) time.Duration {
	names, err := fs.List(dir)
	if err != nil {
		b.Fatal(err)
	}
	buf = grow(buf[:0], 1<<20)
	start := time.Now()
	for _, n := range names {
		if _, ok := parseSegmentName(n); !ok {
			continue
		}
		f, err := fs.Open(path.Join(dir, n))
		if err != nil {
			b.Fatal(err)
		}
		for pos := int64(0); ; {
			n, err := f.ReadAt(buf, pos)
			pos += int64(n)
			if err != nil {
				break
			}
		}
		f.Close()
	}
	return time.Since(start)
}

// BenchmarkTableAppend measures durable table writes on the real
// filesystem, each a part in every one of 4 buckets, by 4 concurrent
// writers sharing commit rounds: the shape of an ingest of 4,096-row
// batches (about 12 KiB per bucket once compressed). Its time per write is
// mostly fsync latency, which the parallel sync of data and commit record
// shortens.
func BenchmarkTableAppend(b *testing.B) {
	const buckets, writers = 4, 4
	tl, err := OpenTable(b.TempDir(), buckets, Options{Sync: SyncAlways})
	if err != nil {
		b.Fatal(err)
	}
	defer tl.Close()
	b.SetBytes(buckets * 12 << 10)
	var wg sync.WaitGroup
	per := (b.N + writers - 1) / writers
	b.ResetTimer()
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range per {
				parts := make([][]Batch, buckets)
				for p := range parts {
					parts[p] = []Batch{payload(b, int64(w<<20|i), 1024, 12<<10)}
				}
				if _, err := tl.Append(parts); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}
