package arrowmsg

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
)

// Default limits; they match arrow-go's reader default body limit (256 MiB).
const (
	DefaultMaxBodyBytes         = 256 << 20
	DefaultMaxUncompressedBytes = 256 << 20
	DefaultMaxRows              = 1 << 24
)

// Limits bounds what Validate accepts. Every limit is a sum over the whole
// batch. A zero field takes its default; to lift a limit set it to
// math.MaxInt64. Zero does not mean "unlimited" because a forgotten field
// must not switch the protection off.
type Limits struct {
	// MaxBodyBytes bounds the encoded (possibly compressed) body.
	// Default DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// MaxUncompressedBytes bounds the sum of the buffers' uncompressed
	// sizes, as claimed by their 8-byte prefixes when compressed: what a
	// decoder would allocate. Default DefaultMaxUncompressedBytes.
	MaxUncompressedBytes int64
	// MaxRows bounds the batch's row count. Default DefaultMaxRows.
	MaxRows int64
}

// EnsureDefaults returns lim with every zero field set to its default.
func (lim Limits) EnsureDefaults() Limits {
	if lim.MaxBodyBytes == 0 {
		lim.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if lim.MaxUncompressedBytes == 0 {
		lim.MaxUncompressedBytes = DefaultMaxUncompressedBytes
	}
	if lim.MaxRows == 0 {
		lim.MaxRows = DefaultMaxRows
	}
	return lim
}

// noLimits is used where the caller has already applied its limits.
var noLimits = Limits{MaxBodyBytes: math.MaxInt64, MaxUncompressedBytes: math.MaxInt64, MaxRows: math.MaxInt64}

// Validate checks a RecordBatch message against schema before anything is
// decoded, so that a decoder given meta and body cannot read out of bounds
// or allocate more than lim allows. It checks that:
//
//   - meta parses (see ParseRecordBatch);
//   - the message has as many field nodes and buffers as schema needs;
//   - the body is as long as the message says, and within lim;
//   - the row count is within lim, every top-level column has exactly that
//     many rows, nested columns have at least as many as their parent needs,
//     and null counts lie between 0 and the node's length;
//   - every buffer lies inside body, and is large enough for the values its
//     node declares (fixed-width data, validity bitmaps, offsets);
//   - with compression, every non-empty buffer starts with a sane 8-byte
//     uncompressed length, and the uncompressed total is within lim.
//
// Variable-length data (offsets pointing into data, list child lengths) is
// only checked by decoding, which Validate does not do.
//
// Errors wrap ErrMalformed, ErrTooLarge or ErrUnsupported and name the
// column; buffer numbers in them count from 0 within that column.
func Validate(schema *arrow.Schema, meta, body []byte, lim Limits) (*RecordBatchHeader, error) {
	hdr, err := ParseRecordBatch(meta)
	if err != nil {
		return nil, fmt.Errorf("validate record batch: %w", err)
	}
	spans, views, err := inputSpans(schema)
	if err != nil {
		return nil, fmt.Errorf("validate record batch: %w", err)
	}
	if err := validateHeader(schema, spans, views, hdr, body, lim.EnsureDefaults()); err != nil {
		return nil, fmt.Errorf("validate record batch: %w", err)
	}
	return hdr, nil
}

// validateHeader is Validate after parsing; spans is columnSpans(schema).
func validateHeader(schema *arrow.Schema, spans []span, views int, hdr *RecordBatchHeader, body []byte, lim Limits) error {
	if err := checkCounts(spans, views, hdr, body, lim); err != nil {
		return err
	}
	c := checker{hdr: hdr, body: body, lim: lim}
	for i := range spans {
		f := schema.Field(i)
		c.column, c.colBuf = f.Name, c.nextB // after the variadic buffers of earlier view columns
		if err := c.node(f.Type, hdr.Length, true, 0); err != nil {
			return err
		}
	}
	return nil
}

// checkCounts checks the batch-level numbers, before any column is walked.
func checkCounts(spans []span, views int, hdr *RecordBatchHeader, body []byte, lim Limits) error {
	var nodes, bufs int
	if n := len(spans); n > 0 {
		nodes, bufs = spans[n-1].node+spans[n-1].nodes, spans[n-1].buf+spans[n-1].bufs
	}
	variadic, err := checkVariadic(hdr, views)
	if err != nil {
		return err
	}
	bufs += variadic
	switch {
	case hdr.Length > lim.MaxRows:
		return &Error{Kind: ErrTooLarge, Msg: fmt.Sprintf("batch has %d rows, over the limit of %d", hdr.Length, lim.MaxRows)}
	case int64(len(body)) > lim.MaxBodyBytes:
		return &Error{Kind: ErrTooLarge, Msg: fmt.Sprintf("body is %d bytes, over the limit of %d", len(body), lim.MaxBodyBytes)}
	case hdr.BodyLength != int64(len(body)):
		return malformed("message claims a %d-byte body, got %d bytes", hdr.BodyLength, len(body))
	case len(hdr.Nodes) != nodes:
		return malformed("message has %d field nodes, the schema needs %d", len(hdr.Nodes), nodes)
	case len(hdr.Buffers) != bufs:
		return malformed("message has %d buffers, the schema needs %d", len(hdr.Buffers), bufs)
	}
	return nil
}

// checker walks the nodes and buffers of a message in schema order. The
// counts were checked first, so the cursors never run off the lists.
type checker struct {
	hdr    *RecordBatchHeader
	body   []byte
	lim    Limits
	column string // top-level column being walked
	colBuf int    // index of its first buffer
	nextN  int    // next node
	nextB  int    // next buffer
	nextV  int    // next variadic buffer count (view nodes)
	total  int64  // uncompressed bytes so far
}

func (c *checker) errorf(kind error, format string, args ...any) error {
	return &Error{Column: c.column, Kind: kind, Msg: fmt.Sprintf(format, args...)}
}

// node checks the next node, of type dt, and its buffers and children.
// rows is the length the node must have (exact) or exceed (!exact).
// It dispatches on the type's shape, so it is longer than most functions.
func (c *checker) node(dt arrow.DataType, rows int64, exact bool, depth int) error {
	s, err := inputShapeOf(dt)
	if err != nil {
		return columnError(c.column, err)
	}
	n := c.hdr.Nodes[c.nextN]
	c.nextN++
	if err := c.checkNode(n, rows, exact, depth); err != nil {
		return err
	}
	if s.kind == kindNull {
		return nil
	}
	if err := c.validity(n); err != nil {
		return err
	}
	switch s.kind {
	case kindFixed:
		return c.buffer(bitsToBytes(satMul(n.Length, s.bits)), n.Length)
	case kindBinary:
		if err := c.offsets(n.Length, s.offset); err != nil {
			return err
		}
		return c.buffer(0, n.Length) // data: bounded by offsets, not checked
	case kindList:
		if err := c.offsets(n.Length, s.offset); err != nil {
			return err
		}
		return c.node(s.elem, 0, false, depth+1)
	case kindFixedList:
		return c.node(s.elem, satMul(n.Length, s.size), false, depth+1)
	case kindView:
		return c.view(n)
	case kindStruct:
		for i := 0; i < s.fields.NumFields(); i++ {
			if err := c.node(s.fields.Field(i).Type, n.Length, false, depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}

func (c *checker) checkNode(n FieldNode, rows int64, exact bool, depth int) error {
	what := "a nested field"
	if depth == 0 {
		what = "the column"
	}
	switch {
	case n.Length < 0:
		return c.errorf(ErrMalformed, "%s claims a negative length %d", what, n.Length)
	case n.NullCount < 0 || n.NullCount > n.Length:
		return c.errorf(ErrMalformed, "%s claims %d nulls in %d values", what, n.NullCount, n.Length)
	case exact && n.Length != rows:
		return c.errorf(ErrMalformed, "%s has %d rows, the batch has %d", what, n.Length, rows)
	case n.Length < rows:
		return c.errorf(ErrMalformed, "%s has %d values, its parent needs %d", what, n.Length, rows)
	}
	return nil
}

// validity checks a validity bitmap, which may be empty when there are no
// nulls.
func (c *checker) validity(n FieldNode) error {
	var need int64
	if n.NullCount > 0 {
		need = bitsToBytes(n.Length)
	}
	return c.buffer(need, n.Length)
}

// offsets checks an offsets buffer: length+1 offsets, none for no values.
func (c *checker) offsets(length, width int64) error {
	var need int64
	if length > 0 {
		need = satMul(length+1, width)
	}
	return c.buffer(need, length)
}

// buffer checks the next buffer: it lies inside the body, its uncompressed
// size is sane and within the limits, and it holds at least need bytes for
// the node's values.
func (c *checker) buffer(need, values int64) error {
	i := c.nextB
	c.nextB++
	rel := i - c.colBuf
	b := c.hdr.Buffers[i]
	if b.Offset < 0 || b.Length < 0 || b.Offset > int64(len(c.body))-b.Length {
		return c.errorf(ErrMalformed, "buffer %d (offset %d, length %d) lies outside the %d-byte body",
			rel, b.Offset, b.Length, len(c.body))
	}
	size, err := c.uncompressedSize(rel, b)
	if err != nil {
		return err
	}
	if size > c.lim.MaxUncompressedBytes {
		return c.errorf(ErrTooLarge, "buffer %d claims %d uncompressed bytes, over the limit of %d",
			rel, size, c.lim.MaxUncompressedBytes)
	}
	if size > c.lim.MaxUncompressedBytes-c.total {
		return c.errorf(ErrTooLarge, "buffer %d brings the batch over the limit of %d uncompressed bytes",
			rel, c.lim.MaxUncompressedBytes)
	}
	c.total += size
	if size < need {
		return c.errorf(ErrMalformed, "buffer %d holds %d bytes, %d values need %d", rel, size, values, need)
	}
	return nil
}

// uncompressedSize is the size of b once decompressed. A compressed buffer
// starts with its uncompressed length, or -1 when stored as is.
func (c *checker) uncompressedSize(rel int, b Buffer) (int64, error) {
	if c.hdr.Codec == CodecNone || b.Length == 0 {
		return b.Length, nil
	}
	if b.Length < 8 {
		return 0, c.errorf(ErrMalformed, "buffer %d is %d bytes, too short for its 8-byte uncompressed length", rel, b.Length)
	}
	claim := int64(binary.LittleEndian.Uint64(c.body[b.Offset:]))
	switch {
	case claim == -1:
		return b.Length - 8, nil
	case claim < 0:
		return 0, c.errorf(ErrMalformed, "buffer %d claims a negative uncompressed length %d", rel, claim)
	}
	return claim, nil
}

// satMul is a*b for non-negative a and b, saturating at math.MaxInt64: a
// size that overflows is larger than any buffer, which is all callers need.
func satMul(a, b int64) int64 {
	if a != 0 && b > math.MaxInt64/a {
		return math.MaxInt64
	}
	return a * b
}

// bitsToBytes rounds a bit count up to whole bytes without overflowing.
func bitsToBytes(bits int64) int64 { return bits/8 + min(bits%8, 1) }
