package duck

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
)

// viewResolver is the fake resolver with views.
type viewResolver struct {
	*fakeResolver
	mu    sync.Mutex
	views map[string]string // "db.name" -> query
}

func (r *viewResolver) set(name, query string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.views[name] = query
}

func (r *viewResolver) View(_ context.Context, db, name string) (string, bool) {
	if db == "" {
		db = "default"
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, q := range r.views {
		if strings.EqualFold(k, db+"."+name) {
			return q, true
		}
	}
	return "", false
}

func (r *viewResolver) ViewNames(context.Context) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for k := range r.views {
		out = append(out, k[strings.IndexByte(k, '.')+1:])
	}
	return out
}

func withViews(t *testing.T) (*Engine, *viewResolver) {
	mem := checkedAlloc(t)
	r := &viewResolver{fakeResolver: newFakeResolver(), views: map[string]string{}}
	rec := eventsRecord(mem, 30)
	defer rec.Release()
	addTable(t, r.fakeResolver, "default.events", rec, 4)
	addTable(t, r.fakeResolver, "mydb.events", rec, 4)
	return newTestEngine(t, r), r
}

func TestViewsExpand(t *testing.T) {
	e, r := withViews(t)
	r.set("default.small", "SELECT id, kind FROM events WHERE id < 5 -- a comment at the end")
	r.set("default.smaller", "SELECT id FROM small WHERE kind = 'b'")
	r.set("mydb.qualified", "SELECT count(*) AS n FROM mydb.events")
	r.set("default.loop1", "SELECT * FROM loop2")
	r.set("default.loop2", "SELECT * FROM loop1")
	r.set("default.labels", "SELECT id value FROM default.events WHERE id = 1")

	wantRows(t, query(t, e, "SELECT id FROM small ORDER BY id"), "0", "1", "2", "3", "4")
	wantRows(t, query(t, e, "SELECT * FROM smaller"), "1", "4")
	wantRows(t, query(t, e, "SELECT s.id FROM SMALL s JOIN smaller USING (id) ORDER BY 1"), "1", "4")
	wantRows(t, query(t, e, "SELECT n FROM mydb.qualified"), "30")
	wantRows(t, query(t, e, "SELECT value FROM labels"), "1")
	wantRows(t, query(t, e, "SELECT count(*) FROM events WHERE id IN (SELECT id FROM small)"), "5")
	// A CTE of the statement wins over a view of the same name.
	wantRows(t, query(t, e, "WITH small AS (SELECT 42 AS id) SELECT id FROM small"), "42")
	res, params, err := e.Describe(context.Background(), "SELECT * FROM smaller")
	if err != nil || res.NumFields() != 1 || res.Field(0).Name != "id" || params.NumFields() != 0 {
		t.Errorf("Describe of a view: %v, %v, %v", res, params, err)
	}
	if _, err := tryQuery(e, "SELECT * FROM loop1"); !errors.Is(err, ErrViewDepth) {
		t.Errorf("a view that refers to itself: %v, want ErrViewDepth", err)
	}
	// A view named in the statement only as a string or a column is not expanded.
	wantRows(t, query(t, e, "SELECT 'small' AS small"), "small")
}

// Statements DuckDB 2.0 parses and the engine's DuckDB 1.5 does not.
func TestRepairedStatements(t *testing.T) {
	e, _, _ := withEvents(t)
	for sql, want := range map[string]string{
		"SELECT 1 share":                                            "1",
		"SELECT 1 share, 2 value, 'x' key":                          "1|2|x",
		"SELECT count(*) total FROM default.events":                 "30",
		"SELECT max(id) type FROM default.events e WHERE e.id < 3":  "2",
		"SELECT default.events.id FROM default.events WHERE id = 7": "7",
	} {
		res, err := tryQuery(e, sql)
		if err != nil {
			t.Errorf("%s: %v", sql, err)
			continue
		}
		wantRows(t, res, want)
	}
	res := query(t, e, "SELECT 1 share")
	if res.schema.Field(0).Name != "share" {
		t.Errorf("SELECT 1 share names its column %q", res.schema.Field(0).Name)
	}
	// What is wrong anyway keeps DuckDB's own error, at the original text.
	for _, sql := range []string{"SELECT 1 year", "SELECT FROM share", "SELECT 1 share share"} {
		_, err := tryQuery(e, sql)
		var de *Error
		if !errors.As(err, &de) || !strings.Contains(err.Error(), "Parser Error") {
			t.Errorf("%s: %v, want DuckDB's parser error", sql, err)
		}
	}
}
