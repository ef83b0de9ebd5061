package audit

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"
)

// Kind is what an event records.
type Kind string

// The kinds of events.
const (
	KindLogin       Kind = "login"        // a password checked and accepted
	KindLoginFailed Kind = "login_failed" // a wrong password, an unknown user, or a login refused for too many failures
	KindDDL         Kind = "ddl"          // CREATE, ALTER, DROP of databases, tables and views
	KindUser        Kind = "user"         // CREATE, ALTER, DROP USER
	KindPrivilege   Kind = "privilege"    // GRANT, REVOKE, roles and their members
	KindAPIKey      Kind = "api_key"      // CREATE, DROP API KEY
)

// Event is one entry of the audit log, and one line of its file:
//
//	{"time":"2026-12-07T05:01:02.345678Z","kind":"login_failed","user":"alice",
//	 "peer":"10.0.0.7:52114","outcome":"unauthenticated: wrong user name or password"}
//
// The field names are the file's format; add fields, never rename them.
type Event struct {
	// Time is when it happened; Record sets it when zero.
	Time time.Time `json:"time"`
	Kind Kind      `json:"kind"`
	// User is who did it: the identity's user name, the name a login
	// tried, or "" for the anonymous identity of a node without
	// authentication.
	User string `json:"user"`
	// Peer is the client's address (host:port), "" when unknown.
	Peer string `json:"peer,omitempty"`
	// Statement is the SQL, PASSWORD literals redacted (Record redacts
	// it again, whoever built the event).
	Statement string `json:"statement,omitempty"`
	// Outcome is "ok", or the error the caller got.
	Outcome string `json:"outcome"`
}

// OutcomeOK is the Outcome of an event that succeeded.
const OutcomeOK = "ok"

// Outcome is OutcomeOK for a nil error, else the error's text.
func Outcome(err error) string {
	if err == nil {
		return OutcomeOK
	}
	return err.Error()
}

// Options configure a Log. Each field documents its default.
type Options struct {
	// Path is the JSON-lines file; "" keeps events in memory only.
	// Default "" (a node passes <data-dir>/audit.jsonl).
	Path string
	// MaxBytes rotates the file once it would grow past this size: the
	// file becomes Path.1, Path.1 becomes Path.2, and so on. Default 64 MiB.
	MaxBytes int64
	// Keep is how many rotated files are kept; older ones are deleted.
	// Default 4.
	Keep int
	// Memory is how many of the latest events are kept in memory for the
	// system table; on Open they are read back from the file. Default 10,000.
	Memory int
	// Now is the clock. Default time.Now.
	Now    func() time.Time
	Logger *slog.Logger
}

func (o *Options) ensureDefaults() {
	if o.MaxBytes == 0 {
		o.MaxBytes = 64 << 20
	}
	if o.Keep == 0 {
		o.Keep = 4
	}
	if o.Memory == 0 {
		o.Memory = 10_000
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// Validate reports every problem with the options at once.
func (o *Options) Validate() error {
	var errs []error
	if o.MaxBytes < 4096 {
		errs = append(errs, fmt.Errorf("audit log size %d: want at least 4KiB", o.MaxBytes))
	}
	if o.Keep < 0 || o.Memory < 0 {
		errs = append(errs, fmt.Errorf("audit log: keep %d files, %d events in memory: want positive numbers", o.Keep, o.Memory))
	}
	return errors.Join(errs...)
}

// Log is the audit log. A nil *Log records nothing, so a caller without
// one needs no check. It is safe for concurrent use.
type Log struct {
	opts Options
	mu   struct {
		sync.Mutex
		f      *os.File // nil: memory only, or closed
		size   int64
		ring   []Event // the latest events, oldest first once full (next)
		next   int
		failed bool // the last write failed (logged once per failure run)
		closed bool
	}
}

// Open opens (creating it) the file at opts.Path for appending and reads
// its latest events back into memory.
func Open(opts Options) (*Log, error) {
	opts.ensureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	l := &Log{opts: opts}
	l.mu.ring = make([]Event, 0, min(opts.Memory, 1024))
	if opts.Path == "" {
		return l, nil
	}
	if err := l.load(); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(opts.Path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open audit log: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("open audit log: %w", err)
	}
	l.mu.f, l.mu.size = f, st.Size()
	return l, nil
}

// load reads the events of the current file into memory. A line that does
// not decode (torn by a crash mid-write) is skipped.
func (l *Log) load() error {
	f, err := os.Open(l.opts.Path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read audit log: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var e Event
		if json.Unmarshal(sc.Bytes(), &e) == nil {
			l.keepLocked(e)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read audit log %s: %w", l.opts.Path, err)
	}
	return nil
}

// Record appends an event: to memory, and to the file. Statement is
// redacted. A write that fails is logged at error and does not fail the
// caller: the operation it records has happened (or been refused) already.
func (l *Log) Record(_ context.Context, e Event) {
	if l == nil {
		return
	}
	if e.Time.IsZero() {
		e.Time = l.opts.Now()
	}
	e.Time = e.Time.UTC()
	e.Statement = clip(Redact(e.Statement))
	e.Outcome = clip(redactQuoted(e.Outcome)) // an error may quote the statement
	if e.Outcome == "" {
		e.Outcome = OutcomeOK
	}
	line, err := json.Marshal(e)
	if err != nil {
		panic(fmt.Sprintf("audit: marshal event: %v", err)) // strings and a time only
	}
	line = append(line, '\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	l.keepLocked(e)
	if l.opts.Path == "" || l.mu.closed {
		return
	}
	if err := l.writeLocked(line); err != nil {
		if !l.mu.failed {
			l.opts.Logger.Error("audit log write failed; events are kept in memory only until a write succeeds", "path", l.opts.Path, "err", err)
		}
		l.mu.failed = true
		return
	}
	l.mu.failed = false
}

func (l *Log) keepLocked(e Event) {
	if l.opts.Memory == 0 {
		return
	}
	if len(l.mu.ring) < l.opts.Memory {
		l.mu.ring = append(l.mu.ring, e)
		return
	}
	l.mu.ring[l.mu.next] = e
	l.mu.next = (l.mu.next + 1) % l.opts.Memory
}

// writeLocked appends line, rotating first when it would not fit. The
// file is not synced per event: events are few (logins, DDL) and the
// operating system writes them out; Close syncs.
func (l *Log) writeLocked(line []byte) error {
	if l.mu.f == nil { // a rotation failed half-way: start a file again
		f, err := os.OpenFile(l.opts.Path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			return err
		}
		st, err := f.Stat()
		if err != nil {
			f.Close()
			return err
		}
		l.mu.f, l.mu.size = f, st.Size()
	}
	if l.mu.size > 0 && l.mu.size+int64(len(line)) > l.opts.MaxBytes {
		if err := l.rotateLocked(); err != nil {
			return err
		}
	}
	n, err := l.mu.f.Write(line)
	l.mu.size += int64(n)
	return err
}

// rotateLocked renames the file to Path.1 (shifting older ones up and
// dropping the one past Keep) and starts a new one.
func (l *Log) rotateLocked() error {
	if err := l.mu.f.Close(); err != nil {
		return fmt.Errorf("rotate audit log: %w", err)
	}
	l.mu.f = nil
	p := l.opts.Path
	if l.opts.Keep == 0 {
		if err := os.Remove(p); err != nil {
			return fmt.Errorf("rotate audit log: %w", err)
		}
	} else {
		_ = os.Remove(p + "." + strconv.Itoa(l.opts.Keep)) // may not exist
		for i := l.opts.Keep - 1; i >= 1; i-- {
			if err := os.Rename(p+"."+strconv.Itoa(i), p+"."+strconv.Itoa(i+1)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("rotate audit log: %w", err)
			}
		}
		if err := os.Rename(p, p+".1"); err != nil {
			return fmt.Errorf("rotate audit log: %w", err)
		}
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("rotate audit log: %w", err)
	}
	l.mu.f, l.mu.size = f, 0
	return nil
}

// MaxText is how much of a statement or an outcome an event keeps: a
// client that sends megabytes of DDL fills neither the file nor memory.
const MaxText = 4096

// clip cuts s to MaxText bytes, on a character boundary, saying how long
// it was.
func clip(s string) string {
	if len(s) <= MaxText {
		return s
	}
	cut := MaxText
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("… (%d bytes)", len(s))
}

// Events returns the events kept in memory, oldest first.
func (l *Log) Events() []Event {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]Event, 0, len(l.mu.ring))
	out = append(out, l.mu.ring[l.mu.next:]...)
	return append(out, l.mu.ring[:l.mu.next]...)
}

// Close syncs and closes the file. Events recorded after Close are kept
// in memory only.
func (l *Log) Close() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.mu.closed = true
	if l.mu.f == nil {
		return nil
	}
	f := l.mu.f
	l.mu.f = nil
	return errors.Join(f.Sync(), f.Close())
}

var _ io.Closer = (*Log)(nil)
