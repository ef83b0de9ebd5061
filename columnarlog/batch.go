package columnarlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// Batch header layout, little-endian. This is part of the on-disk and wire
// format: changing an offset or a size needs a new Magic.
//
//	offset size  field
//	     0    8  BaseOffset       int64   stamped by the server on append
//	     8    4  Length           int32   bytes after this field
//	    12    1  Magic            int8    format version, MagicV2 (MagicV1 is still read)
//	    13    8  CommitTimestamp  int64   unix microseconds, stamped on append
//	    21    4  LeaderEpoch      int32   stamped on append
//	    25    4  CRC              uint32  CRC-32C (Castagnoli) of bytes [29, 51) and [55, end)
//	    29    2  Attributes       int16   see Attr*
//	    31    4  SchemaId         int32
//	    35    8  WriterId         int64   0 = no idempotence
//	    43    4  WriterSeq        int32
//	    47    4  RecordCount      int32
//	    51    4  HeaderCRC        uint32  CRC-32C of bytes [0, 29): BaseOffset .. CRC
//	    55       [stats section]        if AttrHasStats: uint32 length, then that many bytes (stats.go)
//	             [change types]         if AttrHasChangeTypes: RecordCount bytes, one ChangeType each
//	             arrow message          one encapsulated Arrow IPC RecordBatch message:
//	                                    0xFFFFFFFF | int32 metadata length | flatbuffer | body
//
// The fields the server stamps sit before the CRC, so that stamping them
// never recomputes it: the CRC is a pass over the whole batch, made once by
// the producer. The header CRC covers them, and the CRC field with them, and
// is what stamping recomputes: 29 bytes. So every byte of a batch but the
// header CRC itself is covered by one of the two checksums, and the header
// CRC is checked against the bytes it covers. A CRC-32C detects every error
// confined to 32 consecutive bits, so any damage to one byte of a batch is
// found.
//
// Version 1 (MagicV1) has no HeaderCRC: its fixed header ends at byte 51,
// where the sections begin, and its CRC covers bytes [29, end). Its
// BaseOffset, Length and Magic are checked only by the framing and offsets
// of a segment, and damage to its CommitTimestamp or LeaderEpoch goes
// undetected. Logs read version 1 batches and write version 2 only.
const (
	offBaseOffset  = 0
	offLength      = 8
	offMagic       = 12
	offCommitTS    = 13
	offLeaderEpoch = 21
	offCRC         = 25
	offAttributes  = 29
	offSchemaID    = 31
	offWriterID    = 35
	offWriterSeq   = 43
	offRecordCount = 47
	offHeaderCRC   = 51

	// HeaderSize is the size of the fixed header of the batches a log
	// writes (version 2).
	HeaderSize = 55
	// HeaderSizeV1 is the size of the fixed header of a version 1 batch,
	// the smallest a batch can be.
	HeaderSizeV1 = 51
	// crcStart is where the bytes covered by the CRC begin; the header CRC
	// covers the bytes before it.
	crcStart = offAttributes
	// lengthBase is the number of bytes not counted by Length.
	lengthBase = offMagic

	// MagicV1 is the first batch format: no header checksum.
	MagicV1 int8 = 1
	// MagicV2 adds the header checksum. Logs write it.
	MagicV2 int8 = 2
)

// Attributes bits.
const (
	// AttrCodecMask holds the Arrow body compression of the message.
	AttrCodecMask int16 = 0x3
	// AttrHasChangeTypes marks a primary-key changelog batch.
	AttrHasChangeTypes int16 = 1 << 2
	// AttrHasStats marks a batch with a per-column statistics section.
	AttrHasStats int16 = 1 << 3
)

// Codec is the Arrow IPC body compression of a batch, as kept in Attributes.
// The values are those of internal/arrowmsg.Codec.
type Codec int16

const (
	CodecNone Codec = 0
	CodecLZ4  Codec = 1
	CodecZstd Codec = 2
)

func (c Codec) String() string {
	switch c {
	case CodecNone:
		return "none"
	case CodecZstd:
		return "zstd"
	case CodecLZ4:
		return "lz4"
	}
	return fmt.Sprintf("codec(%d)", int16(c))
}

// ChangeType is the kind of change a row of a primary-key changelog carries.
type ChangeType int8

const (
	AppendOnly   ChangeType = 0 // +A
	Insert       ChangeType = 1 // +I
	UpdateBefore ChangeType = 2 // -U
	UpdateAfter  ChangeType = 3 // +U
	Delete       ChangeType = 4 // -D
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrCorrupt is wrapped by every error that reports bytes which are not a
// valid batch, or a log whose batches do not follow each other: a bad
// length, magic, checksum or offset. Callers test it with errors.Is; a
// damaged segment is reported as a *CorruptionError, which wraps it.
var ErrCorrupt = errors.New("corrupt batch")

// Header holds the fields a producer sets. The server-stamped fields are set
// by the log on append; the Attributes bits are derived from Codec, Stats
// and the batch's change types, so only this package composes them.
type Header struct {
	// Codec is the Arrow body compression of the batch's message.
	Codec Codec
	// Stats says that a statistics section follows the fixed header
	// (AppendStatsSection).
	Stats bool
	// changeTypes says that RecordCount change types follow (NewBatch).
	changeTypes bool

	SchemaID    int32
	WriterID    int64
	WriterSeq   int32
	RecordCount int32
}

// Batch is the stored bytes of one batch, header included. Its accessors
// read the header in place: they need the fixed header (Check, or a batch a
// Reader returned).
type Batch []byte

func (b Batch) BaseOffset() int64      { return int64(binary.LittleEndian.Uint64(b[offBaseOffset:])) }
func (b Batch) Length() int32          { return int32(binary.LittleEndian.Uint32(b[offLength:])) }
func (b Batch) Magic() int8            { return int8(b[offMagic]) }
func (b Batch) CommitTimestamp() int64 { return int64(binary.LittleEndian.Uint64(b[offCommitTS:])) }
func (b Batch) LeaderEpoch() int32     { return int32(binary.LittleEndian.Uint32(b[offLeaderEpoch:])) }
func (b Batch) CRC() uint32            { return binary.LittleEndian.Uint32(b[offCRC:]) }
func (b Batch) Attributes() int16      { return int16(binary.LittleEndian.Uint16(b[offAttributes:])) }
func (b Batch) SchemaID() int32        { return int32(binary.LittleEndian.Uint32(b[offSchemaID:])) }
func (b Batch) WriterID() int64        { return int64(binary.LittleEndian.Uint64(b[offWriterID:])) }
func (b Batch) WriterSeq() int32       { return int32(binary.LittleEndian.Uint32(b[offWriterSeq:])) }
func (b Batch) RecordCount() int32     { return int32(binary.LittleEndian.Uint32(b[offRecordCount:])) }
func (b Batch) Codec() Codec           { return Codec(b.Attributes() & AttrCodecMask) }

// HeaderCRC is the checksum of the header's first 29 bytes; 0 in a version
// 1 batch, which has none.
func (b Batch) HeaderCRC() uint32 {
	if b.Magic() == MagicV1 {
		return 0
	}
	return binary.LittleEndian.Uint32(b[offHeaderCRC:])
}

// Size is the total size of the batch in bytes.
func (b Batch) Size() int { return int(b.Length()) + lengthBase }

// CutBatch cuts the first batch off b, batches sent back to back (a
// replication frame, a forwarded part, a remote read's answer): the batch,
// its capacity capped at its end, and the rest. ok is false when b does not
// begin with a whole batch; the batch's own checks are the caller's.
func CutBatch(b []byte) (batch Batch, rest []byte, ok bool) {
	if len(b) < HeaderSizeV1 {
		return nil, b, false
	}
	n := Batch(b).Size()
	if n < HeaderSizeV1 || n > len(b) {
		return nil, b, false
	}
	return Batch(b[:n:n]), b[n:], true
}

// LastOffset is the offset of the batch's last row.
func (b Batch) LastOffset() int64 { return b.BaseOffset() + int64(b.RecordCount()) - 1 }

// NextOffset is the offset after the batch's last row.
func (b Batch) NextOffset() int64 { return b.BaseOffset() + int64(b.RecordCount()) }

// headerSize is the size of the batch's fixed header, by its version.
func (b Batch) headerSize() int {
	if b.Magic() == MagicV1 {
		return HeaderSizeV1
	}
	return HeaderSize
}

// stamp sets the fields the server stamps on append and seals them with the
// header CRC. Only version 2 batches are appended (Log.write).
func (b Batch) stamp(base, ts int64, epoch int32) {
	le := binary.LittleEndian
	le.PutUint64(b[offBaseOffset:], uint64(base))
	le.PutUint64(b[offCommitTS:], uint64(ts))
	le.PutUint32(b[offLeaderEpoch:], uint32(epoch))
	le.PutUint32(b[offHeaderCRC:], crc32.Checksum(b[:crcStart], castagnoli))
}

// bodyCRC computes the CRC the header's CRC field holds.
func (b Batch) bodyCRC() uint32 {
	if b.Magic() == MagicV1 {
		return crc32.Checksum(b[crcStart:], castagnoli)
	}
	c := crc32.Update(0, castagnoli, b[crcStart:offHeaderCRC])
	return crc32.Update(c, castagnoli, b[HeaderSize:])
}

// checkHeader checks what the fixed header alone says: a known version,
// the header CRC of a version 2 batch, and a length and record count that
// can be true. hdr may be longer than the header (the whole batch, or the
// start of a read); it is the prefix of a batch, so a header cut short is
// an error. Headers are checked before a read trusts their length or
// offsets: on recovery, on every batch a reader returns and at every header
// an offset or time lookup reads.
func checkHeader(hdr Batch) error {
	if len(hdr) < HeaderSizeV1 {
		return fmt.Errorf("%w: %d bytes, shorter than a batch header", ErrCorrupt, len(hdr))
	}
	m := hdr.Magic()
	if m != MagicV1 && m != MagicV2 {
		return fmt.Errorf("%w: magic %d, want %d or %d", ErrCorrupt, m, MagicV1, MagicV2)
	}
	hs := hdr.headerSize()
	if len(hdr) < hs {
		return fmt.Errorf("%w: %d bytes, shorter than the %d-byte header", ErrCorrupt, len(hdr), hs)
	}
	if m == MagicV2 {
		if got, want := crc32.Checksum(hdr[:crcStart], castagnoli), hdr.HeaderCRC(); got != want {
			return fmt.Errorf("%w: header crc %08x, header says %08x", ErrCorrupt, got, want)
		}
	}
	if l := hdr.Length(); int64(l) < int64(hs-lengthBase) {
		return fmt.Errorf("%w: length field %d, shorter than the header", ErrCorrupt, l)
	}
	if rc := hdr.RecordCount(); rc <= 0 {
		return fmt.Errorf("%w: record count %d", ErrCorrupt, rc)
	}
	return nil
}

// sections splits the body after the fixed header into its parts. It never
// panics, whatever the bytes: a batch that is not whole is ErrCorrupt.
func (b Batch) sections() (stats, changeTypes, arrowMsg []byte, err error) {
	if len(b) < HeaderSizeV1 || len(b) < b.headerSize() || b.Size() != len(b) {
		return nil, nil, nil, fmt.Errorf("%w: not a whole batch", ErrCorrupt)
	}
	rest := b[b.headerSize():]
	attrs := b.Attributes()
	if attrs&AttrHasStats != 0 {
		if len(rest) < 4 {
			return nil, nil, nil, fmt.Errorf("%w: stats length cut off", ErrCorrupt)
		}
		n := binary.LittleEndian.Uint32(rest)
		if int64(n) > int64(len(rest)-4) {
			return nil, nil, nil, fmt.Errorf("%w: stats section of %d bytes overruns the batch", ErrCorrupt, n)
		}
		stats, rest = rest[4:4+n], rest[4+n:]
	}
	if attrs&AttrHasChangeTypes != 0 {
		n := int64(b.RecordCount())
		if n < 0 || n > int64(len(rest)) {
			return nil, nil, nil, fmt.Errorf("%w: change types overrun the batch", ErrCorrupt)
		}
		changeTypes, rest = rest[:n], rest[n:]
	}
	return stats, changeTypes, rest, nil
}

// ArrowMessage is the encapsulated Arrow IPC message the batch carries.
func (b Batch) ArrowMessage() ([]byte, error) {
	_, _, msg, err := b.sections()
	return msg, err
}

// ChangeTypes returns the per-row change types, or nil for an append-only batch.
func (b Batch) ChangeTypes() ([]byte, error) {
	_, ct, _, err := b.sections()
	return ct, err
}

// Stats returns the raw statistics section, or nil.
func (b Batch) Stats() ([]byte, error) {
	st, _, _, err := b.sections()
	return st, err
}

// Check verifies a whole batch: its header (checkHeader), that its length is
// that of b, its CRC and its sections. Errors wrap ErrCorrupt. It is called
// on every batch a producer hands in, on recovery and on every batch a
// reader reads from disk.
func (b Batch) Check() error {
	if err := checkHeader(b); err != nil {
		return err
	}
	if l := b.Length(); int64(l)+lengthBase != int64(len(b)) {
		return fmt.Errorf("%w: length field %d does not match %d bytes", ErrCorrupt, l, len(b))
	}
	if got, want := b.bodyCRC(), b.CRC(); got != want {
		return fmt.Errorf("%w: crc %08x, header says %08x", ErrCorrupt, got, want)
	}
	_, _, _, err := b.sections()
	return err
}

// StartBatch appends room for a batch header to dst. The caller appends the
// optional sections and the Arrow message after it, then calls FinishBatch on
// the slice from the returned start, so a batch is built with no extra copy.
func StartBatch(dst []byte) (buf []byte, start int) {
	start = len(dst)
	return append(dst, make([]byte, HeaderSize)...), start
}

// FinishBatch fills the header of a batch built with StartBatch and computes
// its CRC, and its header CRC as of the stamped fields' zero values, so that
// it passes Check before a log stamps it.
func FinishBatch(b []byte, h Header) (Batch, error) {
	if len(b) < HeaderSize {
		return nil, fmt.Errorf("finish batch: %d bytes, no room for the header", len(b))
	}
	if h.RecordCount <= 0 {
		return nil, fmt.Errorf("finish batch: record count %d, want > 0", h.RecordCount)
	}
	if len(b)-lengthBase > 1<<31-1 {
		return nil, fmt.Errorf("finish batch: %d bytes, over the 2 GiB batch limit", len(b))
	}
	le := binary.LittleEndian
	le.PutUint32(b[offLength:], uint32(len(b)-lengthBase))
	b[offMagic] = byte(MagicV2)
	le.PutUint16(b[offAttributes:], uint16(h.attributes()))
	le.PutUint32(b[offSchemaID:], uint32(h.SchemaID))
	le.PutUint64(b[offWriterID:], uint64(h.WriterID))
	le.PutUint32(b[offWriterSeq:], uint32(h.WriterSeq))
	le.PutUint32(b[offRecordCount:], uint32(h.RecordCount))
	le.PutUint32(b[offCRC:], Batch(b).bodyCRC())
	Batch(b).stamp(0, 0, 0)
	return Batch(b), nil
}

// attributes composes the header's Attributes field.
func (h Header) attributes() int16 {
	a := int16(h.Codec) & AttrCodecMask
	if h.Stats {
		a |= AttrHasStats
	}
	if h.changeTypes {
		a |= AttrHasChangeTypes
	}
	return a
}

// NewBatch builds a batch from its parts in one allocation. stats, if not
// nil, is an encoded statistics section (EncodeStats).
func NewBatch(h Header, stats, changeTypes, arrowMsg []byte) (Batch, error) {
	if changeTypes != nil {
		if len(changeTypes) != int(h.RecordCount) {
			return nil, fmt.Errorf("new batch: %d change types for %d records", len(changeTypes), h.RecordCount)
		}
		h.changeTypes = true
	}
	h.Stats = stats != nil
	size := HeaderSize + len(changeTypes) + len(arrowMsg)
	if stats != nil {
		size += 4 + len(stats)
	}
	buf, _ := StartBatch(make([]byte, 0, size))
	if stats != nil {
		buf = binary.LittleEndian.AppendUint32(buf, uint32(len(stats)))
		buf = append(buf, stats...)
	}
	buf = append(buf, changeTypes...)
	buf = append(buf, arrowMsg...)
	return FinishBatch(buf, h)
}
