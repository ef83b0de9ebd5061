package arrowmsg

import "fmt"

// Kind is the header type of an Arrow IPC message (Message.fbs MessageHeader).
type Kind int8

const (
	KindNone            Kind = 0
	KindSchema          Kind = 1
	KindDictionaryBatch Kind = 2
	KindRecordBatch     Kind = 3
	KindTensor          Kind = 4
	KindSparseTensor    Kind = 5
)

func (k Kind) String() string {
	switch k {
	case KindNone:
		return "empty"
	case KindSchema:
		return "schema"
	case KindDictionaryBatch:
		return "dictionary batch"
	case KindRecordBatch:
		return "record batch"
	case KindTensor:
		return "tensor"
	case KindSparseTensor:
		return "sparse tensor"
	}
	return fmt.Sprintf("kind(%d)", int8(k))
}

// MessageKind reads the header type of a Message flatbuffer, so a stream
// can route a message before parsing it further. It never panics.
func MessageKind(meta []byte) (k Kind, err error) {
	defer func() {
		if r := recover(); r != nil {
			k, err = 0, fmt.Errorf("message kind: %w", malformed("flatbuffer read out of bounds: %v", r))
		}
	}()
	msg, err := rootTable(meta)
	if err != nil {
		return 0, fmt.Errorf("message kind: %w", err)
	}
	v, err := msg.int8Field(msgHeaderType, 0)
	if err != nil {
		return 0, fmt.Errorf("message kind: %w", err)
	}
	return Kind(v), nil
}
