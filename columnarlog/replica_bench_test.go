package columnarlog

import (
	"testing"
)

// BenchmarkAppendReplica compares, on the real filesystem, a follower
// storing a leader's batches (AppendReplica: every batch checked, stored
// unchanged) with the leader appending them (TableLog.Append: checked and
// stamped), one 12 KiB batch of 1,024 rows a call, with and without fsync.
func BenchmarkAppendReplica(b *testing.B) {
	for _, sync := range []SyncPolicy{SyncAlways, SyncNever} {
		for _, replica := range []bool{false, true} {
			name := "append"
			if replica {
				name = "append-replica"
			}
			b.Run(sync.String()+"/"+name, func(b *testing.B) {
				tl, err := OpenTable(b.TempDir(), 1, Options{Sync: sync, Replicated: true})
				if err != nil {
					b.Fatal(err)
				}
				defer tl.Close()
				batch := payload(b, 1, 1024, 12<<10)
				b.SetBytes(int64(len(batch)))
				b.ResetTimer()
				for i := range b.N {
					if !replica {
						if _, err := tl.Append([][]Batch{{batch}}); err != nil {
							b.Fatal(err)
						}
						continue
					}
					// As the leader stamped it.
					batch.stamp(int64(i)*1024, int64(i), 1)
					if err := tl.AppendReplica(0, []Batch{batch}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
