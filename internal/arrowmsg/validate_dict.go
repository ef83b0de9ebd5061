package arrowmsg

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
)

// Dictionary-encoded columns in incoming streams (pandas categoricals,
// Arrow dictionary arrays). A record batch carries a dictionary column's
// indices: one fixed-width buffer of the index type. The dictionary's
// values come before it in a DictionaryBatch message: a record batch of one
// column of the value type, with the dictionary's id. Validate checks the
// indices like any integers; ValidateDictionary checks a dictionary batch
// against the value type. The stored format has no dictionaries: the
// values are decoded before they are written (tables' conform).

// DictionaryBatch table field ids and the MessageHeader tag (Message.fbs).
const (
	dbID            = 0
	dbData          = 1
	headerDictBatch = 2
)

// ValidateDictionary checks a DictionaryBatch message of a stream with the
// given schema, as Validate checks a record batch, and returns the
// dictionary's id. The id is not matched to its field (arrow-go's reader
// does that when it decodes): the batch is checked against the value type
// every dictionary column of schema shares, and a schema whose dictionary
// columns have different value types is refused.
func ValidateDictionary(schema *arrow.Schema, meta, body []byte, lim Limits) (id int64, err error) {
	defer func() {
		if r := recover(); r != nil {
			id, err = 0, fmt.Errorf("validate dictionary batch: %w", malformed("flatbuffer read out of bounds: %v", r))
		}
	}()
	value, err := dictionaryValueType(schema)
	if err != nil {
		return 0, fmt.Errorf("validate dictionary batch: %w", err)
	}
	hdr, id, err := parseDictionaryBatch(meta)
	if err != nil {
		return 0, fmt.Errorf("validate dictionary batch: %w", err)
	}
	values := arrow.NewSchema([]arrow.Field{{Name: "dictionary", Type: value, Nullable: true}}, nil)
	spans, views, err := inputSpans(values)
	if err != nil {
		return 0, fmt.Errorf("validate dictionary batch: %w", err)
	}
	if err := validateHeader(values, spans, views, hdr, body, lim.EnsureDefaults()); err != nil {
		return 0, fmt.Errorf("validate dictionary batch %d: %w", id, err)
	}
	return id, nil
}

// dictionaryValueType is the value type of schema's dictionary columns.
func dictionaryValueType(schema *arrow.Schema) (arrow.DataType, error) {
	if schema == nil {
		return nil, malformed("dictionary batch before the schema")
	}
	var value arrow.DataType
	var walk func(t arrow.DataType) error
	walk = func(t arrow.DataType) error {
		if d, ok := t.(*arrow.DictionaryType); ok {
			switch {
			case value == nil:
				value = d.ValueType
			case !arrow.TypeEqual(value, d.ValueType):
				return unsupported("dictionary columns of different value types (%s, %s): send one of them decoded", value, d.ValueType)
			}
			return walk(d.ValueType)
		}
		if n, ok := t.(arrow.NestedType); ok {
			for _, f := range n.Fields() {
				if err := walk(f.Type); err != nil {
					return err
				}
			}
		}
		return nil
	}
	for _, f := range schema.Fields() {
		if err := walk(f.Type); err != nil {
			return nil, err
		}
	}
	if value == nil {
		return nil, malformed("dictionary batch, but the schema has no dictionary column")
	}
	return value, nil
}

// parseDictionaryBatch parses a DictionaryBatch message: its record batch
// and id.
func parseDictionaryBatch(meta []byte) (*RecordBatchHeader, int64, error) {
	msg, err := rootTable(meta)
	if err != nil {
		return nil, 0, err
	}
	hdr := &RecordBatchHeader{}
	if hdr.Version, err = msg.int16Field(msgVersion, 0); err != nil {
		return nil, 0, err
	}
	if hdr.Version != metadataV4 && hdr.Version != metadataV5 {
		return nil, 0, unsupported("metadata version %d is not V4 or V5", hdr.Version)
	}
	kind, err := msg.uint8Field(msgHeaderType, 0)
	if err != nil {
		return nil, 0, err
	}
	if kind != headerDictBatch {
		return nil, 0, malformed("message header has type %d, not a dictionary batch (%d)", kind, headerDictBatch)
	}
	if hdr.BodyLength, err = msg.int64Field(msgBodyLength, 0); err != nil {
		return nil, 0, err
	}
	if hdr.BodyLength < 0 {
		return nil, 0, malformed("message claims a negative body length %d", hdr.BodyLength)
	}
	db, ok, err := msg.tableField(msgHeader)
	if err != nil {
		return nil, 0, err
	}
	if !ok {
		return nil, 0, malformed("message has no dictionary batch header")
	}
	id, err := db.int64Field(dbID, 0)
	if err != nil {
		return nil, 0, err
	}
	rb, ok, err := db.tableField(dbData)
	if err != nil {
		return nil, 0, err
	}
	if !ok {
		return nil, 0, malformed("dictionary batch %d has no data", id)
	}
	if err := parseBatch(rb, hdr); err != nil {
		return nil, 0, err
	}
	return hdr, id, nil
}
