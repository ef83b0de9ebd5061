package arrowmsg

import (
	"errors"
	"fmt"
)

// Sentinel errors; every error from this package that is caused by its input
// wraps exactly one of them, so callers map them with errors.Is (for example
// to InvalidArgument and ResourceExhausted status codes).
var (
	// ErrMalformed: the message contradicts the Arrow format or the schema.
	ErrMalformed = errors.New("malformed arrow message")
	// ErrTooLarge: the message is well formed but exceeds a Limits field.
	ErrTooLarge = errors.New("arrow message too large")
	// ErrUnsupported: the message or schema uses a feature this package does
	// not handle (dictionaries, unions, view and run-end encoded types,
	// metadata versions before V4, unknown codecs).
	ErrUnsupported = errors.New("unsupported arrow feature")
)

// Error describes one problem found in a message. Its text is a sentence
// naming the column where the problem was found, for example
//
//	column "amount": buffer 1 claims 1073741824 uncompressed bytes, over the limit of 268435456
//
// Kind is ErrMalformed, ErrTooLarge or ErrUnsupported and is what Unwrap
// returns. A struct rather than fmt.Errorf("...: %w") keeps the sentence
// free of a trailing sentinel text while still letting callers use
// errors.As to pull out the column.
type Error struct {
	Column string // top-level column name, "" when not about one column
	Kind   error
	Msg    string
}

func (e *Error) Error() string {
	if e.Column == "" {
		return e.Msg
	}
	return fmt.Sprintf("column %q: %s", e.Column, e.Msg)
}

func (e *Error) Unwrap() error { return e.Kind }

func malformed(format string, args ...any) error {
	return &Error{Kind: ErrMalformed, Msg: fmt.Sprintf(format, args...)}
}

func unsupported(format string, args ...any) error {
	return &Error{Kind: ErrUnsupported, Msg: fmt.Sprintf(format, args...)}
}
