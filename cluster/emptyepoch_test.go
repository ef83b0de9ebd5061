package cluster

import (
	"context"
	"testing"

	"github.com/lakestream/lakestream/columnarlog"
)

// leaderTransport answers a follower straight from a leader's log.
type leaderTransport struct{ leader Log }

func (d leaderTransport) Fetch(_ context.Context, _ string, q FetchRequest) (FetchResponse, error) {
	b, err := d.leader.Read(q.Offset, 1<<20)
	if err != nil {
		return FetchResponse{}, err
	}
	return FetchResponse{Code: CodeOK, Epoch: q.Epoch, Batches: b}, nil
}

func (d leaderTransport) EndForEpoch(_ context.Context, _ string, q EpochRequest) (EpochResponse, error) {
	e, o := d.leader.EndForEpoch(q.Asked)
	return EpochResponse{Code: CodeOK, Epoch: q.Epoch, FoundEpoch: e, EndOffset: o}, nil
}

// A replica elected at an epoch it appended nothing to, then following a
// leader of a later epoch whose log holds more of an older epoch: the
// reconcile cuts at its end, dropping the empty epoch, so the leader's
// older batches are accepted.
func TestFollowerDropsAnEpochItLedWithoutAppending(t *testing.T) {
	open := func() *columnarlog.TableLog {
		tl, err := columnarlog.OpenTable(t.TempDir(), 1, columnarlog.Options{Replicated: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { tl.Close() })
		return tl
	}
	appendOne := func(tl *columnarlog.TableLog) {
		b, err := columnarlog.NewBatch(columnarlog.Header{SchemaID: 1, RecordCount: 4}, nil, nil, make([]byte, 64))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tl.Append([][]columnarlog.Batch{{b}}); err != nil {
			t.Fatal(err)
		}
	}
	n, x := open(), open()
	nl, xl := BucketLog(n, 0), BucketLog(x, 0)
	if err := nl.BecomeLeader(6); err != nil {
		t.Fatal(err)
	}
	appendOne(n)
	b, _ := nl.Read(0, 1<<20)
	if err := xl.AppendReplica(b); err != nil {
		t.Fatal(err)
	}
	appendOne(n)                               // an epoch 6 batch x lacks
	if err := xl.BecomeLeader(7); err != nil { // x elected at 7, appends nothing
		t.Fatal(err)
	}
	if err := nl.BecomeLeader(8); err != nil { // n, never told, elected at 8
		t.Fatal(err)
	}
	appendOne(n)
	f := &follower{self: "x", log: xl, epoch: 8, tr: leaderTransport{nl}}
	f.cfg.EnsureDefaults()
	f.logger = f.cfg.Logger
	if err := f.reconcile(context.Background()); err != nil {
		t.Fatal(err)
	}
	bs, _ := nl.Read(xl.Durable(), 1<<20)
	if err := xl.AppendReplica(bs); err != nil {
		t.Fatalf("the follower refuses the leader's batches after reconciling: %v", err)
	}
}
