package arrowmsg

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/klauspost/compress/zstd"
)

var frameMagic = map[Codec][]byte{
	CodecLZ4:  {0x04, 0x22, 0x4d, 0x18},
	CodecZstd: {0x28, 0xb5, 0x2f, 0xfd},
}

// TestCompressedLayout checks each kind of compressed buffer: an empty one
// stays empty, an incompressible one is stored as is behind -1, a
// compressible one is a frame behind its uncompressed length.
func TestCompressedLayout(t *testing.T) {
	for _, codec := range []Codec{CodecLZ4, CodecZstd} {
		t.Run(codec.String(), func(t *testing.T) {
			mem := checkedMem(t)
			rec := idNoiseRecord(mem, 5000)
			defer rec.Release()
			checkRoundTrip(t, rec, codec)

			meta, body, err := SplitMessage(encode(t, rec, codec, mem))
			if err != nil {
				t.Fatal(err)
			}
			hdr, err := ParseRecordBatch(meta)
			if err != nil {
				t.Fatal(err)
			}
			// id: validity, data; noise: validity, offsets, data.
			for _, i := range []int{0, 2} {
				if hdr.Buffers[i].Length != 0 {
					t.Errorf("buffer %d: empty validity bitmap is %d bytes, want 0", i, hdr.Buffers[i].Length)
				}
			}
			id, noise := bufferBytes(body, hdr.Buffers[1]), bufferBytes(body, hdr.Buffers[4])
			if got := int64(binary.LittleEndian.Uint64(id)); got != 5000*8 || !bytes.HasPrefix(id[8:], frameMagic[codec]) {
				t.Errorf("id data: prefix %d, frame % x; want 40000 and a %v frame", got, id[8:12], codec)
			}
			if got := int64(binary.LittleEndian.Uint64(noise)); got != -1 || len(noise) != 8+5000*16 {
				t.Errorf("noise data: prefix %d, %d bytes; want -1 and %d bytes", got, len(noise), 8+5000*16)
			}
		})
	}
}

// idNoiseRecord has an int64 column of ascending ids, which compresses,
// and a binary column of 16 random bytes a row, which does not. Neither has
// nulls, so both validity bitmaps are empty.
func idNoiseRecord(mem memory.Allocator, rows int) arrow.RecordBatch {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "noise", Type: arrow.BinaryTypes.Binary},
	}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	r := rand.New(rand.NewPCG(3, 3))
	noise := make([]byte, 16)
	for i := range rows {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		for j := range noise {
			noise[j] = byte(r.Uint32())
		}
		b.Field(1).(*array.BinaryBuilder).Append(noise)
	}
	return b.NewRecordBatch()
}

func bufferBytes(body []byte, b Buffer) []byte { return body[b.Offset : b.Offset+b.Length] }

// chunkWriter splits every write into pieces of at most n bytes.
type chunkWriter struct {
	w io.Writer
	n int
}

func (c chunkWriter) Write(p []byte) (int, error) {
	for i := 0; i < len(p); i += c.n {
		if _, err := c.w.Write(p[i:min(i+c.n, len(p))]); err != nil {
			return i, err
		}
	}
	return len(p), nil
}

// compressBody runs the encoder over rec's body as SerializeBody writes it,
// through wrap.
func compressBody(t *testing.T, rec arrow.RecordBatch, c bodyCodec, wrap func(io.Writer) io.Writer) ([]byte, []Buffer) {
	t.Helper()
	mem := checkedMem(t)
	p, err := ipc.GetRecordBatchPayload(rec, ipc.WithAllocator(mem))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Release()
	meta := p.Meta()
	defer meta.Release()
	hdr, err := ParseRecordBatch(meta.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	e := getEncoder(c, hdr.Buffers, hdr.BodyLength)
	defer putEncoder(e)
	if err := p.SerializeBody(wrap(e)); err != nil {
		t.Fatal(err)
	}
	if err := e.finish(hdr.BodyLength); err != nil {
		t.Fatal(err)
	}
	return bytes.Clone(e.body), slices.Clone(e.bufs)
}

// The encoder must not depend on SerializeBody writing each buffer in one
// call: any chunking gives the same body.
func TestEncoderChunkedWrites(t *testing.T) {
	mem := checkedMem(t)
	rec := buildRecord(t, mem, testSchema(), 40, 8)
	defer rec.Release()
	for _, codec := range []Codec{CodecLZ4, CodecZstd} {
		c := bodyCodec{codec: codec, zstdLevel: defaultZstdLevel}
		wantBody, wantBufs := compressBody(t, rec, c, func(w io.Writer) io.Writer { return w })
		for _, n := range []int{1, 3, 8, 13, 100} {
			body, bufs := compressBody(t, rec, c, func(w io.Writer) io.Writer { return chunkWriter{w, n} })
			if !bytes.Equal(body, wantBody) || !slices.Equal(bufs, wantBufs) {
				t.Errorf("%v, writes of %d bytes: body differs from whole-buffer writes", codec, n)
			}
		}
	}
}

func TestEncoderFinish(t *testing.T) {
	e := getEncoder(bodyCodec{codec: CodecZstd, zstdLevel: defaultZstdLevel}, []Buffer{{0, 3}, {8, 0}, {8, 5}}, 16)
	defer putEncoder(e)
	if _, err := e.Write([]byte("abc\x00\x00\x00\x00\x00de")); err != nil {
		t.Fatal(err)
	}
	if err := e.finish(16); err == nil || !strings.Contains(err.Error(), "ends in buffer 2 of 3") {
		t.Fatalf("finish after a short body: %v", err)
	}
	if _, err := e.Write([]byte("fgh\x00\x00\x00")); err != nil {
		t.Fatal(err)
	}
	if err := e.finish(16); err != nil {
		t.Fatalf("finish: %v", err)
	}
	// 3 and 5 bytes do not compress: each is -1, then the bytes, padded.
	if want := []Buffer{{0, 11}, {16, 0}, {16, 13}}; !slices.Equal(e.bufs, want) {
		t.Errorf("layout %v, want %v", e.bufs, want)
	}
	raw := "\xff\xff\xff\xff\xff\xff\xff\xffabc\x00\x00\x00\x00\x00" +
		"\xff\xff\xff\xff\xff\xff\xff\xffdefgh\x00\x00\x00"
	if string(e.body) != raw {
		t.Errorf("body % x, want % x", e.body, raw)
	}
}

func TestCheckBodyLayout(t *testing.T) {
	for _, c := range []struct {
		bufs []Buffer
		ok   bool
	}{
		{[]Buffer{{0, 3}, {8, 0}, {8, 8}}, true},
		{[]Buffer{{0, 3}, {2, 1}}, false},     // overlap
		{[]Buffer{{8, 3}, {0, 1}}, false},     // out of order
		{[]Buffer{{-8, 3}}, false},            // before the body
		{[]Buffer{{8, 9}}, false},             // past the body
		{[]Buffer{{0, -1}}, false},            // negative length
		{[]Buffer{{1 << 62, 1 << 62}}, false}, // overflow
	} {
		err := checkBodyLayout(&RecordBatchHeader{Buffers: c.bufs, BodyLength: 16})
		if (err == nil) != c.ok {
			t.Errorf("%v: %v", c.bufs, err)
		}
	}
	if err := checkBodyLayout(&RecordBatchHeader{Codec: CodecLZ4}); err == nil {
		t.Errorf("a compressed payload passes")
	}
}

// Pooled encoders carry no state from one call to the next: the same batch
// encodes to the same bytes whatever was encoded in between.
func TestAppendRecordBatchDeterministic(t *testing.T) {
	mem := checkedMem(t)
	a := buildEvents(t, mem, 3000, 1)
	defer a.Release()
	other := buildRecord(t, mem, testSchema(), 500, 2)
	defer other.Release()
	for _, codec := range []Codec{CodecLZ4, CodecZstd} {
		first := encode(t, a, codec, mem)
		for _, c := range codecs {
			encode(t, other, c, mem)
		}
		if again := encode(t, a, codec, mem); !bytes.Equal(first, again) {
			t.Errorf("%v: encoding the same batch twice gave different bytes", codec)
		}
	}
}

// Callers encode batches in parallel; run under -race.
func TestAppendRecordBatchConcurrent(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator()) // shared: goroutines may not use t's
	defer mem.AssertSize(t, 0)
	recs := make([]arrow.RecordBatch, 4)
	for i := range recs {
		recs[i] = buildEvents(t, mem, 1000+i*700, uint64(i))
		defer recs[i].Release()
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Go(func() {
			for i := range 6 {
				rec, codec := recs[(g+i)%len(recs)], codecs[(g+i)%len(codecs)]
				msg, err := AppendRecordBatch(nil, rec, codec, mem)
				if err != nil {
					errs <- err
					return
				}
				if err := decodeEqual(mem, rec, msg); err != nil {
					errs <- fmt.Errorf("%v: %w", codec, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// decodeEqual is decode and compare, returning an error rather than
// failing t, for use off the test goroutine.
func decodeEqual(mem memory.Allocator, rec arrow.RecordBatch, msg []byte) error {
	var stream bytes.Buffer
	sp := ipc.GetSchemaPayload(rec.Schema(), mem)
	_, err := sp.WritePayload(&stream)
	sp.Release()
	if err != nil {
		return err
	}
	stream.Write(msg)
	rdr, err := ipc.NewReader(&stream, ipc.WithAllocator(mem))
	if err != nil {
		return err
	}
	defer rdr.Release()
	if !rdr.Next() {
		return fmt.Errorf("no batch: %v", rdr.Err())
	}
	if !array.RecordEqual(rec, rdr.RecordBatch()) {
		return fmt.Errorf("decoded batch differs")
	}
	return nil
}

// Every zstd level the benchmarks compare must decode.
func TestRoundTripZstdLevels(t *testing.T) {
	for _, level := range []zstd.EncoderLevel{zstd.SpeedFastest, zstd.SpeedDefault, zstd.SpeedBetterCompression} {
		t.Run(level.String(), func(t *testing.T) {
			mem := checkedMem(t)
			rec := buildEvents(t, mem, 2000, 4)
			defer rec.Release()
			msg, err := appendRecordBatch(nil, rec, bodyCodec{codec: CodecZstd, zstdLevel: level}, mem)
			if err != nil {
				t.Fatal(err)
			}
			got := decode(t, mem, rec.Schema(), msg)
			defer got.Release()
			if !array.RecordEqual(rec, got) {
				t.Fatalf("decoded batch differs")
			}
		})
	}
	mem := checkedMem(t)
	rec := buildEvents(t, mem, 10, 4)
	defer rec.Release()
	if _, err := appendRecordBatch(nil, rec, bodyCodec{codec: CodecZstd, zstdLevel: 9}, mem); err == nil {
		t.Errorf("zstd level 9: no error")
	}
}
