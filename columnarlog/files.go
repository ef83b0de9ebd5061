package columnarlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path"

	"github.com/lakestream/lakestream/internal/vfs"
)

// writeFileSync writes a whole file and syncs it.
func writeFileSync(fs vfs.FS, name string, data []byte) error {
	f, err := fs.Create(name)
	if err != nil {
		return fmt.Errorf("create %s: %w", name, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", name, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("sync %s: %w", name, err)
	}
	return f.Close()
}

// replaceFile replaces file name of directory dir by one holding data,
// atomically and durably: a temporary file written and synced, renamed into
// place, the directory synced.
func replaceFile(fs vfs.FS, dir, name string, data []byte) error {
	full := path.Join(dir, name)
	if err := writeFileSync(fs, full+".tmp", data); err != nil {
		return err
	}
	if err := fs.Rename(full+".tmp", full); err != nil {
		return fmt.Errorf("rename %s: %w", full+".tmp", err)
	}
	if err := fs.SyncDir(dir); err != nil {
		return fmt.Errorf("sync dir %s: %w", dir, err)
	}
	return nil
}

// readFile reads a whole file.
func readFile(fs vfs.FS, name string) ([]byte, error) {
	f, err := fs.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return nil, err
	}
	buf := make([]byte, size)
	if _, err := f.ReadAt(buf, 0); err != nil && size > 0 {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	return buf, nil
}

// Writer snapshot file, <base offset, 20 digits>.writers: the idempotent
// writers' state as of the first offset of the segment with that base, so
// that opening a log scans only its active segment. Writers idle for longer
// than Options.WriterExpiry are left out.
//
//	count uint32 | count × (writer id int64 | seq int32 | base offset int64 | record count int32
//	| commit timestamp int64) | CRC-32C uint32
//
// The commit timestamp (Unix microseconds) is that of the writer's last
// batch. A snapshot written before it was added has 24-byte entries without
// it; they are read as written at the time they are read.
const writersSuffix = ".writers"

const (
	writerEntrySize   = 32
	writerEntrySizeV1 = 24 // without the commit timestamp
)

func writeWriterSnapshot(fs vfs.FS, dir string, base int64, writers map[int64]writerState) error {
	buf := binary.LittleEndian.AppendUint32(nil, uint32(len(writers)))
	for id, st := range writers {
		buf = binary.LittleEndian.AppendUint64(buf, uint64(id))
		buf = binary.LittleEndian.AppendUint32(buf, uint32(st.seq))
		buf = binary.LittleEndian.AppendUint64(buf, uint64(st.base))
		buf = binary.LittleEndian.AppendUint32(buf, uint32(st.count))
		buf = binary.LittleEndian.AppendUint64(buf, uint64(st.ts))
	}
	buf = binary.LittleEndian.AppendUint32(buf, crc32.Checksum(buf, castagnoli))
	return writeFileSync(fs, path.Join(dir, segmentName(base, writersSuffix)), buf)
}

// readWriterSnapshot returns the writers saved at base; a missing snapshot is
// an empty state (idempotence then starts afresh for older writers). now
// (Unix microseconds) stands for the timestamp an entry of the first format
// lacks.
func readWriterSnapshot(fs vfs.FS, dir string, base int64, now int64) (map[int64]writerState, error) {
	out := map[int64]writerState{}
	name := path.Join(dir, segmentName(base, writersSuffix))
	buf, err := readFile(fs, name)
	if errors.Is(err, os.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	if len(buf) < 8 {
		return nil, fmt.Errorf("writer snapshot %s: %w: %d bytes", name, ErrCorrupt, len(buf))
	}
	body, sum := buf[:len(buf)-4], binary.LittleEndian.Uint32(buf[len(buf)-4:])
	n := int(binary.LittleEndian.Uint32(body))
	entry := writerEntrySize
	if n > 0 && len(body) == 4+n*writerEntrySizeV1 {
		entry = writerEntrySizeV1
	}
	if crc32.Checksum(body, castagnoli) != sum || len(body) != 4+n*entry {
		return nil, fmt.Errorf("writer snapshot %s: %w", name, ErrCorrupt)
	}
	for i := 0; i < n; i++ {
		e := body[4+i*entry:]
		st := writerState{
			seq:   int32(binary.LittleEndian.Uint32(e[8:])),
			base:  int64(binary.LittleEndian.Uint64(e[12:])),
			count: int32(binary.LittleEndian.Uint32(e[20:])),
			ts:    now,
		}
		if entry == writerEntrySize {
			st.ts = int64(binary.LittleEndian.Uint64(e[24:]))
		}
		out[int64(binary.LittleEndian.Uint64(e))] = st
	}
	return out, nil
}
