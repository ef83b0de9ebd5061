package flightsrv_test

import (
	"fmt"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Ingests that overlap ALTER TABLE ... ADD COLUMN: each write is stored
// under the schema version it was conformed to, or refused with Aborted
// (nothing written, retry), and every acknowledged row reads back. A write
// conformed to the old schema but stored under the new schema id once
// succeeded and then made every read of its bucket fail ("message has 4
// field nodes, the schema needs 5").
func TestIngestRacingAddColumn(t *testing.T) {
	ts := startServer(t, serverConfig{})
	ts.mustExec("CREATE TABLE ev " + eventsCols + " WITH ('bucket.num'='2', 'bucket.key'='id')")
	const writers, alters, rows = 4, 12, 50
	var acked, refused atomic.Int64
	var done atomic.Bool
	runConcurrently(writers+1, func(w int) {
		if w == writers {
			for i := range alters {
				ts.mustExec(fmt.Sprintf("ALTER TABLE ev ADD COLUMN c%d BIGINT", i))
			}
			done.Store(true)
			return
		}
		for i := 0; !done.Load(); i++ {
			n, err := ts.ingest("ev", "append", events(t, (w*1000+i)*rows, rows))
			if st, _ := status.FromError(err); err != nil && st.Code() == codes.Aborted {
				refused.Add(1)
				continue
			}
			if err != nil {
				t.Errorf("writer %d: %v", w, err)
				return
			}
			acked.Add(n)
		}
	})
	t.Logf("%d rows acknowledged, %d writes refused as the schema changed under them", acked.Load(), refused.Load())
	if got := ts.count("ev"); int64(got) != acked.Load() {
		t.Fatalf("SELECT * returned %d rows, %d were acknowledged", got, acked.Load())
	}
	// The new columns read as nulls in rows written before them.
	info := ts.mustExec(fmt.Sprintf("SELECT id, c%d FROM ev", alters-1))
	if got := len(ts.fetch(info)); int64(got) != acked.Load() {
		t.Fatalf("projection returned %d rows, want %d", got, acked.Load())
	}
}
