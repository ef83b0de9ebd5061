package node

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"google.golang.org/grpc/codes"

	"github.com/lakestream/lakestream/audit"
	"github.com/lakestream/lakestream/internal/flightlogin"
)

// TestAuditLog: a failed login, a login, DDL and user DDL show in
// lakestream.audit, to the admin only, and in audit.jsonl, with no
// password; after a restart the table shows them again.
func TestAuditLog(t *testing.T) {
	cfg := secureConfig(t, SecurityConfig{Auth: AuthOn, AdminPassword: "admin-password"})
	n, cancel, done := startNodeWith(t, cfg)
	cl := client(t, n.Addr())
	if _, err := flightlogin.Login(context.Background(), cl.Client, "admin", "wrong-password"); err == nil {
		t.Fatal("wrong password accepted")
	}
	admin := login(t, cl, "admin", "admin-password")
	for _, sql := range []string{"CREATE TABLE t (id BIGINT)", "CREATE USER bob WITH PASSWORD 'bob-password-1'"} {
		if _, err := query(admin, cl, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	want := []string{
		"login_failed admin unauthenticated: wrong password",
		"login admin ok",
		"ddl admin CREATE TABLE t (id BIGINT) ok",
		"user admin CREATE USER bob WITH PASSWORD '***' ok",
	}
	if got := auditRows(t, admin, n); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("lakestream.audit:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	bob := login(t, cl, "bob", "bob-password-1")
	_, err := query(bob, cl, "SELECT count(*) FROM lakestream.audit")
	wantCode(t, "audit log read by a user who is not a superuser", err, codes.PermissionDenied)

	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(cfg.DataDir, "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), "bob-password") || strings.Contains(string(raw), "admin-password") {
		t.Fatalf("a password in audit.jsonl:\n%s", raw)
	}
	sc := bufio.NewScanner(strings.NewReader(string(raw)))
	lines := 0
	for sc.Scan() {
		var e audit.Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil || e.Peer == "" || e.Time.IsZero() {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		lines++
	}
	if lines != len(want)+1 { // and bob's login; reads are not audited
		t.Fatalf("audit.jsonl: %d lines, want %d:\n%s", lines, len(want)+1, raw)
	}

	// Restarted, the table shows the events again.
	n, cancel, done = startNodeWith(t, cfg)
	defer func() { cancel(); <-done }()
	cl = client(t, n.Addr())
	admin = login(t, cl, "admin", "admin-password")
	got := auditRows(t, admin, n)
	if len(got) < len(want) || strings.Join(got[:len(want)], "\n") != strings.Join(want, "\n") {
		t.Fatalf("lakestream.audit after a restart:\n%s", strings.Join(got, "\n"))
	}
}

// auditRows reads lakestream.audit as "kind user statement outcome".
func auditRows(t *testing.T, ctx context.Context, n *Node) []string {
	t.Helper()
	cl := client(t, n.Addr())
	info, err := cl.Execute(ctx, "SELECT kind, coalesce(\"user\", ''), coalesce(statement, ''), outcome, peer FROM lakestream.audit")
	if err != nil {
		t.Fatal(err)
	}
	rdr, err := cl.DoGet(ctx, info.Endpoint[0].Ticket)
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Release()
	var out []string
	for rdr.Next() {
		rec := rdr.RecordBatch()
		for i := range int(rec.NumRows()) {
			var f []string
			for c := range 4 {
				if s := rec.Column(c).(*array.String).Value(i); s != "" {
					f = append(f, s)
				}
			}
			out = append(out, strings.Join(f, " "))
		}
	}
	if err := rdr.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
