package node

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// The status page's data and /metrics show a user the tables it may
// SELECT, and a superuser every table.
func TestHTTPViewsShowTheTablesAUserMaySelect(t *testing.T) {
	n, cancel, done := startNodeWith(t, secureConfig(t, SecurityConfig{Auth: AuthOn, AdminPassword: "admin-password"}))
	defer func() { cancel(); <-done }()
	cl := client(t, n.Addr())
	admin := login(t, cl, "admin", "admin-password")
	for _, sql := range []string{
		"CREATE TABLE seen (id BIGINT)",
		"CREATE TABLE hidden (id BIGINT)",
		"INSERT INTO seen SELECT range FROM range(10)",
		"INSERT INTO hidden SELECT range FROM range(1000)",
		"CREATE USER alice WITH PASSWORD 'alice-password'",
		"GRANT SELECT ON TABLE seen TO alice",
	} {
		if _, err := cl.ExecuteUpdate(admin, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	if _, err := cl.Execute(admin, "SELECT * FROM hidden_typo"); err == nil {
		t.Fatal("a query of a missing table succeeded")
	}
	get := func(user, password, path string) string {
		t.Helper()
		req, err := http.NewRequest("GET", "http://"+n.HTTPAddr()+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.SetBasicAuth(user, password)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("%s as %s: %s %v", path, user, resp.Status, err)
		}
		return string(body)
	}
	status := func(user, password string) Status {
		t.Helper()
		var st Status
		if err := json.Unmarshal([]byte(get(user, password, "/status.json")), &st); err != nil {
			t.Fatal(err)
		}
		return st
	}
	names := func(st Status) []string {
		var out []string
		for _, tb := range st.Tables {
			out = append(out, tb.Name)
		}
		slices.Sort(out)
		return out
	}

	all := status("admin", "admin-password")
	if got := names(all); !slices.Equal(got, []string{"default.hidden", "default.seen"}) {
		t.Errorf("admin sees %v", got)
	}
	if all.DataDir == "" || len(all.Errors) == 0 || all.Totals.Rows != 1010 {
		t.Errorf("admin's status: data dir %q, %d errors, %d rows", all.DataDir, len(all.Errors), all.Totals.Rows)
	}
	mine := status("alice", "alice-password")
	if got := names(mine); !slices.Equal(got, []string{"default.seen"}) {
		t.Errorf("alice sees %v, want default.seen alone", got)
	}
	for _, b := range mine.Lake {
		if b.Table != "default.seen" {
			t.Errorf("alice sees the lake of %s", b.Table)
		}
	}
	if mine.DataDir != "" || len(mine.Errors) != 0 || len(mine.Orphans) != 0 || mine.Totals.Tables != 1 || mine.Totals.Rows != 10 {
		t.Errorf("alice's status: data dir %q, %d errors, %d orphans, totals %+v", mine.DataDir, len(mine.Errors), len(mine.Orphans), mine.Totals)
	}
	if page := get("alice", "alice-password", "/"); strings.Contains(page, "default.hidden") || !strings.Contains(page, "default.seen") {
		t.Error("alice's status page does not show exactly her table")
	}

	if m := get("admin", "admin-password", "/metrics"); !strings.Contains(m, `table="default.hidden"`) || !strings.Contains(m, `table="default.seen"`) {
		t.Error("admin's /metrics lacks a table")
	}
	m := get("alice", "alice-password", "/metrics")
	if strings.Contains(m, `table="default.hidden"`) || !strings.Contains(m, `table="default.seen"`) {
		t.Error(`alice's /metrics: want the series of default.seen and none of default.hidden`)
	}
	if !strings.Contains(m, "go_goroutines") {
		t.Error("alice's /metrics lacks the node-wide series")
	}
}
