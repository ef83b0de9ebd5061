package arrowmsg

import (
	"encoding/binary"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	flatbuffers "github.com/google/flatbuffers/go"
)

// The brief's example: a compressed buffer that claims 1 GiB.
func TestValidateClaimTooLarge(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{{Name: "amount", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)
	frameBytes := binary.LittleEndian.AppendUint64(nil, 1<<30)          // claimed uncompressed length
	frameBytes = append(frameBytes, 0x28, 0xb5, 0x2f, 0xfd, 0, 0, 0, 0) // a zstd magic, then nothing useful
	meta, body := craft(4, []FieldNode{{4, 0}}, CodecNone, nil, frameBytes)
	hdr, err := ParseRecordBatch(meta)
	if err != nil {
		t.Fatal(err)
	}
	hdr.Codec = CodecZstd // craft would have added a -1 prefix; the claim is in the bytes already
	meta = remeta(hdr)

	_, err = Validate(schema, meta, body, Limits{MaxUncompressedBytes: 256 << 20})
	want := `validate record batch: column "amount": buffer 1 claims 1073741824 uncompressed bytes, over the limit of 268435456`
	if !errors.Is(err, ErrTooLarge) || err.Error() != want {
		t.Fatalf("Validate:\n got %v\nwant %s (ErrTooLarge)", err, want)
	}
	var e *Error
	if !errors.As(err, &e) || e.Column != "amount" {
		t.Fatalf("errors.As: %#v", e)
	}
	if _, err := Validate(schema, meta, body, Limits{MaxUncompressedBytes: math.MaxInt64}); err != nil {
		t.Fatalf("lifted limit: %v", err)
	}
}

// mutation changes a valid header; Validate must then fail with kind, and
// the message must contain text.
type mutation struct {
	name   string
	mutate func(h *RecordBatchHeader, body []byte) []byte // returns the body to use
	lim    Limits
	kind   error
	text   string
}

func TestValidateRejects(t *testing.T) {
	schema := testSchema()
	spans, err := columnSpans(schema)
	if err != nil {
		t.Fatal(err)
	}
	amount := spans[colAmount] // int64: validity, data
	mapCol := spans[colMap]
	for _, codec := range codecs {
		mem := checkedMem(t)
		rec := buildRecord(t, mem, schema, 50, 5)
		meta, body, err := SplitMessage(encode(t, rec, codec, mem))
		rec.Release()
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range mutations(amount, mapCol, codec) {
			t.Run(codec.String()+"/"+m.name, func(t *testing.T) {
				hdr, err := ParseRecordBatch(meta)
				if err != nil {
					t.Fatal(err)
				}
				b := m.mutate(hdr, append([]byte(nil), body...))
				_, err = Validate(schema, remeta(hdr), b, m.lim)
				if !errors.Is(err, m.kind) || !strings.Contains(err.Error(), m.text) {
					t.Fatalf("got %v\nwant %v containing %q", err, m.kind, m.text)
				}
			})
		}
	}
}

func mutations(amount, mapCol span, codec Codec) []mutation {
	data := amount.buf + 1
	ms := []mutation{
		{"node count", func(h *RecordBatchHeader, b []byte) []byte { h.Nodes = h.Nodes[1:]; return b },
			Limits{}, ErrMalformed, "field nodes, the schema needs"},
		{"buffer count", func(h *RecordBatchHeader, b []byte) []byte { h.Buffers = append(h.Buffers, Buffer{}); return b },
			Limits{}, ErrMalformed, "buffers, the schema needs"},
		{"buffer past body", func(h *RecordBatchHeader, b []byte) []byte { h.Buffers[data].Offset = h.BodyLength; return b },
			Limits{}, ErrMalformed, `column "amount": buffer 1 (offset`},
		{"buffer offset overflow", func(h *RecordBatchHeader, b []byte) []byte { h.Buffers[data].Offset = math.MaxInt64 - 4; return b },
			Limits{}, ErrMalformed, "lies outside"},
		{"negative buffer length", func(h *RecordBatchHeader, b []byte) []byte { h.Buffers[data].Length = -8; return b },
			Limits{}, ErrMalformed, "lies outside"},
		{"body longer than claimed", func(h *RecordBatchHeader, b []byte) []byte { return append(b, 0, 0, 0, 0, 0, 0, 0, 0) },
			Limits{}, ErrMalformed, "-byte body, got"},
		{"rows over limit", func(h *RecordBatchHeader, b []byte) []byte { return b },
			Limits{MaxRows: 49}, ErrTooLarge, "batch has 50 rows, over the limit of 49"},
		{"body over limit", func(h *RecordBatchHeader, b []byte) []byte { return b },
			Limits{MaxBodyBytes: 64}, ErrTooLarge, "over the limit of 64"},
		{"total over limit", func(h *RecordBatchHeader, b []byte) []byte { return b },
			Limits{MaxUncompressedBytes: 1000}, ErrTooLarge, "over the limit of 1000"},
		{"column rows", func(h *RecordBatchHeader, b []byte) []byte { h.Nodes[amount.node].Length = 49; return b },
			Limits{}, ErrMalformed, `column "amount": the column has 49 rows, the batch has 50`},
		{"negative node length", func(h *RecordBatchHeader, b []byte) []byte { h.Nodes[mapCol.node+1].Length = -1; return b },
			Limits{}, ErrMalformed, `column "map": a nested field claims a negative length`},
		{"nulls over length", func(h *RecordBatchHeader, b []byte) []byte { h.Nodes[amount.node].NullCount = 51; return b },
			Limits{}, ErrMalformed, "claims 51 nulls in 50 values"},
		{"struct child too short", func(h *RecordBatchHeader, b []byte) []byte { h.Nodes[mapCol.node+2].Length = 0; return b },
			Limits{}, ErrMalformed, "its parent needs"},
		{"variadic counts", func(h *RecordBatchHeader, b []byte) []byte { h.VariadicBufferCounts = []int64{1}; return b },
			Limits{}, ErrMalformed, "variadic"},
		{"data buffer too small", func(h *RecordBatchHeader, b []byte) []byte {
			h.Buffers[data].Length = 16
			if codec != CodecNone {
				binary.LittleEndian.PutUint64(b[h.Buffers[data].Offset:], math.MaxUint64) // stored as is
			}
			return b
		}, Limits{}, ErrMalformed, "50 values need 400"},
		{"validity missing", func(h *RecordBatchHeader, b []byte) []byte { h.Buffers[amount.buf].Length = 0; return b },
			Limits{}, ErrMalformed, "buffer 0 holds 0 bytes, 50 values need 7"},
	}
	if codec == CodecNone {
		return ms
	}
	return append(ms,
		mutation{"short compressed buffer", func(h *RecordBatchHeader, b []byte) []byte { h.Buffers[data].Length = 5; return b },
			Limits{}, ErrMalformed, "too short for its 8-byte uncompressed length"},
		mutation{"negative claim", func(h *RecordBatchHeader, b []byte) []byte {
			binary.LittleEndian.PutUint64(b[h.Buffers[data].Offset:], uint64(math.MaxUint64-1)) // -2
			return b
		}, Limits{}, ErrMalformed, "negative uncompressed length -2"},
		mutation{"claim too small", func(h *RecordBatchHeader, b []byte) []byte {
			binary.LittleEndian.PutUint64(b[h.Buffers[data].Offset:], 8)
			return b
		}, Limits{}, ErrMalformed, "buffer 1 holds 8 bytes, 50 values need 400"},
	)
}

func TestParseRecordBatchRejects(t *testing.T) {
	meta, _ := craft(1, []FieldNode{{1, 0}}, CodecLZ4, []byte{1})
	hdr, err := ParseRecordBatch(meta)
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		mutate func(*RecordBatchHeader)
		kind   error
	}{
		"version V3":    {func(h *RecordBatchHeader) { h.Version = 2 }, ErrUnsupported},
		"negative rows": {func(h *RecordBatchHeader) { h.Length = -1 }, ErrMalformed},
		"negative body": {func(h *RecordBatchHeader) { h.BodyLength = -8 }, ErrMalformed},
	}
	for name, c := range cases {
		h := *hdr
		c.mutate(&h)
		if _, err := ParseRecordBatch(remeta(&h)); !errors.Is(err, c.kind) {
			t.Errorf("%s: got %v, want %v", name, err, c.kind)
		}
	}
	if _, err := ParseRecordBatch(nil); !errors.Is(err, ErrMalformed) {
		t.Errorf("nil metadata: %v", err)
	}
	for _, bc := range [][2]int8{{7, 0}, {1, 1}} {
		if _, err := ParseRecordBatch(compressedMessage(bc[0], bc[1])); !errors.Is(err, ErrUnsupported) {
			t.Errorf("codec %d method %d: %v, want ErrUnsupported", bc[0], bc[1], err)
		}
	}
	if h, err := ParseRecordBatch(compressedMessage(1, 0)); err != nil || h.Codec != CodecZstd {
		t.Errorf("zstd: %v, %v", h, err)
	}
}

// compressedMessage is an empty record batch whose BodyCompression holds
// codec and method, values buildMessage cannot write.
func compressedMessage(codec, method int8) []byte {
	b := flatbuffers.NewBuilder(0)
	b.StartObject(2)
	b.PrependInt8Slot(bcCodec, codec, 0)
	b.PrependInt8Slot(bcMethod, method, 0)
	bc := b.EndObject()
	b.StartObject(rbNumFields)
	b.PrependUOffsetTSlot(rbCompression, bc, 0)
	rb := b.EndObject()
	b.StartObject(msgNumFields)
	b.PrependInt16Slot(msgVersion, metadataV5, 0)
	b.PrependByteSlot(msgHeaderType, headerRecordBatch, 0)
	b.PrependUOffsetTSlot(msgHeader, rb, 0)
	b.Finish(b.EndObject())
	return b.FinishedBytes()
}

// Every prefix of a valid message is rejected, never a panic.
func TestTruncated(t *testing.T) {
	schema := testSchema()
	for _, codec := range codecs {
		mem := checkedMem(t)
		rec := buildRecord(t, mem, schema, 20, 8)
		msg := encode(t, rec, codec, mem)
		rec.Release()
		meta, _, err := SplitMessage(msg)
		if err != nil {
			t.Fatal(err)
		}
		for n := range len(msg) {
			if _, _, err := SplitMessage(msg[:n]); !errors.Is(err, ErrMalformed) {
				t.Fatalf("%v: SplitMessage of %d/%d bytes: %v", codec, n, len(msg), err)
			}
		}
		for n := range len(meta) {
			_, _ = ParseRecordBatch(meta[:n]) // may parse if only padding is cut; must not panic
		}
	}
}

func TestSplitMessageRejects(t *testing.T) {
	meta, body := craft(1, []FieldNode{{1, 0}}, CodecNone, nil, []byte{7, 0, 0, 0})
	msg := frame(t, meta, body)
	if _, _, err := SplitMessage(append(msg, 0)); !errors.Is(err, ErrMalformed) {
		t.Errorf("trailing byte: %v", err)
	}
	eos := []byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0}
	if _, _, err := SplitMessage(eos); !errors.Is(err, ErrMalformed) {
		t.Errorf("end-of-stream marker: %v", err)
	}
	old := append([]byte(nil), msg[4:]...) // pre-0.15 framing, no continuation marker
	if _, _, err := SplitMessage(old); !errors.Is(err, ErrMalformed) {
		t.Errorf("no continuation marker: %v", err)
	}
}

// buildMessage and parseRecordBatch are inverses, custom metadata included,
// and Project keeps the custom metadata.
func TestHeaderRoundTripAndMetadata(t *testing.T) {
	mem := checkedMem(t)
	plain := buildRecord(t, mem, testSchema(), 10, 1)
	defer plain.Release()
	md := arrow.NewMetadata([]string{"origin", "k"}, []string{"test", ""})
	rec := array.NewRecordBatchWithMetadata(plain.Schema(), plain.Columns(), plain.NumRows(), md)
	defer rec.Release()

	meta, body, err := SplitMessage(encode(t, rec, CodecZstd, mem))
	if err != nil {
		t.Fatal(err)
	}
	hdr, err := ParseRecordBatch(meta)
	if err != nil {
		t.Fatal(err)
	}
	want := []KeyValue{{"origin", "test"}, {"k", ""}}
	if !reflect.DeepEqual(hdr.Metadata, want) {
		t.Fatalf("custom metadata %v, want %v", hdr.Metadata, want)
	}
	hdr.VariadicBufferCounts = []int64{3, 4}
	again, err := ParseRecordBatch(remeta(hdr))
	if err != nil || !reflect.DeepEqual(again, hdr) {
		t.Fatalf("rebuilt header differs: %v\n got %+v\nwant %+v", err, again, hdr)
	}

	newMeta, _, err := Project(rec.Schema(), []int{1}, meta, body)
	if err != nil {
		t.Fatal(err)
	}
	proj, err := ParseRecordBatch(newMeta)
	if err != nil || !reflect.DeepEqual(proj.Metadata, want) {
		t.Fatalf("projected custom metadata %v (%v), want %v", proj.Metadata, err, want)
	}
}
