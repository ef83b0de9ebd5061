package arrowmsg

import (
	"bytes"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// RecordBatchRows agrees with ParseRecordBatch on a record batch, and says
// no to a schema message and to garbage.
func TestRecordBatchRows(t *testing.T) {
	schema := testSchema()
	rec := buildRecord(t, memory.DefaultAllocator, schema, 37, 1)
	defer rec.Release()
	meta, _, err := SplitMessage(encode(t, rec, CodecNone, memory.DefaultAllocator))
	if err != nil {
		t.Fatal(err)
	}
	n, ok := RecordBatchRows(meta)
	hdr, err := ParseRecordBatch(meta)
	if !ok || err != nil || n != 37 || hdr.Length != n {
		t.Fatalf("rows %d %v, header %v %v: want 37", n, ok, hdr, err)
	}
	schemaMsg := flight.SerializeSchema(schema, memory.DefaultAllocator)
	if smeta, _, err := SplitMessage(schemaMsg); err == nil {
		if n, ok := RecordBatchRows(smeta); ok {
			t.Errorf("schema message: %d rows, want none", n)
		}
	}
	for _, bad := range [][]byte{nil, {1, 2, 3}, bytes.Repeat([]byte{0xff}, 64)} {
		if n, ok := RecordBatchRows(bad); ok {
			t.Errorf("%x: %d rows, want none", bad, n)
		}
	}
	for cut := range len(meta) { // never panics; a cut that keeps the fields read still reads them
		if n, ok := RecordBatchRows(meta[:cut]); ok && n != 37 {
			t.Errorf("meta cut at %d: %d rows", cut, n)
		}
	}
}
