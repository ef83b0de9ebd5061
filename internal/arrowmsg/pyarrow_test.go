package arrowmsg

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
)

// pyarrowCheck reads every compressed stream in a directory with pyarrow
// and compares it with the uncompressed stream of the same batch.
const pyarrowCheck = `
import sys, pathlib, pyarrow.ipc as ipc
d = pathlib.Path(sys.argv[1])
for f in sorted(d.glob("*.none.arrows")):
    want = ipc.open_stream(f.read_bytes()).read_all()
    for codec in ("lz4", "zstd"):
        g = f.with_name(f.name.replace(".none.", "." + codec + "."))
        got = ipc.open_stream(g.read_bytes()).read_all()
        assert got.equals(want), g.name
        print("ok", g.name, got.num_rows)
`

// TestPyarrowReads checks that Arrow C++, through pyarrow, decodes what
// AppendRecordBatch compresses. It needs a Python with pyarrow, named by
// ARROWMSG_PYTHON, and is skipped without one.
func TestPyarrowReads(t *testing.T) {
	python := os.Getenv("ARROWMSG_PYTHON")
	if python == "" {
		t.Skip("ARROWMSG_PYTHON is not set")
	}
	mem := checkedMem(t)
	dir := t.TempDir()
	recs := map[string]arrow.RecordBatch{
		"events": buildEvents(t, mem, benchRows, 1),
		"types":  buildRecord(t, mem, testSchema(), 3000, 1),
		"empty":  buildRecord(t, mem, testSchema(), 0, 1),
		"noise":  idNoiseRecord(mem, 5000), // a buffer stored as is, behind -1
	}
	for name, rec := range recs {
		defer rec.Release()
		for _, codec := range codecs {
			var stream bytes.Buffer
			sp := ipc.GetSchemaPayload(rec.Schema(), mem)
			if _, err := sp.WritePayload(&stream); err != nil {
				t.Fatal(err)
			}
			sp.Release()
			stream.Write(encode(t, rec, codec, mem))
			stream.Write([]byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0})
			path := filepath.Join(dir, name+"."+codec.String()+".arrows")
			if err := os.WriteFile(path, stream.Bytes(), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	out, err := exec.Command(python, "-c", pyarrowCheck, dir).CombinedOutput()
	if err != nil {
		t.Fatalf("pyarrow: %v\n%s", err, out)
	}
	t.Logf("pyarrow:\n%s", out)
}
