package tables

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lakestream/lakestream/catalog"
)

// The body of a forwarded upsert to a primary-key table (forward.go): the
// conformed records of one bucket's part, each with the columns it
// carried (a partial upsert leaves the others alone), little-endian:
//
//	count u32 | count × ( ncols u16 | present (ncols bytes, 0 or 1)
//	                    | length u32 | Arrow IPC stream of one record )
//
// The leader merges them through its key index as the node that took the
// write would have: a primary-key write's stored batches are its change
// records, which only the leader can compute.

var errUpsertFrame = fmt.Errorf("%w: malformed forwarded upsert", catalog.ErrInvalid)

func encodeUpserts(def *catalog.Table, in []pkInput) ([]byte, error) {
	out := binary.LittleEndian.AppendUint32(nil, uint32(len(in)))
	for _, x := range in {
		out = binary.LittleEndian.AppendUint16(out, uint16(len(x.present)))
		for _, p := range x.present {
			if p {
				out = append(out, 1)
			} else {
				out = append(out, 0)
			}
		}
		// The stream is written in place after its length, which is
		// filled in once known: no copy of the record's bytes.
		at := len(out)
		buf := bytes.NewBuffer(append(out, 0, 0, 0, 0))
		w := ipc.NewWriter(buf, ipc.WithSchema(x.rec.Schema()))
		if err := w.Write(x.rec); err != nil {
			w.Close()
			return nil, fmt.Errorf("write to %s: encode an upsert to forward: %w", def.FullName(), err)
		}
		if err := w.Close(); err != nil {
			return nil, fmt.Errorf("write to %s: encode an upsert to forward: %w", def.FullName(), err)
		}
		out = buf.Bytes()
		binary.LittleEndian.PutUint32(out[at:], uint32(len(out)-at-4))
	}
	return out, nil
}

// decodeUpserts reads a forwarded upsert's records, which must have the
// columns of def (the part's schema version).
func decodeUpserts(def *catalog.Table, b []byte, mem memory.Allocator) (in []pkInput, err error) {
	defer func() {
		if err != nil {
			releaseInputs(in)
			in = nil
		}
	}()
	if len(b) < 4 {
		return nil, errUpsertFrame
	}
	n := binary.LittleEndian.Uint32(b)
	b = b[4:]
	schema := def.ArrowSchema()
	for range n {
		if len(b) < 2 {
			return in, errUpsertFrame
		}
		nc := int(binary.LittleEndian.Uint16(b))
		b = b[2:]
		if nc != schema.NumFields() || len(b) < nc+4 {
			return in, fmt.Errorf("%w: %d columns, the table has %d", errUpsertFrame, nc, schema.NumFields())
		}
		present := make([]bool, nc)
		for i := range present {
			present[i] = b[i] == 1
		}
		b = b[nc:]
		size := int(binary.LittleEndian.Uint32(b))
		b = b[4:]
		if size > len(b) {
			return in, errUpsertFrame
		}
		rec, err := readOneRecord(schema, b[:size], mem)
		if err != nil {
			return in, err
		}
		in = append(in, pkInput{rec: rec, present: present, op: opUpsert})
		b = b[size:]
	}
	if len(b) != 0 {
		return in, fmt.Errorf("%w: %d bytes after its records", errUpsertFrame, len(b))
	}
	return in, nil
}

// readOneRecord reads an IPC stream of one record of schema's column
// types, and returns it with schema.
func readOneRecord(schema *arrow.Schema, b []byte, mem memory.Allocator) (arrow.RecordBatch, error) {
	r, err := ipc.NewReader(bytes.NewReader(b), ipc.WithAllocator(mem))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errUpsertFrame, err)
	}
	defer r.Release()
	got := r.Schema()
	if got.NumFields() != schema.NumFields() {
		return nil, fmt.Errorf("%w: %d columns, the table has %d", errUpsertFrame, got.NumFields(), schema.NumFields())
	}
	for i, f := range schema.Fields() {
		if !arrow.TypeEqual(got.Field(i).Type, f.Type) {
			return nil, fmt.Errorf("%w: column %d is %s, the table's is %s", errUpsertFrame, i, got.Field(i).Type, f.Type)
		}
	}
	if !r.Next() {
		if err := r.Err(); err != nil {
			return nil, fmt.Errorf("%w: %v", errUpsertFrame, err)
		}
		return nil, fmt.Errorf("%w: no record", errUpsertFrame)
	}
	rec := r.RecordBatch()
	return array.NewRecordBatch(schema, rec.Columns(), rec.NumRows()), nil
}
