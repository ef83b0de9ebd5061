package tiering

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
	"github.com/klauspost/compress/zstd"
)

// relocator writes the new files of one table's relocation (relocate.go):
// manifests, manifest lists and a metadata file, each under the table's new
// location, each a new file, fsynced, and their directories after them.
// Manifests and manifest lists are read and written with iceberg-go's own
// Avro readers and writers; the metadata file is the old one's JSON with
// every path in it mapped, since iceberg-go has no update that replaces a
// snapshot's manifest list.
type relocator struct {
	m pathMap
	// manifests are the rewritten manifests, by old path.
	manifests map[string]iceberg.ManifestFile
	// checked are the files looked for at their new paths, and whether
	// they were there.
	checked map[string]bool
	// deletes are the position delete files written anew, by the path of
	// their moved copy (relocate_deletes.go).
	deletes map[string]*rewrittenDeletes
	lists   int // manifest lists written
	files   int // data and delete file entries written

	oldLocation, newLocation string
	created                  []string        // local paths, in order
	dirs                     map[string]bool // their directories
}

func newRelocator(m pathMap) *relocator {
	return &relocator{m: m, manifests: map[string]iceberg.ManifestFile{}, checked: map[string]bool{}, deletes: map[string]*rewrittenDeletes{}, dirs: map[string]bool{}}
}

// rewrite writes the relocated files of the table whose current metadata
// file is metaURI (at the old place; read at the new one), and returns the
// new metadata file's URI and the old one's at the new place.
func (rl *relocator) rewrite(ctx context.Context, metaURI string) (next, prev string, err error) {
	prev, err = rl.m.uri(metaURI)
	if err != nil {
		return "", "", err
	}
	raw, err := readMetadataFile(prev)
	if err != nil {
		return "", "", err
	}
	md, err := table.ParseMetadataBytes(raw)
	if err != nil {
		return "", "", fmt.Errorf("metadata %s: %w", prev, err)
	}
	if v := md.Version(); v > 2 {
		// A v3 manifest list carries first row ids that iceberg-go's
		// manifest list writer would assign anew.
		return "", "", fmt.Errorf("metadata %s: format version %d tables cannot be relocated (versions 1 and 2 can)", prev, v)
	}
	rl.oldLocation = md.Location()
	if rl.newLocation, err = rl.m.uri(md.Location()); err != nil {
		return "", "", err
	}
	doc, err := rl.mapDocument(raw)
	if err != nil {
		return "", "", fmt.Errorf("metadata %s: %w", prev, err)
	}
	props, err := stringMap(doc["properties"])
	if err != nil {
		return "", "", fmt.Errorf("metadata %s: properties: %w", prev, err)
	}
	loc, err := table.LoadLocationProvider(rl.newLocation, props)
	if err != nil {
		return "", "", err
	}
	lists := map[string]string{} // manifest list: new path of its moved copy -> rewritten
	for _, snap := range md.Snapshots() {
		if err := ctx.Err(); err != nil {
			return "", "", err
		}
		if snap.ManifestList == "" {
			return "", "", fmt.Errorf("snapshot %d has no manifest list (a v1 table with inline manifests)", snap.SnapshotID)
		}
		moved, _ := rl.m.uri(snap.ManifestList) // mapped in doc already, so it is under from
		if lists[moved], err = rl.manifestList(ctx, snap, md.Version(), loc); err != nil {
			return "", "", fmt.Errorf("snapshot %d: %w", snap.SnapshotID, err)
		}
	}
	if err := setManifestLists(doc, lists); err != nil {
		return "", "", err
	}
	appendMetadataLog(doc, prev, md.LastUpdatedMillis(), props)
	doc["last-updated-ms"] = json.Number(strconv.FormatInt(max(time.Now().UnixMilli(), md.LastUpdatedMillis()), 10))
	out, err := marshalDocument(doc)
	if err != nil {
		return "", "", err
	}
	if _, err := table.ParseMetadataBytes(out); err != nil {
		return "", "", fmt.Errorf("relocated metadata does not parse: %w", err)
	}
	v, ok := metadataVersion(metaURI)
	if !ok {
		return "", "", fmt.Errorf("metadata %s: its name has no version number", metaURI)
	}
	if next, err = loc.NewTableMetadataFileLocation(v + 1); err != nil {
		return "", "", err
	}
	if err := rl.writeMetadata(next, out, props[table.MetadataCompressionKey]); err != nil {
		return "", "", err
	}
	return next, prev, rl.sync()
}

// mapDocument decodes a metadata file's JSON, numbers kept as written, with
// every string under the old place mapped to the new one: the location, the
// manifest lists (replaced by setManifestLists), the metadata log's files,
// statistics files and location properties (write.data.path…).
func (rl *relocator) mapDocument(raw []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		return nil, err
	}
	rl.mapStrings(doc)
	return doc, nil
}

// mapStrings maps, in place, every string under the old place in v, a
// decoded JSON value; it returns v, or the mapped string.
func (rl *relocator) mapStrings(v any) any {
	switch v := v.(type) {
	case string:
		if u, err := rl.m.uri(v); err == nil {
			return u
		}
	case []any:
		for i := range v {
			v[i] = rl.mapStrings(v[i])
		}
	case map[string]any:
		for k := range v {
			v[k] = rl.mapStrings(v[k])
		}
	}
	return v
}

func stringMap(v any) (iceberg.Properties, error) {
	p := iceberg.Properties{}
	m, ok := v.(map[string]any)
	if v != nil && !ok {
		return nil, errors.New("not an object")
	}
	for k, s := range m {
		if p[k], ok = s.(string); !ok {
			return nil, fmt.Errorf("%s is not a string", k)
		}
	}
	return p, nil
}

// setManifestLists sets each snapshot's manifest list to its rewritten one.
func setManifestLists(doc map[string]any, lists map[string]string) error {
	snaps, _ := doc["snapshots"].([]any)
	for _, s := range snaps {
		snap, ok := s.(map[string]any)
		if !ok {
			return errors.New("metadata: a snapshot is not an object")
		}
		old, _ := snap["manifest-list"].(string)
		next, ok := lists[old]
		if !ok {
			return fmt.Errorf("metadata: snapshot %v: manifest list %s was not rewritten", snap["snapshot-id"], old)
		}
		snap["manifest-list"] = next
	}
	return nil
}

// appendMetadataLog adds the previous metadata file to the metadata log, as
// a commit does, keeping the last write.metadata.previous-versions-max.
func appendMetadataLog(doc map[string]any, prev string, ts int64, props iceberg.Properties) {
	log, _ := doc["metadata-log"].([]any)
	log = append(log, map[string]any{"metadata-file": prev, "timestamp-ms": json.Number(strconv.FormatInt(ts, 10))})
	if keep := max(1, props.GetInt(table.MetadataPreviousVersionsMaxKey, table.MetadataPreviousVersionsMaxDefault)); len(log) > keep {
		log = log[len(log)-keep:]
	}
	doc["metadata-log"] = log
}

func marshalDocument(doc map[string]any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// metadataFileName is iceberg-go's metadata file name, <version>-<uuid>
// [.codec].metadata.json, or the legacy v<version>[.gz].metadata.json.
var metadataFileName = regexp.MustCompile(`^(?:(\d+)-[\w-]{36}(?:\.\w+)?|v(\d+)(?:\.gz)?)\.metadata\.json$`)

func metadataVersion(uri string) (int, bool) {
	m := metadataFileName.FindStringSubmatch(path.Base(uri))
	if m == nil {
		return 0, false
	}
	v, err := strconv.Atoi(m[1] + m[2])
	return v, err == nil
}

// manifestList writes snap's manifest list anew, its manifests rewritten.
func (rl *relocator) manifestList(ctx context.Context, snap table.Snapshot, version int, loc table.LocationProvider) (string, error) {
	moved, err := rl.m.uri(snap.ManifestList)
	if err != nil {
		return "", err
	}
	old, err := readManifestList(moved)
	if err != nil {
		return "", err
	}
	files := make([]iceberg.ManifestFile, len(old))
	for i, mf := range old {
		if files[i], err = rl.manifest(ctx, mf, loc); err != nil {
			return "", err
		}
	}
	dst := loc.NewMetadataLocation(fmt.Sprintf("snap-%d-1-%s.avro", snap.SnapshotID, uuid.New()))
	err = rl.write(dst, func(w io.Writer) error {
		seq := snap.SequenceNumber
		return iceberg.WriteManifestList(version, w, snap.SnapshotID, snap.ParentSnapshotID, &seq, 0, files)
	})
	rl.lists++
	return dst, err
}

func readManifestList(uri string) ([]iceberg.ManifestFile, error) {
	f, err := os.Open(localPath(uri))
	if err != nil {
		return nil, fmt.Errorf("read manifest list: %w", err)
	}
	defer f.Close()
	files, err := iceberg.ReadManifestList(bufio.NewReader(f))
	if err != nil {
		return nil, fmt.Errorf("read manifest list %s: %w", uri, err)
	}
	return files, nil
}

// manifest writes mf anew with its files' paths mapped (position delete
// files written anew), once for all the snapshots that share it, and
// returns its manifest list entry: mf's, with the new path and length.
func (rl *relocator) manifest(ctx context.Context, mf iceberg.ManifestFile, loc table.LocationProvider) (iceberg.ManifestFile, error) {
	if done, ok := rl.manifests[mf.FilePath()]; ok {
		return done, nil
	}
	moved, err := rl.m.uri(mf.FilePath())
	if err != nil {
		return nil, err
	}
	version, spec, schema, entries, err := rl.readManifest(ctx, mf, moved)
	if err != nil {
		return nil, fmt.Errorf("manifest %s: %w", moved, err)
	}
	dst := loc.NewMetadataLocation(uuid.New().String() + "-m0.avro")
	var length int64
	err = rl.write(dst, func(w io.Writer) error {
		var written iceberg.ManifestFile
		var err error
		if mf.ManifestContent() == iceberg.ManifestContentDeletes {
			written, err = writeDeleteManifest(dst, w, version, spec, schema, mf.SnapshotID(), entries)
		} else {
			written, err = iceberg.WriteManifest(dst, w, version, spec, schema, mf.SnapshotID(), entries)
		}
		if err == nil {
			length = written.Length()
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("manifest %s: %w", dst, err)
	}
	out := iceberg.NewManifestFile(mf.Version(), dst, length, mf.PartitionSpecID(), mf.SnapshotID()).
		SequenceNum(mf.SequenceNum(), mf.MinSequenceNum()).
		Content(mf.ManifestContent()).
		AddedFiles(mf.AddedDataFiles()).ExistingFiles(mf.ExistingDataFiles()).DeletedFiles(mf.DeletedDataFiles()).
		AddedRows(mf.AddedRows()).ExistingRows(mf.ExistingRows()).DeletedRows(mf.DeletedRows()).
		Partitions(mf.Partitions()).
		KeyMetadata(mf.KeyMetadata()).
		Build()
	rl.manifests[mf.FilePath()] = out
	return out, nil
}

// writeDeleteManifest writes a delete manifest of entries, as
// iceberg.WriteManifest writes a data manifest (which refuses delete files):
// each entry by its status. An added entry's snapshot is the manifest's and
// its file sequence number is inherited from the manifest's, as they were.
func writeDeleteManifest(dst string, w io.Writer, version int, spec iceberg.PartitionSpec, schema *iceberg.Schema, snapshotID int64, entries []iceberg.ManifestEntry) (iceberg.ManifestFile, error) {
	cw := &byteCounter{w: w}
	mw, err := iceberg.NewManifestWriter(version, cw, spec, schema, snapshotID, iceberg.WithManifestWriterContent(iceberg.ManifestContentDeletes))
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		switch e.Status() {
		case iceberg.EntryStatusADDED:
			err = mw.Add(e)
		case iceberg.EntryStatusEXISTING:
			err = mw.Existing(e)
		default:
			err = mw.Delete(e)
		}
		if err != nil {
			return nil, errors.Join(err, mw.Close())
		}
	}
	if err := mw.Close(); err != nil {
		return nil, err
	}
	return mw.ToManifestFile(dst, cw.n)
}

// byteCounter counts the bytes written through it.
type byteCounter struct {
	w io.Writer
	n int64
}

func (c *byteCounter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// readManifest reads every entry of manifest mf (its moved copy at uri),
// each with its file's path mapped, and the manifest's format version,
// partition spec and schema.
func (rl *relocator) readManifest(ctx context.Context, mf iceberg.ManifestFile, uri string) (int, iceberg.PartitionSpec, *iceberg.Schema, []iceberg.ManifestEntry, error) {
	var spec iceberg.PartitionSpec
	f, err := os.Open(localPath(uri))
	if err != nil {
		return 0, spec, nil, nil, err
	}
	defer f.Close()
	rd, err := iceberg.NewManifestReader(mf, bufio.NewReader(f))
	if err != nil {
		return 0, spec, nil, nil, err
	}
	defer rd.Close()
	ps, err := rd.PartitionSpec()
	if err != nil {
		return 0, spec, nil, nil, err
	}
	schema, err := rd.Schema()
	if err != nil {
		return 0, spec, nil, nil, err
	}
	var entries []iceberg.ManifestEntry
	for {
		e, err := rd.ReadEntry()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return 0, spec, nil, nil, err
		}
		df, err := rl.dataFile(ctx, e.DataFile(), *ps, e.Status() != iceberg.EntryStatusDELETED)
		if err != nil {
			return 0, spec, nil, nil, err
		}
		// Sequence numbers and snapshot ids as read (inherited ones
		// included), so the entry means the same in the new manifest.
		snap, seq := e.SnapshotID(), e.SequenceNum()
		entries = append(entries, iceberg.NewManifestEntry(e.Status(), &snap, &seq, e.FileSequenceNum(), df))
		rl.files++
	}
	return rd.Version(), *ps, schema, entries, nil
}

// dataFile is df with its path mapped, every other field as it was; a
// position delete file is written anew (relocate_deletes.go) and df points
// at the new file, with its size, column sizes, split offsets and file_path
// bounds. A live file must be at its new path.
func (rl *relocator) dataFile(ctx context.Context, df iceberg.DataFile, spec iceberg.PartitionSpec, live bool) (iceberg.DataFile, error) {
	if df.ContentType() == iceberg.EntryContentPosDeletes && (df.FileFormat() == iceberg.PuffinFile || df.ReferencedDataFile() != nil && df.ContentOffset() != nil) {
		return nil, fmt.Errorf("deletion vector %s: relocating deletion vectors (format version 3) is not supported", df.FilePath())
	}
	p, err := rl.m.uri(df.FilePath())
	if err != nil {
		return nil, err
	}
	exists := rl.checked[p]
	if !exists {
		_, err := os.Stat(localPath(p))
		if err != nil && live {
			return nil, fmt.Errorf("lake file of a snapshot: %w", err)
		}
		exists = err == nil
		rl.checked[p] = exists
	}
	var deletes *rewrittenDeletes
	size := df.FileSizeBytes()
	if df.ContentType() == iceberg.EntryContentPosDeletes && exists {
		// Its rows name data files by path. (The entry of a delete file
		// removed from the table whose file is gone keeps its mapped path,
		// as a data file's does.)
		if deletes, err = rl.positionDeletes(ctx, df, p); err != nil {
			return nil, err
		}
		p, size = deletes.path, deletes.size
	}
	b, err := iceberg.NewDataFileBuilder(spec, df.ContentType(), p, df.FileFormat(), df.Partition(), nil, nil, df.Count(), size)
	if err != nil {
		return nil, err
	}
	// An absent field stays null rather than becoming empty.
	if v := df.ColumnSizes(); v != nil {
		if deletes != nil {
			v = mergeSizes(v, deletes.columnSizes)
		}
		b.ColumnSizes(v)
	}
	if v := df.ValueCounts(); v != nil {
		b.ValueCounts(v)
	}
	if v := df.NullValueCounts(); v != nil {
		b.NullValueCounts(v)
	}
	if v := df.NaNValueCounts(); v != nil {
		b.NaNValueCounts(v)
	}
	if v := df.DistinctValueCounts(); v != nil {
		b.DistinctValueCounts(v)
	}
	if v := df.LowerBoundValues(); v != nil {
		if deletes != nil {
			v = withBound(v, deletes.lower)
		}
		b.LowerBoundValues(v)
	}
	if v := df.UpperBoundValues(); v != nil {
		if deletes != nil {
			v = withBound(v, deletes.upper)
		}
		b.UpperBoundValues(v)
	}
	if v := df.KeyMetadata(); v != nil {
		b.KeyMetadata(v)
	}
	if v := df.SplitOffsets(); v != nil {
		if deletes != nil {
			v = deletes.splitOffsets
		}
		b.SplitOffsets(v)
	}
	if v := df.EqualityFieldIDs(); v != nil {
		b.EqualityFieldIDs(v)
	}
	setPtr(b.SortOrderID, df.SortOrderID())
	setPtr(b.FirstRowID, df.FirstRowID())
	setPtr(b.ContentOffset, df.ContentOffset())
	setPtr(b.ContentSizeInBytes, df.ContentSizeInBytes())
	if ref := df.ReferencedDataFile(); ref != nil {
		q, err := rl.m.uri(*ref)
		if err != nil {
			return nil, err
		}
		b.ReferencedDataFile(q)
	}
	return b.Build(), nil
}

// mergeSizes is old with the sizes of the columns it has replaced by the
// rewritten file's.
func mergeSizes(old, rewritten map[int]int64) map[int]int64 {
	out := make(map[int]int64, len(old))
	for id, n := range old {
		if m, ok := rewritten[id]; ok {
			n = m
		}
		out[id] = n
	}
	return out
}

// withBound is bounds with the file_path bound, if it has one, replaced by
// the rewritten file's (exact, never truncated); a file without rows has
// none.
func withBound(bounds map[int][]byte, path string) map[int][]byte {
	if _, ok := bounds[posDeleteFilePathID]; !ok {
		return bounds
	}
	out := maps.Clone(bounds)
	if path == "" {
		delete(out, posDeleteFilePathID)
	} else {
		out[posDeleteFilePathID] = []byte(path)
	}
	return out
}

func setPtr[T any](set func(T) *iceberg.DataFileBuilder, v *T) {
	if v != nil {
		set(*v)
	}
}

// writeMetadata writes a metadata file's JSON with the table's metadata
// compression codec, as iceberg-go names the file for it.
func (rl *relocator) writeMetadata(uri string, doc []byte, codec string) error {
	return rl.write(uri, func(w io.Writer) error {
		switch codec {
		case "", table.MetadataCompressionCodecNone:
			_, err := w.Write(doc)
			return err
		case table.MetadataCompressionCodecGzip:
			zw := gzip.NewWriter(w)
			if _, err := zw.Write(doc); err != nil {
				return err
			}
			return zw.Close()
		case table.MetadataCompressionCodecZstd:
			zw, err := zstd.NewWriter(w)
			if err != nil {
				return err
			}
			if _, err := zw.Write(doc); err != nil {
				return errors.Join(err, zw.Close())
			}
			return zw.Close()
		default:
			return fmt.Errorf("unsupported metadata compression codec %q", codec)
		}
	})
}

// readMetadataFile reads a metadata file, decompressed (gzip and zstd are
// told by their magic numbers).
func readMetadataFile(uri string) ([]byte, error) {
	raw, err := os.ReadFile(localPath(uri))
	if err != nil {
		return nil, fmt.Errorf("read metadata: %w", err)
	}
	switch {
	case bytes.HasPrefix(raw, []byte{0x1f, 0x8b}):
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			return nil, fmt.Errorf("read metadata %s: %w", uri, err)
		}
		return io.ReadAll(zr)
	case bytes.HasPrefix(raw, []byte{0x28, 0xb5, 0x2f, 0xfd}):
		zr, err := zstd.NewReader(bytes.NewReader(raw))
		if err != nil {
			return nil, fmt.Errorf("read metadata %s: %w", uri, err)
		}
		defer zr.Close()
		return io.ReadAll(zr)
	}
	return raw, nil
}

// localPath is the file path of a file:// URI.
func localPath(uri string) string {
	if u, err := url.Parse(uri); err == nil && u.Scheme == "file" {
		return filepath.FromSlash(u.Path)
	}
	return uri
}

// write creates the new file uri (never an existing one) and writes it
// with fn; sync makes the files and their names durable afterwards.
func (rl *relocator) write(uri string, fn func(io.Writer) error) error {
	p := localPath(uri)
	dir := filepath.Dir(p)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	rl.created = append(rl.created, p)
	rl.dirs[dir] = true
	bw := bufio.NewWriterSize(f, 64<<10)
	err = fn(bw)
	if err == nil {
		err = bw.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", p, err)
	}
	return nil
}

// syncWorkers bounds the fsyncs sync runs at once. A table's relocation
// writes a file per manifest and per snapshot, a few hundred; synced one
// after another they took 60% of a relocation (docs/benchmarks.md has the
// figures).
const syncWorkers = 8

// sync fsyncs the files written, several at once (an fsync through a new
// descriptor flushes what was written through the closed one), then their
// directories, so that files and names are durable before the catalog row
// points at them.
func (rl *relocator) sync() error {
	errs := make([]error, len(rl.created))
	sem := make(chan struct{}, syncWorkers)
	var wg sync.WaitGroup
	for i, p := range rl.created {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			errs[i] = syncPath(p)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for dir := range rl.dirs {
		if err := syncPath(dir); err != nil {
			return err
		}
	}
	return nil
}

func syncPath(p string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sync %s: %w", p, err)
	}
	return nil
}

// removeCreated deletes the files written, after a relocation that failed
// before its switch (no catalog row references them).
func (rl *relocator) removeCreated() error {
	var errs []error
	for _, p := range rl.created {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	rl.created = nil
	return errors.Join(errs...)
}
