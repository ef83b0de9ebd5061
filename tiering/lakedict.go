package tiering

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/arrow-go/v18/parquet/schema"

	"github.com/lakestream/lakestream/internal/scan"
)

// A cold read of a lake data file — the first, which fills the read cache —
// spent most of its time in arrow-go's Parquet reader turning
// dictionary-encoded string columns into plain strings one value at a time
// (docs/benchmarks.md, "What the lake figures say"). Lakestream's own files
// keep a dictionary for low-cardinality string columns, so those are read
// here as Arrow dictionaries (pqarrow's read-dictionary option, which
// decodes only the indexes) and expanded into plain strings in two passes:
// the sizes, then one copy into buffers allocated once. Readers — the
// engine, Flight clients, the cache — see the same plain string columns as
// before: no dictionary array leaves this file.

// readWholeOwn reads the part's columns of a data file Lakestream wrote (one
// with a row map), string columns whose every data page is
// dictionary-encoded as dictionaries, one array per column. own is false,
// with nothing read, for a file of another writer: iceberg-go reads those,
// mapping their columns by field id.
func (p *lakePart) readWholeOwn(ctx context.Context) (cols []arrow.Array, own bool, err error) {
	for _, f := range p.out.Fields() {
		if id := f.Type.ID(); id == arrow.LIST || id == arrow.MAP || id == arrow.STRUCT {
			return nil, false, nil // leaves mapped by iceberg-go
		}
	}
	path := p.task.File.FilePath()
	f, err := p.fs.Open(path)
	if err != nil {
		return nil, false, fmt.Errorf("open lake file %s: %w", path, err)
	}
	pr, err := file.NewParquetReader(f)
	if err != nil {
		f.Close()
		return nil, false, fmt.Errorf("read footer of lake file %s: %w", path, err)
	}
	defer pr.Close()
	md := pr.MetaData()
	if md.KeyValueMetadata().FindValue(rowMapKey) == nil {
		return nil, false, nil
	}
	props := pqarrow.ArrowReadProperties{Parallel: true, BatchSize: lakeRowGroupRows}
	leaves := make([]int, len(p.cols)) // the file's leaf of each column; -1: not in the file
	for i := range p.cols {
		leaves[i] = -1
	}
	for c := 0; c < md.Schema.NumColumns(); c++ {
		col := md.Schema.Column(c)
		if len(col.ColumnPath()) != 1 {
			continue // a leaf of a nested column, not one of the part's
		}
		i := scan.FieldIndex(p.out, col.Name())
		if i < 0 {
			continue
		}
		leaves[i] = c
		if p.out.Field(i).Type.ID() == arrow.STRING && isString(col) && dictEncoded(md, c) {
			props.SetReadDict(c, true)
		}
	}
	var read []int
	for i, l := range leaves {
		switch {
		case l >= 0:
			read = append(read, l)
		case !p.out.Field(i).Nullable:
			return nil, false, nil // iceberg-go reports it
		} // else added after the file was written: nulls
	}
	ar, err := pqarrow.NewFileReader(pr, props, p.s.cfg.Mem)
	if err != nil {
		return nil, false, fmt.Errorf("open lake file %s: %w", path, err)
	}
	rgs := make([]int, pr.NumRowGroups())
	for i := range rgs {
		rgs[i] = i
	}
	var tbl arrow.Table
	if len(read) > 0 {
		if tbl, err = ar.ReadRowGroups(ctx, read, rgs); err != nil {
			return nil, false, fmt.Errorf("read lake file %s: %w", path, err)
		}
		defer tbl.Release()
	}
	cols, err = p.wholeColumns(tbl, leaves, md.NumRows)
	return cols, err == nil, err
}

// wholeColumns makes one array of each part column in the out types: the
// columns of tbl (read in the order of leaves), nulls for those not in it.
func (p *lakePart) wholeColumns(tbl arrow.Table, leaves []int, rows int64) ([]arrow.Array, error) {
	mem := p.s.cfg.Mem
	cols := make([]arrow.Array, len(p.cols))
	ok := false
	defer func() {
		if !ok {
			for _, c := range cols {
				if c != nil {
					c.Release()
				}
			}
		}
	}()
	j := 0
	for i, l := range leaves {
		f := p.out.Field(i)
		if l < 0 {
			cols[i] = array.MakeArrayOfNull(mem, f.Type, int(rows))
			continue
		}
		chunks := tbl.Column(j).Data().Chunks()
		j++
		whole, err := wholeArray(chunks, f, mem)
		if err != nil {
			return nil, fmt.Errorf("column %q: %w", f.Name, err)
		}
		cols[i] = whole
		if int64(whole.Len()) != rows {
			return nil, fmt.Errorf("column %q: read %d rows, the footer says %d", f.Name, whole.Len(), rows)
		}
		if !f.Nullable && whole.NullN() > 0 {
			return nil, fmt.Errorf("NOT NULL column %q has %d nulls in the lake", f.Name, whole.NullN())
		}
	}
	ok = true
	return cols, nil
}

// wholeArray makes one array of f's type of a column's chunks.
func wholeArray(chunks []arrow.Array, f arrow.Field, mem memory.Allocator) (arrow.Array, error) {
	if len(chunks) > 0 && chunks[0].DataType().ID() == arrow.DICTIONARY {
		return plainStrings(chunks, mem)
	}
	var whole arrow.Array
	switch len(chunks) {
	case 0:
		return array.MakeArrayOfNull(mem, f.Type, 0), nil
	case 1:
		whole = chunks[0]
		whole.Retain()
	default:
		var err error
		if whole, err = array.Concatenate(chunks, mem); err != nil {
			return nil, err
		}
	}
	defer whole.Release()
	data, err := conformData(whole.Data(), f.Type, mem)
	if err != nil {
		return nil, err
	}
	defer data.Release()
	return array.MakeFromData(data), nil
}

// isString says whether a leaf holds UTF-8 strings.
func isString(col *schema.Column) bool {
	if col.PhysicalType() != parquet.Types.ByteArray {
		return false
	}
	_, ok := col.LogicalType().(schema.StringLogicalType)
	return ok
}

// dictEncoded says whether every data page of leaf c in every row group of
// the file is dictionary-encoded. A chunk whose dictionary outgrew its
// limit goes on in plain pages; reading such a column as a dictionary would
// hash every plain value into one, slower than reading it plain.
func dictEncoded(md *metadata.FileMetaData, c int) bool {
	for rg := 0; rg < md.NumRowGroups(); rg++ {
		cc, err := md.RowGroup(rg).ColumnChunk(c)
		if err != nil || !cc.HasDictionaryPage() {
			return false
		}
		stats := cc.EncodingStats()
		if len(stats) == 0 {
			return false // not recorded: unknown
		}
		for _, s := range stats {
			switch s.PageType.String() {
			case "DATA_PAGE", "DATA_PAGE_V2":
				if s.Encoding != parquet.Encodings.RLEDict && s.Encoding != parquet.Encodings.PlainDict {
					return false
				}
			}
		}
	}
	return true
}

// plainStrings expands dictionary chunks (string values) into one plain
// string array: the sizes first, then each value copied once into buffers
// of the final size. This runs once per row of a cold read, so it works on
// the index values directly, not through the array accessors.
func plainStrings(chunks []arrow.Array, mem memory.Allocator) (arrow.Array, error) {
	var rows, size, nulls int
	ds := make([]dictChunk, len(chunks))
	for k, ch := range chunks {
		d, err := newDictChunk(ch)
		if err != nil {
			return nil, err
		}
		ds[k] = d
		size += d.size()
		rows += d.d.Len()
		nulls += d.d.NullN()
	}
	if size > math.MaxInt32 {
		return nil, fmt.Errorf("%d bytes of strings, over a string array's 2^31-1", size)
	}
	offsets := memory.NewResizableBuffer(mem)
	offsets.Resize(arrow.Int32Traits.BytesRequired(rows + 1))
	values := memory.NewResizableBuffer(mem)
	values.Resize(size + wordSlack) // room for expand's whole-word stores past the last value
	var valid *memory.Buffer
	if nulls > 0 {
		valid = memory.NewResizableBuffer(mem)
		valid.Resize(int(bitutil.BytesForBits(int64(rows))))
		bitutil.SetBitsTo(valid.Bytes(), 0, int64(rows), true)
	}
	offs := arrow.Int32Traits.CastFromBytes(offsets.Bytes())
	data := values.Bytes()
	at, row := int32(0), 0
	for _, d := range ds {
		if valid != nil && d.d.NullN() > 0 {
			bitutil.CopyBitmap(d.d.NullBitmapBytes(), d.d.Data().Offset(), d.d.Len(), valid.Bytes(), row)
		}
		at = d.expand(offs[row:row+d.d.Len()], data, at)
		row += d.d.Len()
	}
	offs[rows] = at
	bufs := []*memory.Buffer{valid, offsets, values}
	out := array.NewData(arrow.BinaryTypes.String, rows, bufs, nil, nulls, 0)
	for _, b := range bufs {
		if b != nil {
			b.Release()
		}
	}
	defer out.Release()
	return array.MakeFromData(out), nil
}

// wordSlack is the bytes past the values plainStrings allocates: expand
// stores a short value as two 8-byte words, whatever its length.
const wordSlack = 16

// dictChunk is one dictionary chunk of plainStrings, its indexes as ints.
type dictChunk struct {
	d     *array.Dictionary
	idx   []int32 // nil: not int32, read through d
	dict  *array.String
	lens  []int32 // of each dictionary value
	nulls bool
	// words are each value zero-padded to 16 bytes, when none is longer:
	// storing two words is several times faster than a copy of a few
	// bytes, which is a call.
	words [][2]uint64
}

func newDictChunk(ch arrow.Array) (dictChunk, error) {
	d, ok := ch.(*array.Dictionary)
	if !ok {
		return dictChunk{}, fmt.Errorf("chunk of type %s among dictionaries", ch.DataType())
	}
	dict, ok := d.Dictionary().(*array.String)
	if !ok {
		return dictChunk{}, fmt.Errorf("dictionary of %s, want strings", d.Dictionary().DataType())
	}
	c := dictChunk{d: d, dict: dict, lens: make([]int32, dict.Len()), nulls: d.NullN() > 0}
	short := true
	for i := range c.lens {
		c.lens[i] = int32(dict.ValueLen(i))
		short = short && c.lens[i] <= wordSlack
	}
	if short {
		c.words = make([][2]uint64, dict.Len())
		for i := range c.words {
			var w [wordSlack]byte
			copy(w[:], dict.Value(i))
			c.words[i] = [2]uint64{binary.LittleEndian.Uint64(w[:8]), binary.LittleEndian.Uint64(w[8:])}
		}
	}
	if ix, ok := d.Indices().(*array.Int32); ok {
		c.idx = ix.Int32Values()
	}
	return c, nil
}

// index is the dictionary index of row i, -1 for a null (whose index may
// be anything).
func (c *dictChunk) index(i int) int {
	if c.nulls && c.d.IsNull(i) {
		return -1
	}
	if c.idx != nil {
		return int(c.idx[i])
	}
	return c.d.GetValueIndex(i)
}

// size is the bytes of the chunk's values.
func (c *dictChunk) size() int {
	n := 0
	if c.idx != nil && !c.nulls {
		for _, x := range c.idx {
			n += int(c.lens[x])
		}
		return n
	}
	for i := 0; i < c.d.Len(); i++ {
		if x := c.index(i); x >= 0 {
			n += int(c.lens[x])
		}
	}
	return n
}

// expand writes the chunk's offsets (from at on) and values into data, and
// returns the offset after them.
func (c *dictChunk) expand(offs []int32, data []byte, at int32) int32 {
	vals := c.dict.ValueBytes()
	starts := c.dict.ValueOffsets()
	put := func(i, x int) {
		offs[i] = at
		if x >= 0 {
			start := starts[x] - starts[0]
			at += int32(copy(data[at:], vals[start:start+c.lens[x]]))
		}
	}
	if c.idx != nil && !c.nulls {
		if c.words != nil {
			// data has wordSlack bytes past the last value.
			for i, x := range c.idx {
				offs[i] = at
				w := c.words[x]
				binary.LittleEndian.PutUint64(data[at:], w[0])
				binary.LittleEndian.PutUint64(data[at+8:], w[1])
				at += c.lens[x]
			}
			return at
		}
		for i, x := range c.idx {
			put(i, int(x))
		}
		return at
	}
	for i := range offs {
		put(i, c.index(i))
	}
	return at
}
