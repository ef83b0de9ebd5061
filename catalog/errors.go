package catalog

import (
	"errors"
	"fmt"
)

// Sentinel errors, tested with errors.Is. The error text around them names the
// object, e.g. `table "default.events" already exists`.
var (
	ErrDatabaseExists   = errors.New("database already exists")
	ErrDatabaseNotFound = errors.New("database not found")
	ErrDatabaseNotEmpty = errors.New("database not empty")
	ErrTableExists      = errors.New("table already exists")
	ErrTableNotFound    = errors.New("table not found")
	ErrColumnExists     = errors.New("column already exists")
	ErrSchemaNotFound   = errors.New("schema version not found")
	// ErrInvalid marks a bad definition, option, type or statement: the
	// caller's input is wrong, retrying will not help. *SyntaxError matches
	// it too, so one errors.Is check maps all user mistakes to
	// InvalidArgument.
	ErrInvalid = errors.New("invalid definition")
)

// SyntaxError is a DDL parse error at a byte offset of the statement text.
type SyntaxError struct {
	Pos  int    // byte offset into the statement text
	Near string // text of the token at Pos; "" at end of input
	Msg  string // what was expected, e.g. `expected "("`
}

func (e *SyntaxError) Error() string {
	if e.Near == "" {
		return fmt.Sprintf("syntax error at position %d at end of input: %s", e.Pos, e.Msg)
	}
	return fmt.Sprintf("syntax error at position %d near %q: %s", e.Pos, e.Near, e.Msg)
}

// Is makes errors.Is(err, ErrInvalid) true for syntax errors.
func (e *SyntaxError) Is(target error) bool { return target == ErrInvalid }

// problem is one validation finding. Its text carries no prefix, so that
// errors.Join of several problems reads as a plain list, one per line, while
// errors.Is(err, ErrInvalid) still holds.
type problem struct{ msg string }

func (p *problem) Error() string        { return p.msg }
func (p *problem) Is(target error) bool { return target == ErrInvalid }

// invalidf returns a problem error that matches ErrInvalid.
func invalidf(format string, args ...any) error {
	return &problem{msg: fmt.Sprintf(format, args...)}
}

// kindError is an error of one of the sentinel kinds above whose message is
// one sentence naming the object (`table "default.t" does not exist`),
// without the sentinel's own text repeated after it, as %w would add.
type kindError struct {
	msg  string
	kind error
}

func (e *kindError) Error() string        { return e.msg }
func (e *kindError) Is(target error) bool { return target == e.kind }

// errorf returns an error that reads as the formatted message and matches
// kind with errors.Is.
func errorf(kind error, format string, args ...any) error {
	return &kindError{msg: fmt.Sprintf(format, args...), kind: kind}
}
