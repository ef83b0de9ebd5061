package arrowmsg

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Part of the wire format: see the diagram in doc.go.
const (
	continuation = 0xFFFFFFFF
	prefixSize   = 8 // continuation marker + metadata length
	alignment    = 8 // metadata and every body buffer start 8-byte aligned
)

// align8 rounds n up to a multiple of 8.
func align8(n int64) int64 { return (n + alignment - 1) &^ (alignment - 1) }

// SplitMessage splits one encapsulated message into its metadata (the
// Message flatbuffer with its padding) and its body. b must hold exactly one
// message: the body length comes from the flatbuffer, and a short or long b
// is an error wrapping ErrMalformed. The results alias b and have their
// capacity clipped, so appending to one cannot overwrite the other.
func SplitMessage(b []byte) (meta, body []byte, err error) {
	meta, err = frameMetadata(b)
	if err != nil {
		return nil, nil, fmt.Errorf("split message: %w", err)
	}
	msg, err := rootTable(meta)
	if err != nil {
		return nil, nil, fmt.Errorf("split message: %w", err)
	}
	bodyLen, err := msg.int64Field(msgBodyLength, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("split message: %w", err)
	}
	rest := int64(len(b)) - prefixSize - int64(len(meta))
	switch {
	case bodyLen < 0:
		err = malformed("message claims a negative body length %d", bodyLen)
	case bodyLen > rest:
		err = malformed("message claims a %d-byte body, only %d bytes follow the metadata", bodyLen, rest)
	case bodyLen < rest:
		err = malformed("%d bytes follow the %d-byte body", rest-bodyLen, bodyLen)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("split message: %w", err)
	}
	start := prefixSize + len(meta)
	return meta, b[start:len(b):len(b)], nil
}

// frameMetadata checks the 8-byte prefix and returns the metadata it frames.
func frameMetadata(b []byte) ([]byte, error) {
	if len(b) < prefixSize {
		return nil, malformed("message is %d bytes, shorter than its %d-byte prefix", len(b), prefixSize)
	}
	if binary.LittleEndian.Uint32(b) != continuation {
		return nil, malformed("message does not start with the continuation marker 0xFFFFFFFF")
	}
	n := int64(int32(binary.LittleEndian.Uint32(b[4:])))
	switch {
	case n == 0:
		return nil, malformed("message is an end-of-stream marker")
	case n < 0:
		return nil, malformed("message claims negative metadata length %d", n)
	case n > int64(len(b))-prefixSize:
		return nil, malformed("message claims %d bytes of metadata, only %d follow the prefix", n, len(b)-prefixSize)
	}
	return b[prefixSize : prefixSize+n : prefixSize+n], nil
}

// appendFrame appends the prefix, the flatbuffer meta and its padding: all
// of an encapsulated message except the body.
func appendFrame(dst, meta []byte) ([]byte, error) {
	padded := align8(int64(len(meta)))
	if padded > math.MaxInt32 {
		return dst, fmt.Errorf("append message: %d bytes of metadata do not fit an int32 length", len(meta))
	}
	dst = binary.LittleEndian.AppendUint32(dst, continuation)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(padded))
	dst = append(dst, meta...)
	return appendZeros(dst, padded-int64(len(meta))), nil
}

func appendZeros(dst []byte, n int64) []byte {
	var zeros [alignment]byte
	for n > 0 {
		k := min(n, alignment)
		dst = append(dst, zeros[:k]...)
		n -= k
	}
	return dst
}

// appendWriter is an io.Writer that appends to a slice; arrow-go's
// Payload.SerializeBody writes through it straight into the caller's dst.
type appendWriter struct{ b []byte }

func (w *appendWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}
