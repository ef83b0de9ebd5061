package arrowmsg

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	flatbuffers "github.com/google/flatbuffers/go"
)

// TestMessageKind reads the kinds of the messages arrow-go writes for a
// stream with a dictionary column: schema, dictionary batch, record batch.
func TestMessageKind(t *testing.T) {
	mem := checkedMem(t)
	dictType := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int8, ValueType: arrow.BinaryTypes.String}
	schema := arrow.NewSchema([]arrow.Field{{Name: "d", Type: dictType}}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	if err := b.Field(0).(*array.BinaryDictionaryBuilder).AppendString("x"); err != nil {
		t.Fatal(err)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()

	var stream bytes.Buffer
	w := ipc.NewWriter(&stream, ipc.WithSchema(schema), ipc.WithAllocator(mem))
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	metas := streamMetas(t, stream.Bytes())
	want := []Kind{KindSchema, KindDictionaryBatch, KindRecordBatch}
	if len(metas) != len(want) {
		t.Fatalf("stream has %d messages, want %d", len(metas), len(want))
	}
	for i, meta := range metas {
		if k, err := MessageKind(meta); k != want[i] || err != nil {
			t.Errorf("message %d: MessageKind = %v, %v; want %v", i, k, err, want[i])
		}
	}

	// And a batch of this package's own, compressed.
	ev := buildEvents(t, mem, 10, 1)
	defer ev.Release()
	meta, _, err := SplitMessage(encode(t, ev, CodecZstd, mem))
	if err != nil {
		t.Fatal(err)
	}
	if k, err := MessageKind(meta); k != KindRecordBatch || err != nil {
		t.Errorf("AppendRecordBatch message: MessageKind = %v, %v", k, err)
	}
}

// header_type is a ubyte: tags above 127 are unknown kinds, not negative
// ones, and ParseRecordBatch names them as such.
func TestMessageKindHighTag(t *testing.T) {
	for _, tag := range []uint8{6, 127, 128, 200, 255} {
		meta := messageWithTag(tag)
		k, err := MessageKind(meta)
		if err != nil || int(k) != int(tag) { // int: a signed Kind would come out negative
			t.Errorf("tag %d: MessageKind = %d, %v", tag, k, err)
		}
		if got, want := k.String(), "kind("+strconv.Itoa(int(tag))+")"; got != want {
			t.Errorf("tag %d: String() = %q, want %q", tag, got, want)
		}
		_, err = ParseRecordBatch(meta)
		if want := "type " + strconv.Itoa(int(tag)) + ", not a record batch"; !errors.Is(err, ErrMalformed) || !bytes.Contains([]byte(err.Error()), []byte(want)) {
			t.Errorf("tag %d: ParseRecordBatch: %v, want ErrMalformed with %q", tag, err, want)
		}
	}
}

// Garbage and truncated messages return ErrMalformed and never panic; the
// unrecovered messageKind is called so that a panic would fail the test.
func TestMessageKindGarbage(t *testing.T) {
	mem := checkedMem(t)
	rec := buildRecord(t, mem, testSchema(), 3, 1)
	defer rec.Release()
	meta, _, err := SplitMessage(encode(t, rec, CodecLZ4, mem))
	if err != nil {
		t.Fatal(err)
	}
	inputs := [][]byte{nil, {}, {1, 2, 3}, {0xff, 0xff, 0xff, 0xff}, {0xff, 0xff, 0xff, 0x7f, 0, 0, 0, 0}}
	for n := range len(meta) {
		inputs = append(inputs, meta[:n])
	}
	r := rand.New(rand.NewPCG(1, 1))
	for range 2000 {
		b := bytes.Clone(meta)
		for range 1 + r.IntN(4) {
			b[r.IntN(len(b))] = byte(r.Uint32())
		}
		inputs = append(inputs, b)
		junk := make([]byte, r.IntN(64))
		for i := range junk {
			junk[i] = byte(r.Uint32())
		}
		inputs = append(inputs, junk)
	}
	for _, in := range inputs {
		if _, err := messageKind(in); err != nil && !errors.Is(err, ErrMalformed) {
			t.Fatalf("messageKind(%x): %v, want ErrMalformed", in, err)
		}
		if _, err := MessageKind(in); err != nil && !errors.Is(err, ErrMalformed) {
			t.Fatalf("MessageKind(%x): %v, want ErrMalformed", in, err)
		}
	}
	if _, err := MessageKind(meta[:3]); !errors.Is(err, ErrMalformed) {
		t.Errorf("3-byte metadata: %v, want ErrMalformed", err)
	}
}

// messageWithTag builds a V5 Message whose header_type is tag and whose
// header is an empty table.
func messageWithTag(tag uint8) []byte {
	b := flatbuffers.NewBuilder(64)
	b.StartObject(0)
	hdr := b.EndObject()
	b.StartObject(msgNumFields)
	b.PrependInt16Slot(msgVersion, metadataV5, 0)
	b.PrependByteSlot(msgHeaderType, tag, 0)
	b.PrependUOffsetTSlot(msgHeader, hdr, 0)
	b.Finish(b.EndObject())
	return b.FinishedBytes()
}

// streamMetas returns the Message flatbuffer of every message of an IPC
// stream, up to its end-of-stream marker.
func streamMetas(t *testing.T, stream []byte) [][]byte {
	t.Helper()
	var metas [][]byte
	for len(stream) >= prefixSize {
		meta, err := frameMetadata(stream)
		if err != nil {
			if bytes.Equal(stream[:prefixSize], []byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0}) {
				return metas // end of stream
			}
			t.Fatal(err)
		}
		msg, err := rootTable(meta)
		if err != nil {
			t.Fatal(err)
		}
		bodyLen, err := msg.int64Field(msgBodyLength, 0)
		if err != nil {
			t.Fatal(err)
		}
		metas = append(metas, meta)
		stream = stream[prefixSize+int64(len(meta))+bodyLen:]
	}
	t.Fatalf("stream ends without an end-of-stream marker")
	return nil
}
