package flightsrv

import (
	"context"
	"fmt"

	"github.com/lakestream/lakestream/catalog"
	"github.com/lakestream/lakestream/planner"
	"github.com/lakestream/lakestream/tables"
)

// UPDATE and DELETE in a cluster (docs/cluster.md): only a bucket's
// leader holds the bucket's current rows, so the statement runs on each
// bucket's leader, on that bucket's rows (tables.Table.OnLeaders).

// dmlInCluster runs an UPDATE or DELETE of a replicated table on its
// buckets' leaders; ok is false when the statement is to run here as on a
// single node (a table that is not replicated, or a leader's part).
func (s *Server) dmlInCluster(ctx context.Context, st *planner.Statement, argRows [][]any) (n int64, ok bool, err error) {
	if tables.BucketsOf(ctx) != nil || s.engine == nil {
		return 0, false, nil
	}
	priv, db, name, _ := dmlTarget(st)
	t, err := s.table(ctx, priv, db, name)
	if err != nil {
		return 0, true, err
	}
	if !t.Replicated() || !t.Def().HasPrimaryKey() {
		return 0, false, nil // a log table's UPDATE or DELETE is refused as on a single node
	}
	if argRows != nil {
		return 0, true, fmt.Errorf("%w: an UPDATE or DELETE with bound parameters on a cluster; write the values into the statement", errUnsupported)
	}
	n, err = t.OnLeaders(ctx, st.SQL, func(ctx context.Context) (int64, error) { return s.execUpdate(ctx, st, nil) })
	return n, true, err
}

// ExecBucketStatement runs an UPDATE or DELETE that another node forwarded
// on the rows of bucket b of table tableID, which this node leads.
func (s *Server) ExecBucketStatement(ctx context.Context, tableID int64, b int, sql string) (int64, error) {
	st, err := planner.Classify(sql)
	if err != nil {
		return 0, err
	}
	_, db, name, ok := dmlTarget(st)
	if !ok {
		return 0, fmt.Errorf("%w: a forwarded %s statement; only UPDATE and DELETE are", errInvalid, st.Kind)
	}
	t, err := s.store.Get(ctx, db, name)
	if err != nil {
		return 0, err
	}
	if t.Def().ID != tableID {
		return 0, fmt.Errorf("%w: the forwarded statement's table %s is table %d here, not %d", catalog.ErrTableNotFound, t.Def().FullName(), t.Def().ID, tableID)
	}
	if err := t.CheckLeads(b); err != nil {
		return 0, err
	}
	return s.execUpdate(tables.WithBuckets(ctx, tables.Buckets{b: true}), st, nil)
}

// dmlTarget is the table an UPDATE or DELETE changes and the privilege it
// needs; ok is false for another statement.
func dmlTarget(st *planner.Statement) (priv catalog.Privilege, db, name string, ok bool) {
	switch st.Kind {
	case planner.KindDelete:
		return catalog.PrivDelete, st.Delete.DB, st.Delete.Table, true
	case planner.KindUpdate:
		return catalog.PrivUpdate, st.Update.DB, st.Update.Table, true
	}
	return 0, "", "", false
}
