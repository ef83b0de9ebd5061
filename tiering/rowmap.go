package tiering

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	"github.com/klauspost/compress/zstd"
)

// A lake data file written by Lakestream carries, in its Parquet footer's
// key-value metadata, the log position of every row it holds: its row map.
// The Iceberg table stays clean (the user's columns only; readers ignore
// footer metadata), yet a subscription that starts below the retained log
// can be served from the lake with each row's bucket, offset, change type
// and commit time (the lake hand-off, history.go). Compaction concatenates
// row maps as it concatenates rows; a file rewritten by another engine has
// none, and the history it held is reported unavailable.

// rowMapKey is the footer key of a data file's row map.
const rowMapKey = "lakestream.rows"

// rowMapVersion prefixes the encoded row map.
const rowMapVersion = "1:"

// A run is consecutive rows of a data file that hold consecutive offsets of
// one bucket, committed together, with one change type.
type run struct {
	bucket int32
	offset int64 // the offset of the run's first row
	rows   int64
	commit int64 // commit timestamp, unix microseconds
	change uint8 // columnarlog.ChangeType
}

func (r run) end() int64 { return r.offset + r.rows }

// rowMap is a data file's runs, in the file's row order.
type rowMap []run

// rows is the number of rows the map describes.
func (m rowMap) rows() int64 {
	var n int64
	for _, r := range m {
		n += r.rows
	}
	return n
}

// add appends a run, merging it into the last one when it continues it.
func (m rowMap) add(r run) rowMap {
	if r.rows == 0 {
		return m
	}
	if n := len(m); n > 0 {
		last := &m[n-1]
		if last.bucket == r.bucket && last.end() == r.offset && last.commit == r.commit && last.change == r.change {
			last.rows += r.rows
			return m
		}
	}
	return append(m, r)
}

var (
	rowMapEncoder, _ = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithEncoderConcurrency(1))
	rowMapDecoder, _ = zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(64<<20))
)

// encode writes the map as text for the footer: runs as varint deltas from
// the previous run, zstd-compressed, in base64. A run of a log batch costs
// a few bytes.
func (m rowMap) encode() string {
	buf := binary.AppendUvarint(nil, uint64(len(m)))
	var prev run
	for _, r := range m {
		buf = binary.AppendVarint(buf, int64(r.bucket-prev.bucket))
		buf = binary.AppendVarint(buf, r.offset-prev.end())
		buf = binary.AppendUvarint(buf, uint64(r.rows))
		buf = binary.AppendVarint(buf, r.commit-prev.commit)
		buf = append(buf, r.change)
		prev = r
	}
	return rowMapVersion + base64.RawStdEncoding.EncodeToString(rowMapEncoder.EncodeAll(buf, nil))
}

var errBadRowMap = errors.New("malformed row map")

// decodeRowMap reads an encoded row map.
func decodeRowMap(s string) (rowMap, error) {
	body, ok := strings.CutPrefix(s, rowMapVersion)
	if !ok {
		return nil, fmt.Errorf("%w: unknown version %.8q", errBadRowMap, s)
	}
	z, err := base64.RawStdEncoding.DecodeString(body)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errBadRowMap, err)
	}
	buf, err := rowMapDecoder.DecodeAll(z, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errBadRowMap, err)
	}
	n, k := binary.Uvarint(buf)
	if k <= 0 || n > uint64(len(buf)) {
		return nil, fmt.Errorf("%w: bad run count", errBadRowMap)
	}
	buf = buf[k:]
	m := make(rowMap, 0, n)
	var prev run
	varint := func() int64 {
		v, k := binary.Varint(buf)
		if k <= 0 {
			err = errBadRowMap
			return 0
		}
		buf = buf[k:]
		return v
	}
	for i := uint64(0); i < n && err == nil; i++ {
		var r run
		r.bucket = prev.bucket + int32(varint())
		r.offset = prev.end() + varint()
		rows, k := binary.Uvarint(buf)
		if k <= 0 || rows == 0 || rows > 1<<40 {
			return nil, fmt.Errorf("%w: bad run length", errBadRowMap)
		}
		buf = buf[k:]
		r.rows = int64(rows)
		r.commit = prev.commit + varint()
		if err != nil || len(buf) == 0 {
			return nil, fmt.Errorf("%w: truncated", errBadRowMap)
		}
		r.change, buf = buf[0], buf[1:]
		if r.bucket < 0 || r.offset < 0 {
			return nil, fmt.Errorf("%w: negative position", errBadRowMap)
		}
		m = append(m, r)
		prev = r
	}
	if err != nil || len(buf) != 0 {
		return nil, fmt.Errorf("%w: trailing or truncated data", errBadRowMap)
	}
	return m, nil
}
