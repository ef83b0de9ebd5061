package duck

import (
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

func TestExplore(t *testing.T) {
	mem := memory.NewGoAllocator()
	b := array.NewRecordBuilder(mem, arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "s", Type: arrow.BinaryTypes.String}}, nil))
	for i := 0; i < 10; i++ {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(1).(*array.StringBuilder).Append("x")
	}
	rec := b.NewRecordBatch()
	r := newFakeResolver()
	r.add(newFakeTable("default.events", rec, 3, 4))
	r.add(newFakeTable("mydb.events", rec, 3, 4))
	e, err := New(r, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	qs := []string{
		"SELECT * FROM events", "SELECT count(*) FROM mydb.events", "SELECT * FROM memory.mydb.events",
		"SELECT now()::TIMESTAMPTZ, sum(id), 'a'::BLOB, current_setting('TimeZone') FROM events",
		"SELECT * FROM read_csv('/etc/passwd')", "SET threads=1", "SET TimeZone='Europe/Berlin'", "CREATE TABLE x(a int)",
		"EXPLAIN ANALYZE CREATE TABLE y AS SELECT 1", "SELECT * FROM y", "SELECT * FROM duckdb_extensions() WHERE loaded",
		"SELECT * FROM dbgen(sf=0)", "EXPLAIN SELECT 1", "SELECT * FROM 'x.parquet'", "SELECT 1 FROM nope", "SELEC 1",
		"SELECT * FROM x.y.z.w", "SELECT * FROM \"a.b\"",
	}
	if q := os.Getenv("Q"); q != "" {
		qs = strings.Split(q, ";")
	}
	for _, q := range qs {
		s, sch, err := e.Query(context.Background(), q)
		if err != nil {
			t.Logf("%s => ERR %v (notfound=%v)", q, err, errors.Is(err, errors.New("x")))
			continue
		}
		t.Logf("%s => schema %v", q, sch)
		for {
			rec, err := s.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Logf("  next err %v", err)
				break
			}
			t.Logf("  %v", rec)
			rec.Release()
		}
		s.Close()
	}
}
