package tables_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lakestream/lakestream/catalog"
	"github.com/lakestream/lakestream/columnarlog"
	"github.com/lakestream/lakestream/internal/scan"
	"github.com/lakestream/lakestream/internal/vfs"
	"github.com/lakestream/lakestream/tables"
)

// env is a catalog plus a store over one data directory. Reopen closes
// both and opens them again over the same files.
type env struct {
	t       *testing.T
	catPath string
	dir     string
	fs      vfs.FS
	mem     *memory.CheckedAllocator
	logOpts columnarlog.Options // FS is set from fs
	// cacheBytes is the store's decoded-column cache size (0: default).
	cacheBytes int64
	// limits bound the store's writes (zero: the defaults).
	limits tables.Limits
	// remote reads the buckets of other nodes (nil: none).
	remote tables.Remote
	cat    *catalog.Catalog
	store  *tables.Store
}

// newEnv opens a store over fs (nil: the OS filesystem in a temp dir) with
// a checked allocator that must be back to zero when the test ends.
func newEnv(t *testing.T, fs vfs.FS) *env {
	t.Helper()
	return newEnvWith(t, fs, columnarlog.Options{})
}

func newEnvWith(t *testing.T, fs vfs.FS, logOpts columnarlog.Options) *env {
	t.Helper()
	return newEnvOpts(t, fs, logOpts, func(*env) {})
}

// newEnvOpts is newEnvWith, with edit changing the env before it opens.
func newEnvOpts(t *testing.T, fs vfs.FS, logOpts columnarlog.Options, edit func(*env)) *env {
	t.Helper()
	tmp := t.TempDir()
	e := &env{
		t:       t,
		catPath: filepath.Join(tmp, "catalog.db"),
		dir:     filepath.Join(tmp, "tables"),
		fs:      fs,
		logOpts: logOpts,
		mem:     memory.NewCheckedAllocator(memory.NewGoAllocator()),
	}
	if fs != nil {
		e.dir = "/data/tables"
	}
	edit(e)
	e.open()
	t.Cleanup(func() {
		e.close()
		e.mem.AssertSize(t, 0)
	})
	return e
}

func (e *env) open() {
	e.t.Helper()
	ctx := context.Background()
	cat, err := catalog.Open(ctx, e.catPath, catalog.Config{})
	if err != nil {
		e.t.Fatalf("open catalog: %v", err)
	}
	opts := e.logOpts
	opts.FS = e.fs
	st, err := tables.Open(ctx, cat, tables.Config{
		Dir:        e.dir,
		Log:        opts,
		Mem:        e.mem,
		CacheBytes: e.cacheBytes,
		Limits:     e.limits,
		Remote:     e.remote,
	})
	if err != nil {
		cat.Close()
		e.t.Fatalf("open tables: %v", err)
	}
	e.cat, e.store = cat, st
}

func (e *env) close() {
	e.t.Helper()
	if e.store != nil {
		if err := e.store.Close(); err != nil {
			e.t.Errorf("close store: %v", err)
		}
		e.store = nil
	}
	if e.cat != nil {
		if err := e.cat.Close(); err != nil {
			e.t.Errorf("close catalog: %v", err)
		}
		e.cat = nil
	}
}

func (e *env) reopen() {
	e.t.Helper()
	e.close()
	e.open()
}

func (e *env) exec(sql string) error {
	stmt, err := catalog.Parse(sql)
	if err != nil {
		return err
	}
	return e.store.Exec(context.Background(), stmt)
}

func (e *env) mustExec(sql string) {
	e.t.Helper()
	if err := e.exec(sql); err != nil {
		e.t.Fatalf("%s: %v", sql, err)
	}
}

func (e *env) table(name string) *tables.Table {
	e.t.Helper()
	tbl, err := e.store.Get(context.Background(), "", name)
	if err != nil {
		e.t.Fatalf("get %s: %v", name, err)
	}
	return tbl
}

// write writes recs as one write; it releases recs.
func (e *env) write(tbl *tables.Table, recs ...arrow.RecordBatch) int64 {
	e.t.Helper()
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	n, err := tbl.Write(context.Background(), recs...)
	if err != nil {
		e.t.Fatalf("write: %v", err)
	}
	return n
}

// col is one column of a record under construction: a field and its
// values, nil meaning null.
type col struct {
	f    arrow.Field
	vals []any
}

func i64(name string, nullable bool, v ...any) col {
	return col{arrow.Field{Name: name, Type: arrow.PrimitiveTypes.Int64, Nullable: nullable}, v}
}

func f64(name string, v ...any) col {
	return col{arrow.Field{Name: name, Type: arrow.PrimitiveTypes.Float64, Nullable: true}, v}
}

func str(name string, v ...any) col {
	return col{arrow.Field{Name: name, Type: arrow.BinaryTypes.String, Nullable: true}, v}
}

func tsUS(name string, v ...any) col {
	return col{arrow.Field{Name: name, Type: &arrow.TimestampType{Unit: arrow.Microsecond}, Nullable: true}, v}
}

// record builds a record from columns; every column has the same number of
// values.
func record(t testing.TB, mem memory.Allocator, cols ...col) arrow.RecordBatch {
	t.Helper()
	fields := make([]arrow.Field, len(cols))
	for i, c := range cols {
		fields[i] = c.f
	}
	b := array.NewRecordBuilder(mem, arrow.NewSchema(fields, nil))
	defer b.Release()
	for i, c := range cols {
		for _, v := range c.vals {
			appendValue(t, b.Field(i), v)
		}
	}
	return b.NewRecordBatch()
}

func appendValue(t testing.TB, fb array.Builder, v any) {
	t.Helper()
	if v == nil {
		fb.AppendNull()
		return
	}
	switch b := fb.(type) {
	case *array.Int64Builder:
		b.Append(int64(v.(int)))
	case *array.Int32Builder:
		b.Append(int32(v.(int)))
	case *array.Float64Builder:
		b.Append(v.(float64))
	case *array.Float32Builder:
		b.Append(float32(v.(float64)))
	case *array.StringBuilder:
		b.Append(v.(string))
	case *array.TimestampBuilder:
		b.Append(arrow.Timestamp(int64(v.(int))))
	default:
		t.Fatalf("appendValue: unsupported builder %T", fb)
	}
}

// eventsDDL is the table most tests use.
const eventsCols = "(id BIGINT NOT NULL, amount DOUBLE, kind VARCHAR, ts TIMESTAMP)"

// events builds n rows of the events table starting at id from.
func events(t testing.TB, mem memory.Allocator, from, n int) arrow.RecordBatch {
	if t == nil {
		t = nopTB{}
	}
	ids, amounts, kinds, tss := make([]any, n), make([]any, n), make([]any, n), make([]any, n)
	for i := range n {
		id := from + i
		ids[i] = id
		amounts[i] = float64(id) / 4
		kinds[i] = []string{"click", "view", "buy"}[id%3]
		if id%7 == 3 {
			kinds[i] = nil
		}
		tss[i] = 1_700_000_000_000_000 + id*1000
	}
	return record(t, mem, i64("id", false, ids...), f64("amount", amounts...), str("kind", kinds...), tsUS("ts", tss...))
}

// rowStrings renders each row of rec as "v1|v2|...", nulls as (null).
func rowStrings(rec arrow.RecordBatch) []string {
	out := make([]string, rec.NumRows())
	for i := range out {
		vals := make([]string, rec.NumCols())
		for j, c := range rec.Columns() {
			vals[j] = c.ValueStr(i)
		}
		out[i] = strings.Join(vals, "|")
	}
	return out
}

// expectRows renders recs' rows, releasing them.
func expectRows(recs ...arrow.RecordBatch) []string {
	var out []string
	for _, r := range recs {
		out = append(out, rowStrings(r)...)
		r.Release()
	}
	return out
}

// projectRows keeps the given columns of each "a|b|c" row.
func projectRows(rows []string, cols ...int) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		parts := strings.Split(r, "|")
		kept := make([]string, len(cols))
		for j, c := range cols {
			kept[j] = parts[c]
		}
		out[i] = strings.Join(kept, "|")
	}
	return out
}

// readBuckets reads every bucket of tbl's current snapshot with
// ReadBatches and DecodeBatch and returns the rows per bucket.
func readBuckets(t *testing.T, tbl *tables.Table, cols []int) [][]string {
	t.Helper()
	return readRanges(t, tbl, tbl.LogRanges(), cols)
}

func readRanges(t *testing.T, tbl *tables.Table, ranges []tables.Range, cols []int) [][]string {
	t.Helper()
	out := make([][]string, tbl.Log().Buckets())
	for _, r := range ranges {
		err := tbl.ReadBatches(context.Background(), r, func(b columnarlog.Batch) error {
			rec, err := safeDecode(tbl, b, cols)
			if err != nil {
				return err
			}
			if got, want := rec.NumRows(), int64(b.RecordCount()); got != want {
				t.Errorf("bucket %d batch at %d: decoded %d rows, header says %d", r.Bucket, b.BaseOffset(), got, want)
			}
			out[r.Bucket] = append(out[r.Bucket], rowStrings(rec)...)
			rec.Release()
			return nil
		})
		if err != nil {
			t.Fatalf("read bucket %d: %v", r.Bucket, err)
		}
	}
	return out
}

func allCols(tbl *tables.Table) []int {
	n := tbl.Schema().NumFields()
	cols := make([]int, n)
	for i := range cols {
		cols[i] = i
	}
	return cols
}

func flatten(perBucket [][]string) []string {
	var out []string
	for _, b := range perBucket {
		out = append(out, b...)
	}
	return out
}

// scanPlan reads a scan.Table through Plan, Parts and Open and returns the
// plan's schema and its rows.
func scanPlan(t *testing.T, st scan.Table, cols []int) (*arrow.Schema, []string) {
	t.Helper()
	ctx := context.Background()
	p, err := st.Plan(ctx, scan.Request{Columns: cols})
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	var rows []string
	for i, part := range p.Parts() {
		rs, err := part.Open(ctx)
		if err != nil {
			t.Fatalf("open part %d: %v", i, err)
		}
		for {
			rec, err := rs.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				rs.Close()
				t.Fatalf("part %d: %v", i, err)
			}
			if !rec.Schema().Equal(p.Schema()) {
				t.Errorf("part %d: record schema %v, plan schema %v", i, rec.Schema(), p.Schema())
			}
			rows = append(rows, rowStrings(rec)...)
			rec.Release()
		}
		if err := rs.Close(); err != nil {
			t.Fatalf("close part %d: %v", i, err)
		}
	}
	return p.Schema(), rows
}

// planRows reads the rows of req through Plan, Parts and Open, returning
// errors instead of failing the test.
func planRows(ctx context.Context, st scan.Table, req scan.Request) ([]string, error) {
	p, err := st.Plan(ctx, req)
	if err != nil {
		return nil, err
	}
	var rows []string
	for _, part := range p.Parts() {
		rs, err := part.Open(ctx)
		if err != nil {
			return nil, err
		}
		for {
			rec, err := rs.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				rs.Close()
				return nil, err
			}
			rows = append(rows, rowStrings(rec)...)
			rec.Release()
		}
		if err := rs.Close(); err != nil {
			return nil, err
		}
	}
	return rows, nil
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

func sameRows(t *testing.T, what string, got, want []string) {
	t.Helper()
	got, want = sorted(got), sorted(want)
	if !slices.Equal(got, want) {
		t.Errorf("%s: got %d rows, want %d\n got: %s\nwant: %s", what, len(got), len(want), clip(got), clip(want))
	}
}

func clip(rows []string) string {
	if len(rows) > 12 {
		return fmt.Sprint(rows[:12]) + fmt.Sprintf(" ... (%d more)", len(rows)-12)
	}
	return fmt.Sprint(rows)
}

// ctxTimeout bounds a test's waits.
func ctxTimeout(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

type scanReq = scan.Request

// addStringColumn returns rec with a nullable string column appended; it
// releases rec.
func addStringColumn(t testing.TB, e *env, rec arrow.RecordBatch, name string, vals ...any) arrow.RecordBatch {
	t.Helper()
	defer rec.Release()
	extra := record(t, e.mem, str(name, vals...))
	defer extra.Release()
	fields := append(slices.Clone(rec.Schema().Fields()), extra.Schema().Field(0))
	cols := append(slices.Clone(rec.Columns()), extra.Column(0))
	return array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, rec.NumRows())
}

// safeDecode is DecodeBatch with a panic turned into an error, so that a
// decoder bug fails one test instead of the whole binary.
func safeDecode(tbl *tables.Table, b columnarlog.Batch, cols []int) (rec arrow.RecordBatch, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("DecodeBatch(cols %v) panicked: %v", cols, r)
		}
	}()
	return tbl.DecodeBatch(b, cols)
}

// nopTB lets record builders run where no *testing.T is at hand (writer
// goroutines); the builders only call Helper and, on a bug in the test,
// Fatalf.
type nopTB struct{ testing.TB }

func (nopTB) Helper()                        {}
func (nopTB) Fatalf(format string, a ...any) { panic(fmt.Sprintf(format, a...)) }
