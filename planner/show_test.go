package planner

import (
	"errors"
	"fmt"
	"testing"
)

func TestClassifyShow(t *testing.T) {
	tests := map[string]string{
		"SHOW DATABASES":                           "{What:0 DB: Name: Query:}",
		"show schemas;":                            "{What:0 DB: Name: Query:}",
		"SHOW TABLES":                              "{What:1 DB: Name: Query:}",
		"SHOW TABLES FROM Sales":                   "{What:1 DB:sales Name: Query:}",
		`SHOW TABLES IN "Sales"`:                   "{What:1 DB:Sales Name: Query:}",
		"DESCRIBE t":                               "{What:2 DB: Name:t Query:}",
		"DESC TABLE default.values":                "{What:2 DB:default Name:values Query:}",
		"SHOW \"Events\"":                          "{What:2 DB: Name:Events Query:}",
		"SHOW COLUMNS FROM db.t":                   "{What:2 DB:db Name:t Query:}",
		"DESCRIBE SELECT 1 AS a;":                  "{What:3 DB: Name: Query:SELECT 1 AS a}",
		"describe (SELECT 1) UNION ALL (SELECT 2)": "{What:3 DB: Name: Query:(SELECT 1) UNION ALL (SELECT 2)}",
		"SHOW CREATE TABLE t":                      "{What:4 DB: Name:t Query:}",
		"SHOW CREATE VIEW s.v":                     "{What:5 DB:s Name:v Query:}",
		"SHOW GRANTS":                              "{What:6 DB: Name: Query:}",
		`show grants for "Alice";`:                 "{What:6 DB: Name:Alice Query:}",
	}
	for sql, want := range tests {
		st, err := Classify(sql)
		if err != nil || st.Kind != KindShow {
			t.Errorf("Classify(%q) = %v, %v; want a show", sql, st, err)
			continue
		}
		if got := fmt.Sprintf("%+v", *st.Show); got != want {
			t.Errorf("Classify(%q).Show = %s, want %s", sql, got, want)
		}
	}
	for sql, want := range map[string]string{
		"SHOW":                "invalid statement: syntax error at position 4: expected DATABASES, TABLES, GRANTS, CREATE TABLE, CREATE VIEW or a table name after SHOW",
		"SHOW GRANTS FOR":     "invalid statement: syntax error at position 15: expected a user or role name after SHOW GRANTS FOR",
		"SHOW TABLES FROM":    "invalid statement: syntax error at position 16: expected a database name after SHOW TABLES FROM",
		"SHOW CREATE INDEX i": "invalid statement: syntax error at position 12: expected TABLE or VIEW after SHOW CREATE",
		"DESCRIBE t u":        `invalid statement: syntax error at position 11: unexpected "u"`,
	} {
		_, err := Classify(sql)
		if !errors.Is(err, ErrInvalid) || err.Error() != want {
			t.Errorf("Classify(%q): %v, want %q", sql, err, want)
		}
	}
}
