package audit

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestRedact(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"CREATE USER alice WITH PASSWORD 'secret1!'", "CREATE USER alice WITH PASSWORD '***'"},
		{"alter user bob password 'it''s; a '' pass'", "alter user bob password '***'"},
		{"CREATE USER a PASSWORD 'x' SUPERUSER; ALTER USER b PASSWORD 'y'", "CREATE USER a PASSWORD '***' SUPERUSER; ALTER USER b PASSWORD '***'"},
		{"CREATE USER a WITH PASSWORD E'esc\\'aped'", "CREATE USER a WITH PASSWORD '***'aped'"},
		{"CREATE USER a WITH PASSWORD 'unterminated", "CREATE USER a WITH PASSWORD '***'"},
		{"CREATE USER a WITH PASSWORD hunter2;", "CREATE USER a WITH PASSWORD '***';"},
		{"CREATE USER a WITH PASSWORD", "CREATE USER a WITH PASSWORD"},
		{"SELECT password_hash, 'PASSWORD' FROM t", "SELECT password_hash, 'PASSWORD' FROM t"},
		{"CREATE TABLE passwords (password TEXT)", "CREATE TABLE passwords (password '***')"},
		{`CREATE USER "password" WITH PASSWORD 'x'`, `CREATE USER "password" WITH PASSWORD '***'`},
		{"DROP TABLE t", "DROP TABLE t"},
	} {
		if got := Redact(c.in); got != c.want {
			t.Errorf("Redact(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestRedactNeverLeaks checks, over generated passwords, that the
// password's text is gone from every form of user DDL.
func TestRedactQuoted(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"the admin user cannot be dropped: change its password with ALTER USER", "the admin user cannot be dropped: change its password with ALTER USER"},
		{`near "x": in CREATE USER a PASSWORD 'pw'`, `near "x": in CREATE USER a PASSWORD '***'`},
	} {
		if got := redactQuoted(c.in); got != c.want {
			t.Errorf("redactQuoted(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestRedactNeverLeaks(t *testing.T) {
	pieces := []string{"a", "'", "''", ";", " ", "PASSWORD", "\\", "é", ")"}
	for i := range 2000 {
		var pw strings.Builder
		for n := i; n > 0; n /= len(pieces) {
			pw.WriteString(pieces[n%len(pieces)])
		}
		secret := "S3cr3t" + pw.String() + "Z9"
		quoted := "'" + strings.ReplaceAll(secret, "'", "''") + "'"
		for _, stmt := range []string{
			"CREATE USER u WITH PASSWORD " + quoted,
			"ALTER USER u WITH PASSWORD " + quoted + " SUPERUSER",
			"alter user u password " + quoted,
		} {
			if got := Redact(stmt); strings.Contains(got, "S3cr3t") || strings.Contains(got, "Z9") {
				t.Fatalf("Redact(%q) = %q: the password shows", stmt, got)
			}
		}
	}
}

func TestLogFileAndMemory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	clock := time.Date(2026, 12, 7, 5, 0, 0, 0, time.UTC)
	l, err := Open(Options{Path: path, Now: func() time.Time { return clock }})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	l.Record(ctx, Event{Kind: KindLoginFailed, User: "alice", Peer: "10.0.0.7:5000", Outcome: Outcome(errors.New("wrong user name or password"))})
	l.Record(ctx, Event{Kind: KindUser, User: "admin", Peer: "127.0.0.1:1", Statement: "CREATE USER bob WITH PASSWORD 'pw12345678'"})
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"time":"2026-12-07T05:00:00Z","kind":"login_failed","user":"alice","peer":"10.0.0.7:5000","outcome":"wrong user name or password"}
{"time":"2026-12-07T05:00:00Z","kind":"user","user":"admin","peer":"127.0.0.1:1","statement":"CREATE USER bob WITH PASSWORD '***'","outcome":"ok"}
`
	if string(raw) != want {
		t.Fatalf("file:\n%s\nwant:\n%s", raw, want)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Errorf("file mode %v, want 0600", st.Mode().Perm())
	}

	// Reopened, the events come back for the system table.
	l2, err := Open(Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	ev := l2.Events()
	if len(ev) != 2 || ev[0].Kind != KindLoginFailed || ev[1].Statement != "CREATE USER bob WITH PASSWORD '***'" {
		t.Fatalf("events after reopen: %+v", ev)
	}
}

func TestLogRotates(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.jsonl")
	l, err := Open(Options{Path: path, MaxBytes: 4096, Keep: 2, Memory: 5})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		l.Record(context.Background(), Event{Kind: KindDDL, User: "u", Statement: fmt.Sprintf("CREATE TABLE t%03d (a INT)", i)})
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	var seen []string
	for _, name := range []string{"audit.jsonl.2", "audit.jsonl.1", "audit.jsonl"} {
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		st, _ := f.Stat()
		if st.Size() > 4096 {
			t.Errorf("%s: %d bytes, over the 4096 limit", name, st.Size())
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			var e Event
			if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			seen = append(seen, e.Statement)
		}
		f.Close()
	}
	if _, err := os.Stat(filepath.Join(dir, "audit.jsonl.3")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("audit.jsonl.3 kept past Keep=2: %v", err)
	}
	// The files hold the latest events, in order, without a gap.
	last := seen[len(seen)-1]
	if last != "CREATE TABLE t199 (a INT)" {
		t.Fatalf("last event %q", last)
	}
	for i := 1; i < len(seen); i++ {
		var a, b int
		fmt.Sscanf(seen[i-1], "CREATE TABLE t%d", &a)
		fmt.Sscanf(seen[i], "CREATE TABLE t%d", &b)
		if b != a+1 {
			t.Fatalf("events %d then %d across the rotated files", a, b)
		}
	}
	ev := l.Events()
	if len(ev) != 5 || ev[0].Statement != "CREATE TABLE t195 (a INT)" || ev[4].Statement != "CREATE TABLE t199 (a INT)" {
		t.Fatalf("memory keeps %d events from %q", len(ev), ev[0].Statement)
	}
}

func TestNilLog(t *testing.T) {
	var l *Log
	l.Record(context.Background(), Event{Kind: KindLogin})
	if l.Events() != nil || l.Close() != nil {
		t.Fatal("a nil Log must do nothing")
	}
}

func TestOptionsValidate(t *testing.T) {
	o := Options{MaxBytes: 10, Keep: -1}
	o.ensureDefaults()
	err := o.Validate()
	if err == nil || !strings.Contains(err.Error(), "4KiB") || !strings.Contains(err.Error(), "keep -1") {
		t.Fatalf("Validate: %v", err)
	}
}

func TestLongTextClipped(t *testing.T) {
	l, err := Open(Options{})
	if err != nil {
		t.Fatal(err)
	}
	long := "CREATE VIEW v AS SELECT '" + strings.Repeat("é", 10_000) + "' PASSWORD 'pw-secret'"
	l.Record(context.Background(), Event{Kind: KindDDL, Statement: long, Outcome: long})
	e := l.Events()[0]
	for _, s := range []string{e.Statement, e.Outcome} {
		if len(s) > MaxText+32 || !strings.HasSuffix(s, " bytes)") || !utf8.ValidString(s) || strings.Contains(s, "pw-secret") {
			t.Fatalf("clipped to %d bytes: ...%q", len(s), s[len(s)-40:])
		}
	}
}
