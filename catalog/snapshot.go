package catalog

import (
	"maps"
	"slices"
	"sort"
	"strings"
)

// snapshot is an immutable view of the whole catalog. Changes copy it
// (copy-on-write); the maps are small, and DDL is rare next to lookups.
type snapshot struct {
	dbs    map[string]bool
	byID   map[int64]*Table
	byName map[TableName]*Table
	// broken are the tables whose stored definition did not load, by ID.
	broken map[int64]BrokenTable
	// views are the persistent views (views.go).
	views map[TableName]*View
}

func newSnapshot() *snapshot {
	return &snapshot{dbs: map[string]bool{}, byID: map[int64]*Table{}, byName: map[TableName]*Table{}, broken: map[int64]BrokenTable{}, views: map[TableName]*View{}}
}

func (s *snapshot) clone() *snapshot {
	return &snapshot{dbs: maps.Clone(s.dbs), byID: maps.Clone(s.byID), byName: maps.Clone(s.byName), broken: maps.Clone(s.broken), views: maps.Clone(s.views)}
}

// putBroken records that t's stored definition did not load, and why.
// Only for a snapshot not yet published.
func (s *snapshot) putBroken(t *Table, err error) {
	s.broken[t.ID] = BrokenTable{ID: t.ID, DB: t.DB, Name: t.Name, Err: err}
}

// brokenNamed finds a broken table by name as lookup finds tables:
// exactly, else the one that differs only in case.
func (s *snapshot) brokenNamed(db, name string) (BrokenTable, bool) {
	var match BrokenTable
	n := 0
	for _, b := range s.broken {
		if b.DB == db && b.Name == name {
			return b, true
		}
		if b.DB == db && strings.EqualFold(b.Name, name) {
			match, n = b, n+1
		}
	}
	return match, n == 1
}

// brokenOf returns the broken tables of db.
func (s *snapshot) brokenOf(db string) []BrokenTable {
	var out []BrokenTable
	for _, b := range s.broken {
		if b.DB == db {
			out = append(out, b)
		}
	}
	return out
}

// putTable adds or replaces t. Only for a snapshot not yet published.
func (s *snapshot) putTable(t *Table) {
	s.byID[t.ID] = t
	s.byName[TableName{DB: t.DB, Name: t.Name}] = t
}

// deleteTable removes t. Only for a snapshot not yet published.
func (s *snapshot) deleteTable(t *Table) {
	delete(s.byID, t.ID)
	delete(s.byName, TableName{DB: t.DB, Name: t.Name})
	delete(s.broken, t.ID)
}

// tablesOf returns the tables of db sorted by name.
func (s *snapshot) tablesOf(db string) []*Table {
	var out []*Table
	for _, t := range s.byID {
		if t.DB == db {
			out = append(out, t)
		}
	}
	sortTables(out)
	return out
}

func (s *snapshot) allTables() []*Table {
	out := slices.Collect(maps.Values(s.byID))
	sortTables(out)
	return out
}

func sortTables(ts []*Table) {
	sort.Slice(ts, func(i, j int) bool {
		if c := strings.Compare(ts[i].DB, ts[j].DB); c != 0 {
			return c < 0
		}
		return ts[i].Name < ts[j].Name
	})
}
