package tiering

import (
	"fmt"
	"strconv"
	"strings"
)

// offsetsKey is the table property, and snapshot summary entry, holding the
// tiered offset of every bucket: "0:120,1:77", the first offset of each
// bucket that is not in the lake.
const offsetsKey = "lakestream.tiered-offsets"

// tableIDKey binds the Iceberg table to the Lakestream table it tiers, so
// that a table dropped with datalake.keep-on-drop and created again under
// the same name never continues the old table's offsets.
const tableIDKey = "lakestream.table-id"

func formatOffsets(o []int64) string {
	var b strings.Builder
	for i, v := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(i))
		b.WriteByte(':')
		b.WriteString(strconv.FormatInt(v, 10))
	}
	return b.String()
}

// parseOffsets reads formatOffsets' output for a table of n buckets; an
// empty string is all zeros. A bucket beyond n is an error: the bucket
// count of a table never changes.
func parseOffsets(s string, n int) ([]int64, error) {
	out := make([]int64, n)
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, ":")
		b, err1 := strconv.Atoi(strings.TrimSpace(k))
		off, err2 := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if !ok || err1 != nil || err2 != nil || off < 0 {
			return nil, fmt.Errorf("tiered offsets %q: bad entry %q", s, kv)
		}
		if b < 0 || b >= n {
			return nil, fmt.Errorf("tiered offsets %q: bucket %d, but the table has %d buckets", s, b, n)
		}
		out[b] = off
	}
	return out, nil
}
