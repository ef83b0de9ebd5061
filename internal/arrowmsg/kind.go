package arrowmsg

import "fmt"

// Kind is the header type of an Arrow IPC message (Message.fbs
// MessageHeader). The flatbuffer stores it as a union tag, a ubyte, so Kind
// is unsigned: a tag above 127 is an unknown kind, never a negative one.
type Kind uint8

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
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// MessageKind reads the header type of a Message flatbuffer, so a stream
// can route a message before parsing it further. It never panics: bad
// input returns an error wrapping ErrMalformed.
func MessageKind(meta []byte) (k Kind, err error) {
	defer func() {
		// As in ParseRecordBatch: messageKind checks every offset, and the
		// fuzz test calls it without this recover.
		if r := recover(); r != nil {
			k, err = 0, fmt.Errorf("message kind: %w", malformed("flatbuffer read out of bounds: %v", r))
		}
	}()
	k, err = messageKind(meta)
	if err != nil {
		return 0, fmt.Errorf("message kind: %w", err)
	}
	return k, nil
}

// messageKind is MessageKind without the recover.
func messageKind(meta []byte) (Kind, error) {
	msg, err := rootTable(meta)
	if err != nil {
		return 0, err
	}
	v, err := msg.uint8Field(msgHeaderType, 0)
	return Kind(v), err
}
