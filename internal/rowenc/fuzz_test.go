package rowenc

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

func decimalOf(hi int64, lo uint64, shift int) decimal128.Num {
	return decimal128.New(hi>>(shift*20), lo)
}

// FuzzDecode feeds arbitrary bytes to the row and key decoders: they
// return an error or values, never panic, and a row that decodes
// re-encodes to bytes that decode to the same values.
func FuzzDecode(f *testing.F) {
	s := allTypes()
	c, err := NewCodec(s.Fields())
	if err != nil {
		f.Fatal(err)
	}
	rec := readJSON(f, s, jsonRows)
	vals := make([]Value, s.NumFields())
	for i := 0; i < int(rec.NumRows()); i++ {
		c.Values(rec.Columns(), i, nil, vals)
		f.Add(c.AppendRow(nil, vals))
	}
	rec.Release()
	keyFields := keyTypes()
	f.Fuzz(func(t *testing.T, b []byte) {
		rb := array.NewRecordBuilder(memory.DefaultAllocator, s)
		defer rb.Release()
		if vals, err := c.AppendRowTo(rb.Fields(), nil, b, nil); err == nil {
			again := c.AppendRow(nil, vals)
			back, err := c.DecodeRow(again, nil)
			if err != nil || string(c.AppendRow(nil, back)) != string(again) {
				t.Fatalf("row %x re-encodes as %x, which does not decode the same: %v", b, again, err)
			}
		}
		for _, kf := range keyFields {
			kb := array.NewBuilder(memory.DefaultAllocator, kf.Type)
			_ = DecodeKey(b, []array.Builder{kb})
			kb.Release()
		}
		ks := arrow.NewSchema(keyFields, nil)
		kr := array.NewRecordBuilder(memory.DefaultAllocator, ks)
		_ = DecodeKey(b, kr.Fields())
		kr.Release()
	})
}
