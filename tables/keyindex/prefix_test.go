package keyindex

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// TestScanPrefix compares ScanPrefix with a filter over a model of random
// keys, 0xFF bytes and neighbouring buckets included.
func TestScanPrefix(t *testing.T) {
	x, err := Open("/kv", 3, Options{FS: vfs.NewMem()})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	rng := rand.New(rand.NewPCG(3, 4))
	alphabet := []byte{0x00, 0x01, 0x7F, 0xFE, 0xFF}
	model := map[int][]string{}
	for b := 0; b < 3; b++ {
		batch := x.NewBatch(b, 0)
		seen := map[string]bool{}
		for i := 0; i < 300; i++ {
			k := make([]byte, 1+rng.IntN(4))
			for j := range k {
				k[j] = alphabet[rng.IntN(len(alphabet))]
			}
			if seen[string(k)] {
				continue
			}
			seen[string(k)] = true
			batch.Set(k, int64(i), []byte{byte(b)})
			model[b] = append(model[b], string(k))
		}
		if err := batch.Commit(1); err != nil {
			t.Fatal(err)
		}
		slices.Sort(model[b])
	}
	prefixes := [][]byte{{}, {0xFF}, {0xFF, 0xFF}, {0x00}, {0x7F, 0xFE}, {0xFE, 0xFF}, {0x01, 0x00, 0xFF}}
	for b := 0; b < 3; b++ {
		for _, p := range prefixes {
			var want, got []string
			for _, k := range model[b] {
				if bytes.HasPrefix([]byte(k), p) {
					want = append(want, k)
				}
			}
			err := x.ScanPrefix(b, p, func(key []byte, e Entry) error {
				if len(e.Row) != 1 || int(e.Row[0]) != b {
					t.Errorf("bucket %d prefix %x: row of bucket %v", b, p, e.Row)
				}
				got = append(got, string(key))
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Errorf("bucket %d prefix %x: %d keys %x, want %d %x", b, p, len(got), got, len(want), want)
			}
		}
	}
}
