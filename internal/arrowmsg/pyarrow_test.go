package arrowmsg

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// pyarrowCheck reads, for every record, the reference stream arrow-go's own
// IPC writer made (<name>.ref.arrows) and the streams of the message
// AppendRecordBatch encoded with each codec (<name>.<codec>.arrows), checks
// each of those (one batch, validated in full, the schema and the rows of
// the reference), and prints a line for each. It fails unless it finds the
// number of reference streams it is told.
const pyarrowCheck = `
import sys, pathlib, pyarrow as pa, pyarrow.ipc as ipc
d, codecs, want = pathlib.Path(sys.argv[1]), sys.argv[2].split(","), int(sys.argv[3])
refs = sorted(d.glob("*.ref.arrows"))
assert len(refs) == want, f"{len(refs)} reference streams, want {want}"
for ref in refs:
    want = ipc.open_stream(ref.read_bytes()).read_all()
    name = ref.name[:-len(".ref.arrows")]
    for codec in codecs:
        f = d / f"{name}.{codec}.arrows"
        batches = list(ipc.open_stream(f.read_bytes()))
        assert len(batches) == 1, f"{f.name}: {len(batches)} batches"
        got = batches[0]
        got.validate(full=True)
        assert got.schema.equals(want.schema), f"{f.name}: schema {got.schema}"
        assert pa.Table.from_batches([got]).equals(want), f"{f.name}: rows differ from {ref.name}"
        print("ok", f.name, got.num_rows)
`

// TestPyarrowReads checks that Arrow C++, through pyarrow, decodes what
// AppendRecordBatch encodes, with and without compression, into the rows
// that arrow-go's own IPC writer stores for the same record. It needs a
// Python with pyarrow, named by ARROWMSG_PYTHON (make test sets it), and is
// skipped without one.
func TestPyarrowReads(t *testing.T) {
	python := os.Getenv("ARROWMSG_PYTHON")
	if python == "" {
		t.Skip("ARROWMSG_PYTHON is not set")
	}
	mem := checkedMem(t)
	dir := t.TempDir()
	types := buildRecord(t, mem, testSchema(), 3000, 1)
	recs := map[string]arrow.RecordBatch{
		"events": buildEvents(t, mem, benchRows, 1),
		"types":  types,
		"sliced": types.NewSlice(7, 2007), // offsets into every buffer, bitmaps not byte-aligned
		"empty":  buildRecord(t, mem, testSchema(), 0, 1),
		"noise":  idNoiseRecord(mem, 5000), // a buffer stored as is, behind -1
	}
	var names []string
	for name, rec := range recs {
		defer rec.Release()
		writeFile(t, filepath.Join(dir, name+".ref.arrows"), referenceStream(t, rec, mem))
		for _, codec := range codecs {
			writeFile(t, filepath.Join(dir, name+"."+codec.String()+".arrows"), encodedStream(t, rec, codec, mem))
		}
		for _, codec := range codecs {
			names = append(names, name+"."+codec.String()+".arrows")
		}
	}
	codecNames := make([]string, len(codecs))
	for i, c := range codecs {
		codecNames[i] = c.String()
	}
	out, err := exec.Command(python, "-c", pyarrowCheck, dir, strings.Join(codecNames, ","), fmt.Sprint(len(recs))).CombinedOutput()
	if err != nil {
		t.Fatalf("pyarrow: %v\n%s", err, out)
	}
	t.Logf("pyarrow:\n%s", out)
	// Every stream was read, with the rows of its record.
	var checked []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var file string
		var rows int64
		if _, err := fmt.Sscanf(line, "ok %s %d", &file, &rows); err != nil {
			t.Fatalf("pyarrow printed %q: %v\n%s", line, err, out)
		}
		name, _, _ := strings.Cut(file, ".")
		if rec, ok := recs[name]; !ok || rec.NumRows() != rows {
			t.Fatalf("pyarrow read %d rows from %s\n%s", rows, file, out)
		}
		checked = append(checked, file)
	}
	slices.Sort(names)
	slices.Sort(checked)
	if !slices.Equal(checked, names) {
		t.Fatalf("pyarrow checked %v, want %v", checked, names)
	}
}

// referenceStream is rec as arrow-go's IPC writer stores it, uncompressed:
// the rows pyarrow must find in every encoded stream.
func referenceStream(t *testing.T, rec arrow.RecordBatch, mem memory.Allocator) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(rec.Schema()), ipc.WithAllocator(mem))
	if err := w.Write(rec); err != nil {
		t.Fatalf("ipc writer: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("ipc writer: %v", err)
	}
	return buf.Bytes()
}

// encodedStream frames the message AppendRecordBatch makes of rec as a
// stream: the schema message, the message, the end-of-stream marker. It
// checks first that the message declares the codec, so that a compressed
// stream really is read through its codec.
func encodedStream(t *testing.T, rec arrow.RecordBatch, codec Codec, mem memory.Allocator) []byte {
	t.Helper()
	msg := encode(t, rec, codec, mem)
	meta, _, err := SplitMessage(msg)
	if err != nil {
		t.Fatal(err)
	}
	hdr, err := ParseRecordBatch(meta)
	if err != nil {
		t.Fatal(err)
	}
	if hdr.Codec != codec {
		t.Fatalf("message encoded with %v declares %v", codec, hdr.Codec)
	}
	var stream bytes.Buffer
	sp := ipc.GetSchemaPayload(rec.Schema(), mem)
	if _, err := sp.WritePayload(&stream); err != nil {
		t.Fatal(err)
	}
	sp.Release()
	stream.Write(msg)
	stream.Write([]byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0})
	return stream.Bytes()
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}
