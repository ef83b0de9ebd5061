package catalog

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// A model-based test of a shared catalog: random DDL on two handles of
// one PostgreSQL catalog, one at a time or two at once, against a model
// of the databases and their tables. After each step both handles
// refresh and must show the model's state, with the same table ids.
// Steps of two statements at once must match one of their two orders.

// ddlModel is the expected catalog: database -> table -> its state.
type ddlModel map[string]map[string]modelTable

type modelTable struct {
	id   int64  // learned from the CREATE that made it
	cols string // the column names in order, space-separated
}

func (t modelTable) exists() bool { return t.cols != "" }

func (m ddlModel) clone() ddlModel {
	out := ddlModel{}
	for db, ts := range m {
		out[db] = maps.Clone(ts)
	}
	return out
}

// ddlOp is one statement and what the model makes of it.
type ddlOp struct {
	sql string
	// apply checks the statement against m, changes m as the statement
	// would, and returns the error kind expected (nil: success); a table
	// it creates takes its id from res.
	apply func(m ddlModel, res Result) error
}

func randomOp(r *rand.Rand) ddlOp {
	dbs := []string{"d1", "d2"}
	db := dbs[r.IntN(len(dbs))]
	tdb := []string{DefaultDatabase, "d1", "d2"}[r.IntN(3)]
	name := []string{"t1", "t2", "t3"}[r.IntN(3)]
	col := []string{"c1", "c2", "c3"}[r.IntN(3)]
	flag := r.IntN(2) == 0
	switch r.IntN(5) {
	case 0:
		return ddlOp{sql: "CREATE DATABASE " + ifWord(flag, "IF NOT EXISTS ") + db, apply: func(m ddlModel, _ Result) error {
			if m[db] != nil {
				return orNil(!flag, ErrDatabaseExists)
			}
			m[db] = map[string]modelTable{}
			return nil
		}}
	case 1:
		return ddlOp{sql: "DROP DATABASE " + db + ifWord(flag, " CASCADE"), apply: func(m ddlModel, _ Result) error {
			switch {
			case m[db] == nil:
				return ErrDatabaseNotFound
			case len(m[db]) > 0 && !flag:
				return ErrDatabaseNotEmpty
			}
			delete(m, db)
			return nil
		}}
	case 2:
		return ddlOp{sql: fmt.Sprintf("CREATE TABLE %s%s.%s (a INT)", ifWord(flag, "IF NOT EXISTS "), tdb, name), apply: func(m ddlModel, res Result) error {
			switch {
			case m[tdb] == nil:
				return ErrDatabaseNotFound
			case m[tdb][name].exists():
				return orNil(!flag, ErrTableExists)
			}
			m[tdb][name] = modelTable{id: resultID(res), cols: "a"}
			return nil
		}}
	case 3:
		return ddlOp{sql: fmt.Sprintf("DROP TABLE %s%s.%s", ifWord(flag, "IF EXISTS "), tdb, name), apply: func(m ddlModel, _ Result) error {
			switch {
			case m[tdb] == nil:
				return orNil(!flag, ErrDatabaseNotFound)
			case !m[tdb][name].exists():
				return orNil(!flag, ErrTableNotFound)
			}
			delete(m[tdb], name)
			return nil
		}}
	default:
		return ddlOp{sql: fmt.Sprintf("ALTER TABLE %s.%s ADD COLUMN %s INT", tdb, name, col), apply: func(m ddlModel, _ Result) error {
			switch {
			case m[tdb] == nil:
				return ErrDatabaseNotFound
			case !m[tdb][name].exists():
				return ErrTableNotFound
			}
			t := m[tdb][name]
			if slices.Contains(strings.Fields(t.cols), col) {
				return ErrColumnExists
			}
			t.cols += " " + col
			m[tdb][name] = t
			return nil
		}}
	}
}

func resultID(res Result) int64 {
	if res.Table == nil {
		return -1 // not created: the outcome will not match anyway
	}
	return res.Table.ID
}

func ifWord(on bool, w string) string {
	if on {
		return w
	}
	return ""
}

func orNil(on bool, err error) error {
	if on {
		return err
	}
	return nil
}

// outcomeMatches reports whether the actual error is of the expected kind.
func outcomeMatches(got, want error) bool {
	if want == nil {
		return got == nil
	}
	return errors.Is(got, want)
}

// render is a catalog's databases and tables, as the model renders them.
func (m ddlModel) render() string {
	var lines []string
	for db, ts := range m {
		lines = append(lines, "db "+db)
		for name, t := range ts {
			lines = append(lines, fmt.Sprintf("table %s.%s id=%d cols=%s", db, name, t.id, t.cols))
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

func renderCatalog(t *testing.T, c *Catalog) string {
	t.Helper()
	ctx := context.Background()
	dbs, err := c.Databases(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, db := range dbs {
		lines = append(lines, "db "+db)
	}
	all, err := c.AllTables(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, tbl := range all {
		if int(tbl.SchemaID)+1 != len(tbl.Columns) {
			t.Errorf("table %s: schema %d with %d columns", tbl.FullName(), tbl.SchemaID, len(tbl.Columns))
		}
		var cols []string
		for _, col := range tbl.Columns {
			cols = append(cols, col.Name)
		}
		lines = append(lines, fmt.Sprintf("table %s id=%d cols=%s", tbl.FullName(), tbl.ID, strings.Join(cols, " ")))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

func TestSharedModel(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 0))
	hs := sharedHandles(t, 2, func(int) Config { return Config{} })
	m := ddlModel{DefaultDatabase: {}}
	ctx := context.Background()
	run := func(c *Catalog, op ddlOp) (Result, error) {
		stmt, err := Parse(op.sql)
		if err != nil {
			t.Fatalf("Parse(%q): %v", op.sql, err)
		}
		return c.Exec(ctx, stmt)
	}
	var history []string
	for step := range 200 {
		if r.IntN(3) > 0 { // one statement on one handle
			op, h := randomOp(r), r.IntN(2)
			res, err := run(hs[h], op)
			history = append(history, fmt.Sprintf("%d: [%d] %s -> %v", step, h, op.sql, err))
			if want := op.apply(m, res); !outcomeMatches(err, want) {
				t.Fatalf("seed %d\n%s\nwant %v", seed, strings.Join(history, "\n"), want)
			}
		} else { // two at once, one on each handle
			ops := [2]ddlOp{randomOp(r), randomOp(r)}
			var res [2]Result
			var errs [2]error
			var wg sync.WaitGroup
			for i := range 2 {
				wg.Go(func() { res[i], errs[i] = run(hs[i], ops[i]) })
			}
			wg.Wait()
			history = append(history, fmt.Sprintf("%d: [0] %s -> %v || [1] %s -> %v", step, ops[0].sql, errs[0], ops[1].sql, errs[1]))
			refresh(t, hs[0])
			got := renderCatalog(t, hs[0])
			next, ok := serialOrder(m, ops, res, errs, got)
			if !ok {
				t.Fatalf("seed %d\n%s\nno serial order of the last two statements explains the outcome; catalog:\n%s", seed, strings.Join(history, "\n"), got)
			}
			m = next
		}
		want := m.render()
		for h, c := range hs {
			refresh(t, c)
			if got := renderCatalog(t, c); got != want {
				t.Fatalf("seed %d\n%s\nhandle %d shows\n%s\nwant\n%s", seed, strings.Join(history, "\n"), h, got, want)
			}
		}
	}
}

// serialOrder finds the order of two concurrent statements that explains
// their outcomes and the catalog they left (got), and returns the model
// after them.
func serialOrder(m ddlModel, ops [2]ddlOp, res [2]Result, errs [2]error, got string) (ddlModel, bool) {
	for _, order := range [][2]int{{0, 1}, {1, 0}} {
		next := m.clone()
		ok := true
		for _, i := range order {
			if !outcomeMatches(errs[i], ops[i].apply(next, res[i])) {
				ok = false
			}
		}
		if ok && next.render() == got {
			return next, true
		}
	}
	return nil, false
}
