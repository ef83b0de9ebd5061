package planner

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lakestream/lakestream/internal/scan"
)

// fakeChangelog is a changelog view of (id BIGINT NOT NULL, v VARCHAR)
// whose one part returns recs.
type fakeChangelog struct {
	schema *arrow.Schema
	recs   []arrow.RecordBatch
}

func (f *fakeChangelog) Name() string          { return "default.t$changelog" }
func (f *fakeChangelog) Schema() *arrow.Schema { return f.schema }
func (f *fakeChangelog) Plan(context.Context, scan.Request) (scan.Plan, error) {
	return scan.NewPlan(f.schema, []scan.Part{f}), nil
}
func (f *fakeChangelog) Open(context.Context) (scan.RecordStream, error) {
	for _, r := range f.recs {
		r.Retain()
	}
	return &sliceStream{recs: f.recs}, nil
}

type sliceStream struct{ recs []arrow.RecordBatch }

func (s *sliceStream) Next() (arrow.RecordBatch, error) {
	if len(s.recs) == 0 {
		return nil, io.EOF
	}
	r := s.recs[0]
	s.recs = s.recs[1:]
	return r, nil
}

func (s *sliceStream) Close() error {
	for _, r := range s.recs {
		r.Release()
	}
	return nil
}

var changelogTestSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "v", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "_change_type", Type: arrow.BinaryTypes.String},
	{Name: "_bucket", Type: arrow.PrimitiveTypes.Int32},
	{Name: "_offset", Type: arrow.PrimitiveTypes.Int64},
	{Name: "_commit_timestamp", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
}, nil)

// changes builds a changelog record from "type id v" rows at offsets from.
func changes(mem memory.Allocator, from int64, rows ...string) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, changelogTestSchema)
	defer b.Release()
	for i, r := range rows {
		var ct, v string
		var id int64
		fmt.Sscan(r, &ct, &id, &v)
		b.Field(0).(*array.Int64Builder).Append(id)
		b.Field(1).(*array.StringBuilder).Append(v)
		b.Field(2).(*array.StringBuilder).Append(ct)
		b.Field(3).(*array.Int32Builder).Append(0)
		b.Field(4).(*array.Int64Builder).Append(from + int64(i))
		b.Field(5).(*array.TimestampBuilder).Append(arrow.Timestamp(1000 + from))
	}
	return b.NewRecordBatch()
}

// The binlog pairs -U/+U into one row, also across records, and shows
// inserts and deletes with the missing image NULL.
func TestBinlogPairs(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	cl := &fakeChangelog{schema: changelogTestSchema, recs: []arrow.RecordBatch{
		changes(mem, 0, "+I 1 a", "+I 2 b", "-U 1 a"),
		changes(mem, 3, "+U 1 c", "-D 2 b", "+I 3 x", "-U 3 x", "+U 3 y"),
		changes(mem, 8, "+U 4 z", "-U 5 q"),
	}}
	defer func() {
		for _, r := range cl.recs {
			r.Release()
		}
	}()
	bl, err := Binlog(cl, "default.t$binlog", mem)
	if err != nil {
		t.Fatal(err)
	}
	if got := bl.Schema().String(); !strings.Contains(got, "before: type=struct<id: int64, v: utf8 nullable>, nullable") {
		t.Fatalf("schema %s", got)
	}
	p, err := bl.Plan(context.Background(), scan.Request{Columns: []int{0, 2, 4, 5}})
	if err != nil {
		t.Fatal(err)
	}
	rs, err := p.Parts()[0].Open(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	var got []string
	for {
		rec, err := rs.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < int(rec.NumRows()); i++ {
			got = append(got, fmt.Sprintf("%s@%d %s %s", rec.Column(0).ValueStr(i), rec.Column(1).(*array.Int64).Value(i),
				rec.Column(2).ValueStr(i), rec.Column(3).ValueStr(i)))
		}
		rec.Release()
	}
	want := []string{
		`insert@0 (null) {"id":1,"v":"a"}`,
		`insert@1 (null) {"id":2,"v":"b"}`,
		`update@3 {"id":1,"v":"a"} {"id":1,"v":"c"}`,
		`delete@4 {"id":2,"v":"b"} (null)`,
		`insert@5 (null) {"id":3,"v":"x"}`,
		`update@7 {"id":3,"v":"x"} {"id":3,"v":"y"}`,
		`update@8 (null) {"id":4,"v":"z"}`, // its -U is not in the read
		`update@9 {"id":5,"v":"q"} (null)`, // its +U is not in the read
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("binlog:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
