package meta

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/lakestream/lakestream/internal/pgtest"
)

// The cost of the store's two frequent writes: a bucket update (an ISR
// change, a leader change) and a lease renewal.
//
//	go test -run '^$' -bench . ./cluster/meta

func BenchmarkSQLite(b *testing.B) {
	benchStore(b, func(b *testing.B) Store {
		s, err := OpenSQLite(filepath.Join(b.TempDir(), "meta.db"))
		if err != nil {
			b.Fatal(err)
		}
		return s
	})
}

func BenchmarkPostgres(b *testing.B) {
	// PostgreSQL's defaults: fsync and synchronous commit on.
	srv := pgtest.ForTest(b, pgtest.Options{})
	n := 0
	benchStore(b, func(b *testing.B) Store {
		n++
		uri, err := srv.CreateDatabase(context.Background(), fmt.Sprintf("bench_%d", n))
		if err != nil {
			b.Fatal(err)
		}
		s, err := OpenPostgres(context.Background(), uri)
		if err != nil {
			b.Fatal(err)
		}
		return s
	})
}

func benchStore(b *testing.B, open func(b *testing.B) Store) {
	ctx := context.Background()
	b.Run("UpdateBucket", func(b *testing.B) {
		s := open(b)
		defer closeStore(b, s)
		if err := s.CreateBuckets(ctx, []Bucket{bucket(1, "", 0, "n1", 0)}); err != nil {
			b.Fatal(err)
		}
		cur, err := s.Bucket(ctx, BucketKey{TableID: 1})
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			cur.Epoch++
			if cur, err = s.UpdateBucket(ctx, cur); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("RenewLease", func(b *testing.B) {
		s := open(b)
		defer closeStore(b, s)
		for b.Loop() {
			if _, err := s.AcquireLease(ctx, "controller", "n1", time.Minute); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Changes", func(b *testing.B) {
		s := open(b)
		defer closeStore(b, s)
		for b.Loop() {
			if _, err := s.Changes(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
}
