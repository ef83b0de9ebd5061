package flightsrv

import (
	"fmt"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lakestream/lakestream/columnarlog"
)

// Damaged log data (a *columnarlog.CorruptionError, or any ErrCorrupt) is
// DataLoss: the client's request was fine, the stored rows are not, and a
// retry meets the same damage.
func TestLogCorruptionIsDataLoss(t *testing.T) {
	ce := &columnarlog.CorruptionError{Segment: "/data/tables/7/0/00000000000000000000.log", Position: 4096, Offset: 12,
		Err: fmt.Errorf("%w: crc 1, header says 2", columnarlog.ErrCorrupt)}
	for _, err := range []error{ce, fmt.Errorf("read db.t bucket 0: %w", ce), fmt.Errorf("open: %w", columnarlog.ErrCorrupt)} {
		if c := status.Code(toStatus(err)); c != codes.DataLoss {
			t.Errorf("toStatus(%v) = %v, want DataLoss", err, c)
		}
	}
}
