package arrowmsg

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"sync"

	flatbuffers "github.com/google/flatbuffers/go"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// bodyCodec is a Codec with the settings it compresses at. Only tests and
// benchmarks use a level other than defaultZstdLevel.
type bodyCodec struct {
	codec     Codec
	zstdLevel zstd.EncoderLevel
}

// defaultZstdLevel is the level AppendRecordBatch compresses at.
//
// SpeedFastest, about Zstandard's level 1, which Arrow C++ and pyarrow
// compress IPC bodies at by default. Against SpeedDefault, one core, each
// side measured in the same run: on the benchmark's ingest rows
// (bench/data.go, split by bucket: 1,024 and 16,384-row parts) it is 1.05
// to 1.15 times faster and its output 5 to 8% smaller; on the event rows of
// BenchmarkAppendEvents (65,536 rows) 1.45 times faster (215 against
// 145 MB/s) and 10% larger (ratio 2.44 against 2.68); on log lines 27%
// larger (1.84 against 2.34), by an earlier measurement. Compression is the
// largest CPU cost of ingest (about 40% of the whole benchmark process,
// client included), and the switch raised ingest by 5 to 10% against the
// ceiling. lz4 remains the codec for tables that want speed over size.
//
// WithNoEntropyCompression (no Huffman coding of literals) was measured as
// well: 1.35 to 1.6 times faster again on small buffers, and ingest of
// 4,096-row batches 20% faster, for output 0.2% larger on the benchmark
// rows, 3 to 4.5% on event rows and 14% on testSchema's random strings.
// Not taken: the log's bytes are stored, replicated and served.
const defaultZstdLevel = zstd.SpeedFastest

// zstdWindow bounds how far back a Zstandard match may reach. The default
// window of SpeedDefault is 8 MiB, and the encoder keeps twice its window
// as history: 16 MiB per pooled encoder. A 1 MiB window gave the same
// sizes on the benchmark batches, whose column buffers are at most about
// 1 MiB; Arrow C++ compresses at level 1, with a 512 KiB window.
const zstdWindow = 1 << 20

// maxPooledBody is the largest compressed body scratch kept for reuse; a
// larger one, from an unusually big batch, is left to the collector rather
// than pinned by the pool.
const maxPooledBody = 64 << 20

// encoder is the state of one compressed AppendRecordBatch call, and the
// scratch it reuses across calls: compressors, the compressed body, its
// buffer list and the flatbuffer builder. Encoders are pooled so that a
// steady stream of batches allocates no compressor or body per batch; one
// call owns one encoder, so nothing in it is shared. The pool lets the
// collector drop idle encoders; rebuilding a zstd one costs about 2.5 ms
// and 4.7 MB, once per encoder per two GC cycles at most. (One shared
// zstd.Encoder with GOMAXPROCS inner encoders would keep them across GCs,
// but is process-wide state and blocks callers beyond GOMAXPROCS.)
//
// It is the io.Writer arrow-go's Payload.SerializeBody writes the
// uncompressed body into. Each buffer is compressed as soon as all its
// bytes have arrived; arrow-go's padding is dropped, as the compressed
// layout pads on its own. SerializeBody writes a buffer in one call, so a
// buffer is compressed straight from the batch's memory; pending only
// collects a buffer that arrives in pieces, so that correctness does not
// depend on how SerializeBody chunks its writes.
type encoder struct {
	// Per call.
	codec bodyCodec
	src   []Buffer // uncompressed layout, from arrow-go's metadata
	pos   int64    // uncompressed body bytes written so far

	// Scratch.
	body    []byte   // compressed body
	bufs    []Buffer // compressed layout; bufs[i] is src[i] compressed
	pending []byte
	fb      *flatbuffers.Builder
	zstd    [zstd.SpeedBestCompression + 1]*zstd.Encoder // by level
	lz4     *lz4.Writer
	lz4Out  appendWriter
}

var encoders = sync.Pool{New: func() any { return &encoder{fb: flatbuffers.NewBuilder(1024)} }}

// getEncoder returns a pooled encoder ready to compress a body of
// bodyLength bytes laid out as src.
func getEncoder(c bodyCodec, src []Buffer, bodyLength int64) *encoder {
	e := encoders.Get().(*encoder)
	e.codec, e.src, e.pos = c, src, 0
	e.bufs, e.pending = e.bufs[:0], e.pending[:0]
	// Room for every buffer stored as is: growing by appends from a fresh
	// encoder would allocate and copy about twice that.
	e.body = slices.Grow(e.body[:0], int(bodyLength)+8*len(src))
	return e
}

func putEncoder(e *encoder) {
	e.src = nil
	if cap(e.body) > maxPooledBody {
		e.body = nil
	}
	if cap(e.pending) > maxPooledBody {
		e.pending = nil
	}
	encoders.Put(e)
}

// Write takes the next bytes of the uncompressed body. It is a small state
// machine over src: padding before a buffer is skipped, a buffer's bytes
// are compressed once complete.
func (e *encoder) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		e.skipEmpty()
		if len(e.bufs) == len(e.src) { // padding after the last buffer
			e.pos += int64(len(p))
			break
		}
		b := e.src[len(e.bufs)]
		if e.pos < b.Offset { // padding before b
			k := min(int64(len(p)), b.Offset-e.pos)
			e.pos, p = e.pos+k, p[k:]
			continue
		}
		k := min(int64(len(p)), b.Offset+b.Length-e.pos)
		chunk := p[:k]
		e.pos, p = e.pos+k, p[k:]
		if len(e.pending) > 0 || k < b.Length {
			e.pending = append(e.pending, chunk...)
			if int64(len(e.pending)) < b.Length {
				continue
			}
			chunk = e.pending
		}
		if err := e.addBuffer(chunk); err != nil {
			return n - len(p), err
		}
		e.pending = e.pending[:0]
	}
	return n, nil
}

// skipEmpty records the empty buffers at the cursor: they stay empty, with
// no length prefix, as arrow-go writes them.
func (e *encoder) skipEmpty() {
	for len(e.bufs) < len(e.src) && e.src[len(e.bufs)].Length == 0 {
		e.bufs = append(e.bufs, Buffer{Offset: int64(len(e.body))})
	}
}

// finish checks that the whole body, bodyLength bytes, has been written.
func (e *encoder) finish(bodyLength int64) error {
	e.skipEmpty()
	if len(e.bufs) != len(e.src) || e.pos != bodyLength {
		return fmt.Errorf("serialized body is %d bytes and ends in buffer %d of %d; the metadata claims %d bytes",
			e.pos, len(e.bufs), len(e.src), bodyLength)
	}
	return nil
}

// addBuffer appends one complete buffer to the body, 8-byte aligned.
func (e *encoder) addBuffer(src []byte) error {
	start := len(e.body)
	out, err := e.appendCompressed(e.body, src)
	if err != nil {
		return err
	}
	e.bufs = append(e.bufs, Buffer{Offset: int64(start), Length: int64(len(out) - start)})
	e.body = appendZeros(out, align8(int64(len(out)))-int64(len(out)))
	return nil
}

// appendCompressed appends src as one compressed buffer (see doc.go): its
// length, then an LZ4 or Zstandard frame; or -1, then src as is, when the
// frame is no smaller than src, which also spares the reader a
// decompression. On error dst is returned unchanged.
func (e *encoder) appendCompressed(dst, src []byte) ([]byte, error) {
	start := len(dst)
	dst = binary.LittleEndian.AppendUint64(dst, uint64(len(src)))
	var err error
	switch e.codec.codec {
	case CodecZstd:
		dst, err = e.appendZstd(dst, src)
	case CodecLZ4:
		dst, err = e.appendLZ4(dst, src)
	default:
		err = fmt.Errorf("codec %v does not compress", e.codec.codec)
	}
	if err != nil {
		return dst[:start], err
	}
	if len(dst)-start-8 < len(src) {
		return dst, nil
	}
	dst = binary.LittleEndian.AppendUint64(dst[:start], math.MaxUint64) // int64(-1)
	return append(dst, src...), nil
}

// appendZstd appends src as one Zstandard frame.
//
// The frame has no checksum: Arrow C++ writes none either, and the log
// batch that stores the message has a CRC of its own.
func (e *encoder) appendZstd(dst, src []byte) ([]byte, error) {
	l := e.codec.zstdLevel
	if l < zstd.SpeedFastest || l > zstd.SpeedBestCompression {
		return dst, fmt.Errorf("zstd level %d is unknown", l)
	}
	if e.zstd[l] == nil {
		z, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(l), zstd.WithEncoderConcurrency(1),
			zstd.WithEncoderCRC(false), zstd.WithWindowSize(zstdWindow))
		if err != nil {
			return dst, fmt.Errorf("new zstd encoder: %w", err)
		}
		e.zstd[l] = z
	}
	return e.zstd[l].EncodeAll(src, dst), nil
}

// appendLZ4 appends src as one LZ4 frame, with the options arrow-go and
// Arrow C++ use: 64 KiB independent blocks, no content checksum.
func (e *encoder) appendLZ4(dst, src []byte) ([]byte, error) {
	if e.lz4 == nil {
		w := lz4.NewWriter(nil)
		if err := w.Apply(lz4.ChecksumOption(false), lz4.BlockSizeOption(lz4.Block64Kb)); err != nil {
			return dst, fmt.Errorf("new lz4 writer: %w", err)
		}
		e.lz4 = w
	}
	e.lz4Out.b = dst
	defer func() { e.lz4Out.b = nil }()
	e.lz4.Reset(&e.lz4Out)
	if _, err := e.lz4.Write(src); err != nil {
		return dst, fmt.Errorf("lz4: %w", err)
	}
	if err := e.lz4.Close(); err != nil {
		return dst, fmt.Errorf("lz4: %w", err)
	}
	return e.lz4Out.b, nil
}
