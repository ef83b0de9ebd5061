package arrowmsg

import (
	"errors"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

func TestDictionaryValueType(t *testing.T) {
	str := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int8, ValueType: arrow.BinaryTypes.String}
	i64 := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.PrimitiveTypes.Int64}
	one := arrow.NewSchema([]arrow.Field{{Name: "a", Type: str}, {Name: "b", Type: arrow.ListOf(str)}}, nil)
	if v, err := dictionaryValueType(one); err != nil || !arrow.TypeEqual(v, arrow.BinaryTypes.String) {
		t.Errorf("one value type: %v, %v", v, err)
	}
	two := arrow.NewSchema([]arrow.Field{{Name: "a", Type: str}, {Name: "b", Type: i64}}, nil)
	if _, err := dictionaryValueType(two); !errors.Is(err, ErrUnsupported) {
		t.Errorf("two value types: %v, want ErrUnsupported", err)
	}
	none := arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.BinaryTypes.String}}, nil)
	if _, err := dictionaryValueType(none); !errors.Is(err, ErrMalformed) {
		t.Errorf("no dictionary column: %v, want ErrMalformed", err)
	}
	if _, err := ValidateDictionary(one, []byte{1, 2, 3}, nil, Limits{}); !errors.Is(err, ErrMalformed) {
		t.Errorf("garbage message: %v, want ErrMalformed", err)
	}
}
