package arrowmsg

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// fuzzSeeds returns encapsulated messages for testSchema: valid ones for
// each codec, truncated ones, one with a buffer outside the body and one
// whose compressed buffer claims 1 GiB.
func fuzzSeeds(t testing.TB) [][]byte {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	schema := testSchema()
	spans, err := columnSpans(schema)
	if err != nil {
		t.Fatal(err)
	}
	var seeds [][]byte
	for i, codec := range codecs {
		rec := buildRecord(t, mem, schema, 3+i, uint64(i))
		msg := encode(t, rec, codec, mem)
		rec.Release()
		meta, body, err := SplitMessage(msg)
		if err != nil {
			t.Fatal(err)
		}
		seeds = append(seeds, msg, msg[:len(msg)/2], msg[:len(msg)-1], msg[:12])

		hdr, err := ParseRecordBatch(meta)
		if err != nil {
			t.Fatal(err)
		}
		data := spans[colAmount].buf + 1
		if codec != CodecNone {
			big := append([]byte(nil), body...)
			binary.LittleEndian.PutUint64(big[hdr.Buffers[data].Offset:], 1<<30) // claims 1 GiB
			seeds = append(seeds, frame(t, meta, big))
		}
		hdr.Buffers[data].Offset = int64(len(body)) // outside the body
		seeds = append(seeds, frame(t, remeta(hdr), body))
	}
	return seeds
}

// The 1 GiB seed must be refused as too large, not decoded.
func TestSeedClaimsGiB(t *testing.T) {
	seeds := fuzzSeeds(t)
	big := seeds[len(seeds)-2]
	meta, body, err := SplitMessage(big)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Validate(testSchema(), meta, body, Limits{})
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), `column "amount": buffer 1 claims 1073741824`) {
		t.Fatalf("Validate: %v, want ErrTooLarge", err)
	}
}

// FuzzValidate feeds garbage to every reader in the package. Nothing may
// panic; whatever Validate accepts, Project must be able to project, and
// the projection must validate.
func FuzzValidate(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	schema := testSchema()
	spans, err := columnSpans(schema)
	if err != nil {
		f.Fatal(err)
	}
	cols := []int{colMap, colBool, colStr, colStruct}
	projSchema := projectSchema(schema, cols)
	lim := Limits{}.EnsureDefaults()

	f.Fuzz(func(t *testing.T, data []byte) {
		// The input as bare metadata. parseRecordBatch has no recover, so
		// a missing bounds check fails here instead of being hidden.
		if hdr, err := parseRecordBatch(data); err == nil {
			_ = validateHeader(schema, spans, 0, hdr, nil, lim)
		}
		_, _ = messageKind(data)
		meta, body, err := SplitMessage(data)
		if err != nil {
			return
		}
		hdr, err := parseRecordBatch(meta)
		if err != nil {
			return
		}
		if err := validateHeader(schema, spans, 0, hdr, body, lim); err != nil {
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrTooLarge) && !errors.Is(err, ErrUnsupported) {
				t.Fatalf("error wraps no sentinel: %v", err)
			}
			return
		}
		newMeta, newBody, err := Project(schema, cols, meta, body)
		if err != nil {
			t.Fatalf("Project of a valid message: %v", err)
		}
		if _, err := Validate(projSchema, newMeta, newBody, noLimits); err != nil {
			t.Fatalf("projection does not validate: %v", err)
		}
	})
}
