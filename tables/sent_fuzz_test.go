package tables_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lakestream/lakestream/columnarlog"
	"github.com/lakestream/lakestream/internal/arrowmsg"
	"github.com/lakestream/lakestream/internal/vfs"
	"github.com/lakestream/lakestream/tables"
)

// compressedMessage is rec as arrow-go's IPC writer sends it with opt (a
// codec): the record batch message's metadata and body.
func compressedMessage(t testing.TB, rec arrow.RecordBatch, opt ipc.Option) (meta, body []byte) {
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(rec.Schema()), opt)
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	// The stream: the schema message (no body), then the record batch's.
	b := buf.Bytes()
	for len(b) >= 8 {
		n := int(binary.LittleEndian.Uint32(b[4:]))
		meta, b = b[8:8+n], b[8+n:]
		if k, err := arrowmsg.MessageKind(meta); err == nil && k == arrowmsg.KindRecordBatch {
			hdr, err := arrowmsg.ParseRecordBatch(meta)
			if err != nil {
				t.Fatal(err)
			}
			return slices.Clone(meta), slices.Clone(b[:hdr.BodyLength])
		}
	}
	t.Fatal("no record batch in the stream")
	return nil, nil
}

// FuzzStoreSent feeds a one-bucket table a record batch message as a
// client could send it, compressed, mutated at will. What the node does
// before the appender is done here: the message is checked (Validate,
// with a limit) and decoded. What the appender then accepts it stores as
// sent, and that must read back as exactly the rows decoded from it:
// storing the client's bytes never stores what was not checked. Nothing
// may panic.
func FuzzStoreSent(f *testing.F) {
	schema := events(nil, memory.DefaultAllocator, 0, 1).Schema()
	for _, opt := range []ipc.Option{ipc.WithLZ4(), ipc.WithZstd()} {
		rec := events(nil, memory.DefaultAllocator, 0, 200)
		meta, body := compressedMessage(f, rec, opt)
		rec.Release()
		f.Add(meta, body)
		f.Add(meta, body[:len(body)-9])
		corrupt := slices.Clone(body)
		corrupt[len(corrupt)/2] ^= 0xff
		f.Add(meta, corrupt)
	}
	lim := arrowmsg.Limits{MaxBodyBytes: 1 << 20, MaxUncompressedBytes: 1 << 20, MaxRows: 1 << 16}
	f.Fuzz(func(t *testing.T, meta, body []byte) {
		if _, err := arrowmsg.Validate(schema, meta, body, lim); err != nil {
			return // refused before decoding, as the node's checked stream does
		}
		// Go's allocator: arrow-go's reader keeps no count to check on a
		// frame that fails to decompress.
		rec, err := tables.DecodeMessage(schema, meta, body, memory.NewGoAllocator())
		if err != nil {
			return
		}
		defer rec.Release()
		e := newEnv(t, vfs.NewMem())
		e.mustExec("CREATE TABLE ev " + eventsCols + " WITH ('bucket.num'='1', 'log.compression'='lz4')")
		tbl := e.table("ev")
		a := tbl.NewAppender()
		defer a.Release()
		err = a.AddSent(context.Background(), rec, tables.Sent{Meta: meta, Body: body})
		if err == nil {
			err = a.Flush(context.Background())
		}
		var se *tables.SchemaError
		if errors.As(err, &se) {
			return // invalid data (offsets, UTF-8, NULL in NOT NULL): refused
		}
		if err != nil {
			t.Fatalf("store a decoded, valid record: %v", err)
		}
		var stored int
		for _, r := range tbl.LogRanges() {
			err := tbl.ReadBatches(context.Background(), r, func(b columnarlog.Batch) error {
				stored++
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		want := rowStrings(rec)
		if rec.NumRows() > 0 && stored != 1 {
			t.Fatalf("%d batches stored, want 1", stored)
		}
		sameRows(t, "read back", flatten(readBuckets(t, tbl, allCols(tbl))), want)
	})
}

// The seeds as sent are stored byte for byte.
func TestStoreSentKeepsBytes(t *testing.T) {
	e := newEnv(t, vfs.NewMem())
	e.mustExec("CREATE TABLE ev " + eventsCols + " WITH ('bucket.num'='1')")
	tbl := e.table("ev")
	rec := events(t, e.mem, 0, 300)
	defer rec.Release()
	meta, body := compressedMessage(t, rec, ipc.WithZstd())
	a := tbl.NewAppender()
	if err := a.AddSent(context.Background(), rec, tables.Sent{Meta: meta, Body: body}); err != nil {
		t.Fatal(err)
	}
	if err := a.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, r := range tbl.LogRanges() {
		err := tbl.ReadBatches(context.Background(), r, func(b columnarlog.Batch) error {
			msg, err := b.ArrowMessage()
			if err != nil {
				return err
			}
			_, got, err := arrowmsg.SplitMessage(msg)
			if err == nil && (!bytes.Equal(got, body) || b.Codec() != columnarlog.CodecZstd) {
				t.Errorf("stored body of %d bytes (codec %v) is not the %d bytes sent (zstd)", len(got), b.Codec(), len(body))
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
