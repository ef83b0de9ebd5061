package arrowmsg

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Codec is the body compression of a record batch message.
//
// The values are this package's own and are not the flatbuffer's: the
// format has no "none" codec (compression is signalled by the presence of
// the BodyCompression table), and its CompressionType enum starts at
// LZ4_FRAME = 0. The mapping is
//
//	CodecNone -> no BodyCompression table
//	CodecLZ4  -> BodyCompression.codec = 0 (LZ4_FRAME)
//	CodecZstd -> BodyCompression.codec = 1 (ZSTD)
//
// so that the zero Codec means "uncompressed".
type Codec int8

const (
	CodecNone Codec = 0
	CodecLZ4  Codec = 1
	CodecZstd Codec = 2
)

// Flatbuffer values of BodyCompression.codec and .method.
const (
	fbCodecLZ4Frame = 0
	fbCodecZstd     = 1
	fbMethodBuffer  = 0
)

func (c Codec) String() string {
	switch c {
	case CodecNone:
		return "none"
	case CodecLZ4:
		return "lz4"
	case CodecZstd:
		return "zstd"
	}
	return fmt.Sprintf("Codec(%d)", int8(c))
}

// codecFromFB maps BodyCompression.codec to a Codec.
func codecFromFB(v int8) (Codec, error) {
	switch v {
	case fbCodecLZ4Frame:
		return CodecLZ4, nil
	case fbCodecZstd:
		return CodecZstd, nil
	}
	return CodecNone, unsupported("body compression codec %d is unknown", v)
}

// fb returns the BodyCompression.codec value; only for CodecLZ4 and CodecZstd.
func (c Codec) fb() int8 {
	if c == CodecZstd {
		return fbCodecZstd
	}
	return fbCodecLZ4Frame
}

// ipcOptions returns the arrow-go writer options that produce codec.
func (c Codec) ipcOptions(mem memory.Allocator) ([]ipc.Option, error) {
	opts := []ipc.Option{ipc.WithAllocator(mem)}
	switch c {
	case CodecNone:
	case CodecLZ4:
		opts = append(opts, ipc.WithLZ4())
	case CodecZstd:
		opts = append(opts, ipc.WithZstd())
	default:
		return nil, fmt.Errorf("codec %d is unknown", int8(c))
	}
	return opts, nil
}
