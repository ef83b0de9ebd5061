package arrowmsg

import "fmt"

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

// check reports whether c is one of the codecs above.
func (c Codec) check() error {
	switch c {
	case CodecNone, CodecLZ4, CodecZstd:
		return nil
	}
	return fmt.Errorf("codec %d is unknown", int8(c))
}
