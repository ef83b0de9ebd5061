package tiering

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go/table"

	"github.com/lakestream/lakestream/columnarlog"
	"github.com/lakestream/lakestream/internal/scan"
	"github.com/lakestream/lakestream/tables"
)

// BucketStatus is the tiering state of one bucket.
type BucketStatus struct {
	Table   string // db.table
	TableID int64
	Bucket  int
	// TieredOffset is the first offset not in the lake; LogEnd the
	// committed end of the log.
	TieredOffset, LogEnd int64
	// LagRows is LogEnd - TieredOffset; Lag the age of the oldest row not
	// yet in the lake (0 when none is).
	LagRows int64
	Lag     time.Duration
	// LastRound is when the table's last successful round ended (zero
	// before the first); Rounds and RowsTiered count since start.
	LastRound  time.Time
	Rounds     int64
	RowsTiered int64
	// LastCommit is the duration of the table's last Iceberg commit.
	LastCommit time.Duration
	// LastError is the table's last round error, "" after a success.
	LastError string
	// LakeBytes and LakeRows are the size of the table's current lake
	// snapshot (its summary's total-files-size and total-records; 0
	// before the first round), the same for every bucket of the table.
	LakeBytes, LakeRows int64
	// Committer says whether this node commits the table's rounds: a
	// lone node always, a cluster node sharing its lake while it holds the
	// table's committer lease (lease.go).
	Committer bool
}

// Status returns every tiered bucket's state, ordered by table and bucket.
func (s *Service) Status() []BucketStatus {
	s.mu.Lock()
	lts := make([]*lakeTable, 0, len(s.tables))
	for _, lt := range s.tables {
		lts = append(lts, lt)
	}
	s.mu.Unlock()
	now := time.Now()
	var out []BucketStatus
	for _, lt := range lts {
		st := lt.state.Load()
		ends := lt.t.Log().CommittedEnds()
		var last time.Time
		if ns := lt.lastRound.Load(); ns != 0 {
			last = time.Unix(0, ns)
		}
		errMsg := ""
		if p := lt.lastErr.Load(); p != nil {
			errMsg = *p
		}
		lakeBytes, lakeRows := snapshotSize(st.tbl)
		_, committer := s.lease(lt.t.Def().ID)
		for b, end := range ends {
			bs := BucketStatus{LakeBytes: lakeBytes, LakeRows: lakeRows,
				Table: lt.t.Name(), TableID: lt.t.Def().ID, Bucket: b, TieredOffset: st.offsets[b], LogEnd: end,
				LagRows: max(0, end-st.offsets[b]), LastRound: last, Rounds: lt.rounds.Load(),
				RowsTiered: lt.rowsTiered.Load(), LastCommit: time.Duration(lt.lastCommitNs.Load()), LastError: errMsg,
				Committer: committer,
			}
			if bs.LagRows > 0 {
				if ts, ok := firstCommitTime(lt.t, b, st.offsets[b], end); ok {
					bs.Lag = max(0, now.Sub(ts))
				}
			}
			out = append(out, bs)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Table != out[j].Table {
			return out[i].Table < out[j].Table
		}
		return out[i].Bucket < out[j].Bucket
	})
	return out
}

// snapshotSize reads the size of tbl's current snapshot from its summary.
func snapshotSize(tbl *table.Table) (bytes, rows int64) {
	if tbl == nil {
		return 0, 0
	}
	snap := tbl.CurrentSnapshot()
	if snap == nil || snap.Summary == nil {
		return 0, 0
	}
	bytes, _ = strconv.ParseInt(snap.Summary.Properties["total-files-size"], 10, 64)
	rows, _ = strconv.ParseInt(snap.Summary.Properties["total-records"], 10, 64)
	return bytes, rows
}

// firstCommitTime is the commit time of the batch holding offset from.
func firstCommitTime(t *tables.Table, bucket int, from, to int64) (time.Time, bool) {
	var ts time.Time
	found := false
	stop := fmt.Errorf("stop")
	t.ReadBatches(context.Background(), tables.Range{Bucket: bucket, From: from, To: to}, func(b columnarlog.Batch) error {
		ts, found = time.UnixMicro(b.CommitTimestamp()), true
		return stop
	})
	return ts, found
}

// The system table lakestream.tiering: Status as rows.
const systemDB = "lakestream"

var statusSchema = arrow.NewSchema([]arrow.Field{
	{Name: "table_name", Type: arrow.BinaryTypes.String},
	{Name: "bucket", Type: arrow.PrimitiveTypes.Int32},
	{Name: "tiered_offset", Type: arrow.PrimitiveTypes.Int64},
	{Name: "log_end_offset", Type: arrow.PrimitiveTypes.Int64},
	{Name: "lag_rows", Type: arrow.PrimitiveTypes.Int64},
	{Name: "lag_seconds", Type: arrow.PrimitiveTypes.Float64},
	{Name: "last_round", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
	{Name: "rounds", Type: arrow.PrimitiveTypes.Int64},
	{Name: "rows_tiered", Type: arrow.PrimitiveTypes.Int64},
	{Name: "last_commit_ms", Type: arrow.PrimitiveTypes.Float64},
	{Name: "last_error", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "committer", Type: arrow.FixedWidthTypes.Boolean},
}, nil)

type statusTable struct{ s *Service }

func (statusTable) Name() string          { return systemDB + ".tiering" }
func (statusTable) Schema() *arrow.Schema { return statusSchema }

func (st statusTable) Plan(ctx context.Context, req scan.Request) (scan.Plan, error) {
	rec := statusRecord(st.s.Status(), memory.DefaultAllocator)
	defer rec.Release()
	cols := scan.Columns(req.Columns, statusSchema.NumFields())
	schema, err := scan.ProjectSchema(statusSchema, cols)
	if err != nil {
		return nil, fmt.Errorf("scan %s: %w", st.Name(), err)
	}
	arrs := make([]arrow.Array, len(cols))
	for i, c := range cols {
		arrs[i] = rec.Column(c)
	}
	out := array.NewRecordBatch(schema, arrs, rec.NumRows())
	return scan.NewPlan(schema, []scan.Part{scan.RecordPart(out)}), nil
}

func statusRecord(rows []BucketStatus, mem memory.Allocator) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, statusSchema)
	defer b.Release()
	for _, r := range rows {
		b.Field(0).(*array.StringBuilder).Append(r.Table)
		b.Field(1).(*array.Int32Builder).Append(int32(r.Bucket))
		b.Field(2).(*array.Int64Builder).Append(r.TieredOffset)
		b.Field(3).(*array.Int64Builder).Append(r.LogEnd)
		b.Field(4).(*array.Int64Builder).Append(r.LagRows)
		b.Field(5).(*array.Float64Builder).Append(r.Lag.Seconds())
		if r.LastRound.IsZero() {
			b.Field(6).AppendNull()
		} else {
			b.Field(6).(*array.TimestampBuilder).Append(arrow.Timestamp(r.LastRound.UnixMicro()))
		}
		b.Field(7).(*array.Int64Builder).Append(r.Rounds)
		b.Field(8).(*array.Int64Builder).Append(r.RowsTiered)
		b.Field(9).(*array.Float64Builder).Append(float64(r.LastCommit) / float64(time.Millisecond))
		if r.LastError == "" {
			b.Field(10).AppendNull()
		} else {
			b.Field(10).(*array.StringBuilder).Append(r.LastError)
		}
		b.Field(11).(*array.BooleanBuilder).Append(r.Committer)
	}
	return b.NewRecordBatch()
}

func isStatusTable(db, name string) bool {
	return strings.EqualFold(db, systemDB) && strings.EqualFold(name, "tiering")
}
