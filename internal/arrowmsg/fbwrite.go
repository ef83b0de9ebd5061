package arrowmsg

import (
	flatbuffers "github.com/google/flatbuffers/go"
)

// buildMessage serializes hdr as a Message flatbuffer holding a RecordBatch.
//
// The returned slice aliases b's buffer; the caller copies it out before
// reusing b.
func buildMessage(b *flatbuffers.Builder, hdr *RecordBatchHeader) []byte {
	// Vectors and sub-tables must be finished before the tables that point
	// at them are started.
	meta := buildKeyValues(b, hdr.Metadata)
	nodes := buildStructs(b, len(hdr.Nodes), func(i int) (int64, int64) {
		return hdr.Nodes[i].Length, hdr.Nodes[i].NullCount
	})
	bufs := buildStructs(b, len(hdr.Buffers), func(i int) (int64, int64) {
		return hdr.Buffers[i].Offset, hdr.Buffers[i].Length
	})
	var variadic flatbuffers.UOffsetT
	if n := len(hdr.VariadicBufferCounts); n > 0 {
		b.StartVector(8, n, 8)
		for i := n - 1; i >= 0; i-- {
			b.PrependInt64(hdr.VariadicBufferCounts[i])
		}
		variadic = b.EndVector(n)
	}
	var comp flatbuffers.UOffsetT
	if hdr.Codec != CodecNone {
		b.StartObject(2)
		b.PrependInt8Slot(bcCodec, hdr.Codec.fb(), fbCodecLZ4Frame)
		b.PrependInt8Slot(bcMethod, fbMethodBuffer, fbMethodBuffer)
		comp = b.EndObject()
	}

	b.StartObject(rbNumFields)
	b.PrependInt64Slot(rbLength, hdr.Length, 0)
	b.PrependUOffsetTSlot(rbNodes, nodes, 0)
	b.PrependUOffsetTSlot(rbBuffers, bufs, 0)
	if comp != 0 {
		b.PrependUOffsetTSlot(rbCompression, comp, 0)
	}
	if variadic != 0 {
		b.PrependUOffsetTSlot(rbVariadicCount, variadic, 0)
	}
	rb := b.EndObject()

	b.StartObject(msgNumFields)
	b.PrependInt16Slot(msgVersion, hdr.Version, 0)
	b.PrependByteSlot(msgHeaderType, headerRecordBatch, 0)
	b.PrependUOffsetTSlot(msgHeader, rb, 0)
	b.PrependInt64Slot(msgBodyLength, hdr.BodyLength, 0)
	if meta != 0 {
		b.PrependUOffsetTSlot(msgCustomMetadata, meta, 0)
	}
	b.Finish(b.EndObject())
	return b.FinishedBytes()
}

// buildStructs writes a vector of n structs of two longs, (first, second)
// in field order, as FieldNode and Buffer are laid out.
func buildStructs(b *flatbuffers.Builder, n int, elem func(i int) (first, second int64)) flatbuffers.UOffsetT {
	b.StartVector(structSize, n, 8)
	for i := n - 1; i >= 0; i-- { // the builder writes back to front
		first, second := elem(i)
		b.Prep(8, structSize)
		b.PrependInt64(second)
		b.PrependInt64(first)
	}
	return b.EndVector(n)
}

// buildKeyValues writes custom_metadata; 0 when there is none.
func buildKeyValues(b *flatbuffers.Builder, kvs []KeyValue) flatbuffers.UOffsetT {
	if len(kvs) == 0 {
		return 0
	}
	offs := make([]flatbuffers.UOffsetT, len(kvs))
	for i, kv := range kvs {
		k := b.CreateString(kv.Key)
		v := b.CreateString(kv.Value)
		b.StartObject(2)
		b.PrependUOffsetTSlot(kvKey, k, 0)
		b.PrependUOffsetTSlot(kvValue, v, 0)
		offs[i] = b.EndObject()
	}
	b.StartVector(4, len(offs), 4)
	for i := len(offs) - 1; i >= 0; i-- {
		b.PrependUOffsetT(offs[i])
	}
	return b.EndVector(len(offs))
}
