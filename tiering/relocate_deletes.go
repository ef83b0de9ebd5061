package tiering

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	"github.com/google/uuid"
)

// Position delete files in a relocation (docs/lake.md#moving-the-data-directory).
//
// A format-v2 position delete file names the data files it deletes from
// by absolute path, in its file_path column (field id 2147483546), next to
// the position (pos, 2147483545). A relocation cannot map those paths in
// the manifest alone: it writes each position delete file anew, next to
// its moved copy — the same columns, field ids, row groups and rows in the
// same order, each file_path mapped to the new place (mapping one prefix to
// another keeps the order the spec asks for: file_path, then pos) — and
// the manifests that list it (delete manifests) point at the new file with
// its new size, column sizes, split offsets and file_path bounds (the exact
// smallest and largest path, so that a reader that scopes a delete file by
// its bounds still matches it to its data files). Every other statistic is
// the same, as the rows are. The new files are synced with the others
// before the catalog row switches; the moved copies become orphans.

// Field ids of the position delete columns (the Iceberg spec's reserved
// ids).
const (
	posDeleteFilePathID = 2147483546
	posDeletePosID      = 2147483545
)

// rewrittenDeletes is a position delete file written anew at the new place.
type rewrittenDeletes struct {
	path         string
	size         int64
	columnSizes  map[int]int64
	splitOffsets []int64
	lower, upper string // file_path bounds; empty when the file has no rows
}

// positionDeletes returns the rewritten copy of the position delete file
// df, whose moved copy is at moved, writing it the first time a manifest
// lists it.
func (rl *relocator) positionDeletes(ctx context.Context, df iceberg.DataFile, moved string) (*rewrittenDeletes, error) {
	if done, ok := rl.deletes[moved]; ok {
		return done, nil
	}
	if df.FileFormat() != iceberg.ParquetFile {
		return nil, fmt.Errorf("position delete file %s: format %s; only Parquet position delete files can be relocated", moved, df.FileFormat())
	}
	out, err := rl.rewriteDeletes(ctx, moved)
	if err != nil {
		return nil, fmt.Errorf("position delete file %s: %w", moved, err)
	}
	if out.rows != df.Count() {
		return nil, fmt.Errorf("position delete file %s: %d rows, its manifest entry says %d", moved, out.rows, df.Count())
	}
	rl.deletes[moved] = &out.rewrittenDeletes
	return &out.rewrittenDeletes, nil
}

// relocatedName is the name of the rewritten copy of a file named base: a
// new prefix, replacing the one of an earlier relocation.
func relocatedName(base string) string {
	if rest, ok := strings.CutPrefix(base, "reloc-"); ok && len(rest) > 37 && rest[36] == '-' {
		if _, err := uuid.Parse(rest[:36]); err == nil {
			base = rest[37:]
		}
	}
	return "reloc-" + uuid.NewString() + "-" + base
}

type rewriteResult struct {
	rewrittenDeletes
	rows int64
}

// rewriteDeletes writes the position delete file at moved anew beside it,
// its file_path values mapped, row group by row group.
func (rl *relocator) rewriteDeletes(ctx context.Context, moved string) (rewriteResult, error) {
	var res rewriteResult
	pf, err := file.OpenParquetFile(localPath(moved), false)
	if err != nil {
		return res, err
	}
	defer pf.Close()
	mem := memory.DefaultAllocator
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 64 << 10}, mem)
	if err != nil {
		return res, err
	}
	schema, err := fr.Schema()
	if err != nil {
		return res, err
	}
	pathCol, posCol := -1, -1
	for i, f := range schema.Fields() {
		switch fieldID(f) {
		case posDeleteFilePathID:
			pathCol = i
		case posDeletePosID:
			posCol = i
		}
	}
	if pathCol < 0 || posCol < 0 {
		return res, fmt.Errorf("no file_path (field id %d) and pos (field id %d) columns: %s", posDeleteFilePathID, posDeletePosID, schema)
	}
	if id := schema.Field(pathCol).Type.ID(); id != arrow.STRING && id != arrow.LARGE_STRING {
		return res, fmt.Errorf("file_path is %s, not a string", schema.Field(pathCol).Type)
	}

	md := pf.MetaData()
	cols := make([]int, md.Schema.NumColumns())
	for i := range cols {
		cols[i] = i
	}
	maxRows := int64(1)
	for i := range md.NumRowGroups() {
		maxRows = max(maxRows, md.RowGroup(i).NumRows())
	}
	opts := []parquet.WriterProperty{
		parquet.WithMaxRowGroupLength(maxRows),
		parquet.WithStats(true),
		parquet.WithDictionaryDefault(true),
		parquet.WithAllocator(mem),
		parquet.WithCreatedBy(md.GetCreatedBy()),
	}
	if md.NumRowGroups() > 0 {
		if cc, err := md.RowGroup(0).ColumnChunk(0); err == nil {
			opts = append(opts, parquet.WithCompression(cc.Compression()))
		}
	}
	var arrowOpts []pqarrow.WriterOption
	kv := md.KeyValueMetadata()
	if kv.FindValue("ARROW:schema") != nil {
		arrowOpts = append(arrowOpts, pqarrow.WithStoreSchema())
	}

	i := strings.LastIndexByte(moved, '/') + 1 // a URI: not path.Join, which folds file:///
	dst := moved[:i] + relocatedName(moved[i:])
	var meta *metadata.FileMetaData
	err = rl.write(dst, func(w io.Writer) error {
		fw, err := pqarrow.NewFileWriter(schema, w, parquet.NewWriterProperties(opts...), pqarrow.NewArrowWriterProperties(arrowOpts...))
		if err != nil {
			return err
		}
		for i, k := range kv.Keys() {
			if k == "ARROW:schema" {
				continue
			}
			if err := fw.AppendKeyValueMetadata(k, kv.Values()[i]); err != nil {
				return err
			}
		}
		for rg := range md.NumRowGroups() {
			if err := ctx.Err(); err != nil {
				fw.Close()
				return err
			}
			tbl, err := fr.ReadRowGroups(ctx, cols, []int{rg})
			if err != nil {
				fw.Close()
				return fmt.Errorf("row group %d: %w", rg, err)
			}
			mapped, err := rl.mapPathColumn(tbl, pathCol, &res.rewrittenDeletes)
			tbl.Release()
			if err != nil {
				fw.Close()
				return fmt.Errorf("row group %d: %w", rg, err)
			}
			res.rows += mapped.NumRows()
			err = fw.WriteTable(mapped, max(1, mapped.NumRows()))
			mapped.Release()
			if err != nil {
				return err // WriteTable closed fw
			}
		}
		if err := fw.Close(); err != nil {
			return err
		}
		meta, err = fw.FileMetadata()
		return err
	})
	if err != nil {
		return res, err
	}
	fi, err := os.Stat(localPath(dst))
	if err != nil {
		return res, err
	}
	res.path, res.size = dst, fi.Size()
	res.columnSizes, res.splitOffsets, err = footerStats(meta)
	return res, err
}

// fieldID is the Iceberg field id pqarrow read for f, or -1.
func fieldID(f arrow.Field) int {
	if v, ok := f.Metadata.GetValue("PARQUET:field_id"); ok {
		if id, err := strconv.Atoi(v); err == nil {
			return id
		}
	}
	return -1
}

// mapPathColumn returns tbl with column col (file_path) mapped to the new
// place, widening d's bounds to the mapped values.
func (rl *relocator) mapPathColumn(tbl arrow.Table, col int, d *rewrittenDeletes) (arrow.Table, error) {
	field := tbl.Schema().Field(col)
	var chunks []arrow.Array
	defer func() {
		for _, c := range chunks {
			c.Release()
		}
	}()
	for _, chunk := range tbl.Column(col).Data().Chunks() {
		b := array.NewBuilder(memory.DefaultAllocator, field.Type)
		strs, ok := chunk.(interface {
			arrow.Array
			Value(int) string
		})
		if !ok {
			b.Release()
			return nil, fmt.Errorf("file_path chunk is %T", chunk)
		}
		for i := range strs.Len() {
			if strs.IsNull(i) {
				b.AppendNull()
				continue
			}
			p, err := rl.m.uri(strs.Value(i))
			if err != nil {
				b.Release()
				return nil, fmt.Errorf("file_path: %w", err)
			}
			switch b := b.(type) {
			case *array.StringBuilder:
				b.Append(p)
			case *array.LargeStringBuilder:
				b.Append(p)
			}
			if d.lower == "" || p < d.lower {
				d.lower = p
			}
			if p > d.upper {
				d.upper = p
			}
		}
		chunks = append(chunks, b.NewArray())
		b.Release()
	}
	cols := make([]arrow.Column, tbl.NumCols())
	for i := range cols {
		if i == col {
			ch := arrow.NewChunked(field.Type, chunks)
			cols[i] = *arrow.NewColumn(field, ch)
			ch.Release()
		} else {
			cols[i] = *tbl.Column(i)
		}
	}
	out := array.NewTable(tbl.Schema(), cols, tbl.NumRows())
	cols[col].Release()
	return out, nil
}

// footerStats are the column sizes by field id and the split offsets (each
// row group's first page) of a Parquet file, as Iceberg writers record them.
func footerStats(md *metadata.FileMetaData) (map[int]int64, []int64, error) {
	sizes := map[int]int64{}
	var splits []int64
	for rg := range md.NumRowGroups() {
		g := md.RowGroup(rg)
		for c := range g.NumColumns() {
			cc, err := g.ColumnChunk(c)
			if err != nil {
				return nil, nil, err
			}
			if c == 0 {
				off := cc.DataPageOffset()
				if cc.HasDictionaryPage() && cc.DictionaryPageOffset() < off {
					off = cc.DictionaryPageOffset()
				}
				splits = append(splits, off)
			}
			sizes[int(md.Schema.Column(c).SchemaNode().FieldID())] += cc.TotalCompressedSize()
		}
	}
	return sizes, splits, nil
}
