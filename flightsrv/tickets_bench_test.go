package flightsrv

import (
	"encoding/json"
	"testing"

	"github.com/lakestream/lakestream/tables"
)

// BenchmarkTicketSealOpen signs a scan ticket and checks it, as a plan and
// its DoGet do, against the JSON alone that an unsigned ticket costs
// (docs/benchmarks.md, "Security").
func BenchmarkTicketSealOpen(b *testing.B) {
	tk := &ticket{Kind: "scan", User: 3, Table: 12, Cols: []int{0, 2}, Ranges: []tables.Range{{Bucket: 0, From: 0, To: 4096}, {Bucket: 1, From: 9, To: 8192}}}
	b.Run("signed", func(b *testing.B) {
		for range b.N {
			raw, err := tk.encode(fuzzKey)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := decodeTicket(fuzzKey, raw); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("json-only", func(b *testing.B) {
		for range b.N {
			raw, err := json.Marshal(tk)
			if err != nil {
				b.Fatal(err)
			}
			var out ticket
			if err := json.Unmarshal(raw, &out); err != nil {
				b.Fatal(err)
			}
		}
	})
}
