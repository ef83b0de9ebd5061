package arrowmsg

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// inputSchema has the layouts only incoming batches have: views and a
// dictionary (validate_views.go, validate_dict.go).
func inputSchema() *arrow.Schema {
	return arrow.NewSchema([]arrow.Field{
		{Name: "sv", Type: arrow.BinaryTypes.StringView, Nullable: true},
		{Name: "d", Type: &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int16, ValueType: arrow.BinaryTypes.String}, Nullable: true},
		{Name: "lbv", Type: arrow.ListOf(arrow.BinaryTypes.BinaryView), Nullable: true},
	}, nil)
}

// inputMessages is an IPC stream of inputSchema as arrow-go writes it, one
// framed message each: the schema, the dictionary batch, the record batch.
func inputMessages(t testing.TB) [][]byte {
	mem := memory.NewGoAllocator()
	schema := inputSchema()
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for i := range 3 {
		b.Field(0).(*array.StringViewBuilder).Append(strings.Repeat("view", i*5)) // inline and out of line
		if err := b.Field(1).(*array.BinaryDictionaryBuilder).AppendString([]string{"a", "b"}[i%2]); err != nil {
			t.Fatal(err)
		}
		lb := b.Field(2).(*array.ListBuilder)
		lb.Append(true)
		lb.ValueBuilder().(*array.BinaryViewBuilder).Append(bytes.Repeat([]byte{byte(i)}, 20))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(schema), ipc.WithAllocator(mem))
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	// The stream: messages of 0xFFFFFFFF, a length, the flatbuffer and
	// the body; an end-of-stream marker of length 0.
	data := buf.Bytes()
	var msgs [][]byte
	for len(data) >= 8 {
		n := int(binary.LittleEndian.Uint32(data[4:]))
		if n == 0 {
			break
		}
		meta := data[8 : 8+n]
		msg, err := rootTable(meta)
		if err != nil {
			t.Fatal(err)
		}
		bodyLen, err := msg.int64Field(msgBodyLength, 0)
		if err != nil {
			t.Fatal(err)
		}
		body := data[8+n : 8+n+int(bodyLen)]
		msgs = append(msgs, frame(t, meta, body))
		data = data[8+n+int(bodyLen):]
	}
	if len(msgs) != 3 {
		t.Fatalf("%d messages, want schema, dictionary, record batch", len(msgs))
	}
	return msgs
}

// checkInput validates one framed message of inputSchema's stream.
func checkInput(schema *arrow.Schema, msg []byte) error {
	meta, body, err := SplitMessage(msg)
	if err != nil {
		return err
	}
	kind, err := MessageKind(meta)
	if err != nil {
		return err
	}
	switch kind {
	case KindRecordBatch:
		_, err = Validate(schema, meta, body, Limits{})
	case KindDictionaryBatch:
		_, err = ValidateDictionary(schema, meta, body, Limits{})
	}
	return err
}

func TestValidateInputLayouts(t *testing.T) {
	msgs := inputMessages(t)
	for i, m := range msgs[1:] {
		if err := checkInput(inputSchema(), m); err != nil {
			t.Errorf("message %d: %v", i+1, err)
		}
	}
	// The record batch against a schema without the views' variadic
	// buffers is refused, naming the counts.
	plain := arrow.NewSchema([]arrow.Field{
		{Name: "sv", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "d", Type: arrow.PrimitiveTypes.Int16, Nullable: true},
		{Name: "lbv", Type: arrow.ListOf(arrow.BinaryTypes.Binary), Nullable: true},
	}, nil)
	if err := checkInput(plain, msgs[2]); !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "variadic") {
		t.Errorf("record batch against plain types: %v, want ErrMalformed about variadic counts", err)
	}
}

// FuzzValidateInput feeds garbage shaped like view and dictionary messages
// to Validate and ValidateDictionary: nothing may panic, and every error
// wraps a sentinel.
func FuzzValidateInput(f *testing.F) {
	for _, m := range inputMessages(f) {
		f.Add(m)
		f.Add(m[:len(m)/2])
	}
	schema := inputSchema()
	f.Fuzz(func(t *testing.T, data []byte) {
		err := checkInput(schema, data)
		if err != nil && !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrTooLarge) && !errors.Is(err, ErrUnsupported) {
			t.Fatalf("error wraps no sentinel: %v", err)
		}
	})
}
