package arrowmsg

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// Column indexes into testSchema.
const (
	colBool   = 0
	colAmount = 4
	colDec    = 7
	colStr    = 8
	colTSUTC  = 13
	colList   = 14
	colStruct = 15
	colMap    = 16
)

var projections = [][]int{
	{colAmount},
	{colMap},
	{colStr, colBool},                        // reordered
	{colList, colStruct, colMap},             // nested only
	{colMap, colDec, colStruct, colTSUTC, 0}, // nested and flat, reordered
	{colStr, colStr},                         // a column twice
	{16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0},
	{},
}

func TestProject(t *testing.T) {
	schema := testSchema()
	for _, codec := range codecs {
		for _, cols := range projections {
			t.Run(fmt.Sprintf("%v/%v", codec, cols), func(t *testing.T) {
				mem := checkedMem(t)
				rec := buildRecord(t, mem, schema, 123, 42)
				defer rec.Release()
				meta, body, err := SplitMessage(encode(t, rec, codec, mem))
				if err != nil {
					t.Fatalf("SplitMessage: %v", err)
				}
				checkProject(t, rec, cols, codec, meta, body)
			})
		}
	}
}

func checkProject(t *testing.T, rec arrow.RecordBatch, cols []int, codec Codec, meta, body []byte) {
	t.Helper()
	mem := checkedMem(t)
	newMeta, newBody, err := Project(rec.Schema(), cols, meta, body)
	if err != nil {
		t.Fatalf("Project: %v", err)
	}
	projSchema := projectSchema(rec.Schema(), cols)
	hdr, err := Validate(projSchema, newMeta, newBody, Limits{})
	if err != nil {
		t.Fatalf("Validate projected: %v", err)
	}
	checkHeader(t, hdr, rec, codec)

	msg, err := ProjectAppend([]byte("pool"), rec.Schema(), cols, meta, body)
	if err != nil {
		t.Fatalf("ProjectAppend: %v", err)
	}
	if string(msg[:4]) != "pool" {
		t.Fatalf("ProjectAppend overwrote dst")
	}
	msg = msg[4:]
	gotMeta, gotBody, err := SplitMessage(msg)
	if err != nil {
		t.Fatalf("SplitMessage(ProjectAppend): %v", err)
	}
	if !bytes.Equal(gotMeta[:len(newMeta)], newMeta) || !bytes.Equal(gotBody, newBody) {
		t.Fatalf("ProjectAppend and Project disagree")
	}

	got := decode(t, mem, projSchema, msg)
	defer got.Release()
	if got.NumRows() != rec.NumRows() || int(got.NumCols()) != len(cols) {
		t.Fatalf("projected batch is %d x %d, want %d x %d", got.NumRows(), got.NumCols(), rec.NumRows(), len(cols))
	}
	for i, c := range cols {
		if !array.Equal(rec.Column(c), got.Column(i)) {
			t.Errorf("projected column %d (%s) differs:\nwant %v\ngot  %v", i, rec.ColumnName(c), rec.Column(c), got.Column(i))
		}
	}
}

func projectSchema(s *arrow.Schema, cols []int) *arrow.Schema {
	fields := make([]arrow.Field, len(cols))
	for i, c := range cols {
		fields[i] = s.Field(c)
	}
	return arrow.NewSchema(fields, nil)
}

// ProjectAppend into a reused buffer full of stale bytes must still zero the
// padding, or the output would leak bytes of an earlier response.
func TestProjectAppendZeroesPadding(t *testing.T) {
	mem := checkedMem(t)
	schema := testSchema()
	rec := buildRecord(t, mem, schema, 5, 9)
	defer rec.Release()
	meta, body, err := SplitMessage(encode(t, rec, CodecNone, mem))
	if err != nil {
		t.Fatal(err)
	}
	cols := []int{colBool, colStr, colList}
	fresh, err := ProjectAppend(nil, schema, cols, meta, body)
	if err != nil {
		t.Fatal(err)
	}
	pool := bytes.Repeat([]byte{0xAB}, 4*len(fresh))
	reused, err := ProjectAppend(pool[:0], schema, cols, meta, body)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(fresh, reused) {
		t.Fatalf("ProjectAppend into a dirty buffer differs from a fresh one")
	}
}

func TestProjectErrors(t *testing.T) {
	mem := checkedMem(t)
	schema := testSchema()
	rec := buildRecord(t, mem, schema, 5, 9)
	defer rec.Release()
	meta, body, err := SplitMessage(encode(t, rec, CodecZstd, mem))
	if err != nil {
		t.Fatal(err)
	}
	for _, cols := range [][]int{{-1}, {17}, {0, 99}} {
		if _, _, err := Project(schema, cols, meta, body); err == nil {
			t.Errorf("Project(%v): no error", cols)
		}
	}
	if _, _, err := Project(schema, []int{0}, meta, body[:len(body)-8]); !errors.Is(err, ErrMalformed) {
		t.Errorf("Project of a short body: %v, want ErrMalformed", err)
	}
	other := arrow.NewSchema(schema.Fields()[:3], nil)
	if _, _, err := Project(other, []int{0}, meta, body); !errors.Is(err, ErrMalformed) {
		t.Errorf("Project with the wrong schema: %v, want ErrMalformed", err)
	}
}
