package tiering

import (
	"context"

	"github.com/lakestream/lakestream/tables"
)

var _ tables.PKState

// compactPK compacts a primary-key table's lake (pkcompact.go).
func (s *Service) compactPK(ctx context.Context, lt *lakeTable, st *lakeState, m Maintenance) (*lakeState, int, error) {
	return st, 0, nil
}
