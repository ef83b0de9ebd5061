package arrowmsg

import (
	"math"

	flatbuffers "github.com/google/flatbuffers/go"
)

// This file reads flatbuffer tables defensively. flatbuffers.Table trusts its
// input and panics (or reads garbage) on a bad offset, so every position is
// checked against the buffer before a flatbuffers.Table accessor touches it.
// All arithmetic is in int64 so that a uint32 offset cannot wrap an int on a
// 32-bit platform.

// fbTable is a table whose vtable and inline part are known to lie inside
// buf.
type fbTable struct {
	t      flatbuffers.Table
	vtable int64 // position of the vtable
	vtSize int64 // vtable size in bytes, including its 4-byte header
	size   int64 // inline table size in bytes
}

// rootTable returns the table the buffer's root offset points at.
func rootTable(buf []byte) (fbTable, error) {
	if len(buf) < 4 {
		return fbTable{}, malformed("metadata is %d bytes, too short for a flatbuffer", len(buf))
	}
	if int64(len(buf)) > math.MaxInt32 {
		// The frame stores the metadata length as an int32, and flatbuffer
		// offsets are uint32: anything longer is not a message.
		return fbTable{}, malformed("metadata is %d bytes, longer than a message can hold", len(buf))
	}
	pos := int64(flatbuffers.GetUOffsetT(buf))
	return tableAt(buf, pos)
}

// tableAt checks the table starting at pos: its vtable offset, its vtable
// and its inline part must all lie inside buf.
func tableAt(buf []byte, pos int64) (fbTable, error) {
	n := int64(len(buf))
	if pos < 0 || pos > n-4 {
		return fbTable{}, malformed("table at %d lies outside the %d-byte metadata", pos, n)
	}
	t := flatbuffers.Table{Bytes: buf, Pos: flatbuffers.UOffsetT(pos)}
	vt := pos - int64(t.GetSOffsetT(t.Pos))
	if vt < 0 || vt > n-4 {
		return fbTable{}, malformed("vtable of the table at %d lies outside the metadata", pos)
	}
	vtSize := int64(t.GetVOffsetT(flatbuffers.UOffsetT(vt)))
	size := int64(t.GetVOffsetT(flatbuffers.UOffsetT(vt + 2)))
	if vtSize < 4 || vtSize%2 != 0 || vt+vtSize > n {
		return fbTable{}, malformed("vtable at %d has a bad size %d", vt, vtSize)
	}
	if size < 4 || pos+size > n {
		return fbTable{}, malformed("table at %d has a bad size %d", pos, size)
	}
	return fbTable{t: t, vtable: vt, vtSize: vtSize, size: size}, nil
}

// field returns the position of field id, which is width bytes wide, and
// whether it is present. A present field must lie inside the inline table.
func (t fbTable) field(id int, width int64) (int64, bool, error) {
	slot := 4 + 2*int64(id)
	if slot+2 > t.vtSize {
		return 0, false, nil // written by an older schema: absent
	}
	off := int64(t.t.GetVOffsetT(flatbuffers.UOffsetT(t.vtable + slot)))
	if off == 0 {
		return 0, false, nil
	}
	if off < 4 || off+width > t.size {
		return 0, false, malformed("field %d of the table at %d lies outside the table", id, t.t.Pos)
	}
	return int64(t.t.Pos) + off, true, nil
}

func (t fbTable) int64Field(id int, def int64) (int64, error) {
	pos, ok, err := t.field(id, 8)
	if err != nil || !ok {
		return def, err
	}
	return t.t.GetInt64(flatbuffers.UOffsetT(pos)), nil
}

func (t fbTable) int16Field(id int, def int16) (int16, error) {
	pos, ok, err := t.field(id, 2)
	if err != nil || !ok {
		return def, err
	}
	return t.t.GetInt16(flatbuffers.UOffsetT(pos)), nil
}

func (t fbTable) uint8Field(id int, def uint8) (uint8, error) {
	pos, ok, err := t.field(id, 1)
	if err != nil || !ok {
		return def, err
	}
	return t.t.GetUint8(flatbuffers.UOffsetT(pos)), nil
}

func (t fbTable) int8Field(id int, def int8) (int8, error) {
	pos, ok, err := t.field(id, 1)
	if err != nil || !ok {
		return def, err
	}
	return t.t.GetInt8(flatbuffers.UOffsetT(pos)), nil
}

// indirect follows the uoffset stored at pos. The target must leave room for
// at least 4 bytes (a vector length or a table's vtable offset).
func (t fbTable) indirect(pos int64) (int64, error) {
	target := pos + int64(t.t.GetUOffsetT(flatbuffers.UOffsetT(pos)))
	if target > int64(len(t.t.Bytes))-4 {
		return 0, malformed("offset at %d points past the %d-byte metadata", pos, len(t.t.Bytes))
	}
	return target, nil
}

// tableField returns the sub-table in field id.
func (t fbTable) tableField(id int) (fbTable, bool, error) {
	pos, ok, err := t.field(id, 4)
	if err != nil || !ok {
		return fbTable{}, false, err
	}
	target, err := t.indirect(pos)
	if err != nil {
		return fbTable{}, false, err
	}
	sub, err := tableAt(t.t.Bytes, target)
	return sub, err == nil, err
}

// vectorField returns the position of the first element of the vector in
// field id and its length; all n elements of elemSize bytes lie inside the
// buffer. An absent vector is empty.
func (t fbTable) vectorField(id int, elemSize int64) (start int64, n int, err error) {
	pos, ok, err := t.field(id, 4)
	if err != nil || !ok {
		return 0, 0, err
	}
	target, err := t.indirect(pos)
	if err != nil {
		return 0, 0, err
	}
	count := int64(t.t.GetUint32(flatbuffers.UOffsetT(target)))
	start = target + 4
	if count > (int64(len(t.t.Bytes))-start)/elemSize {
		return 0, 0, malformed("vector in field %d claims %d elements, more than the metadata holds", id, count)
	}
	return start, int(count), nil
}

// stringField returns the string in field id ("" when absent).
func (t fbTable) stringField(id int) (string, error) {
	pos, ok, err := t.field(id, 4)
	if err != nil || !ok {
		return "", err
	}
	target, err := t.indirect(pos)
	if err != nil {
		return "", err
	}
	n := int64(t.t.GetUint32(flatbuffers.UOffsetT(target)))
	if n > int64(len(t.t.Bytes))-target-4 {
		return "", malformed("string in field %d claims %d bytes, more than the metadata holds", id, n)
	}
	return string(t.t.Bytes[target+4 : target+4+n]), nil
}

func (t fbTable) int64At(pos int64) int64 {
	return t.t.GetInt64(flatbuffers.UOffsetT(pos))
}
