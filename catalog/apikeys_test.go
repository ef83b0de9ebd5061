package catalog

import (
	"reflect"
	"testing"
)

func TestParseAPIKeys(t *testing.T) {
	for sql, want := range map[string]Statement{
		"CREATE API KEY etl":           &CreateAPIKey{Name: "etl"},
		"create api key etl for alice": &CreateAPIKey{Name: "etl", User: "alice"},
		`CREATE API KEY "ETL" FOR USER alice VALID UNTIL '2027-01-31'`: &CreateAPIKey{Name: "ETL", User: "alice", ValidUntil: "2027-01-31"},
		"DROP API KEY etl;":          &DropAPIKey{Name: "etl"},
		"DROP API KEY IF EXISTS etl": &DropAPIKey{Name: "etl", IfExists: true},
	} {
		got, err := Parse(sql)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("Parse(%q) = %#v, %v; want %#v", sql, got, err, want)
		}
	}
	for _, sql := range []string{"CREATE API KEY", "CREATE API KEY k VALID UNTIL 2027", "CREATE API KEY k FOR", "DROP API etl", "CREATE API KEY k EXTRA"} {
		if _, err := Parse(sql); err == nil {
			t.Errorf("Parse(%q): no error", sql)
		}
	}
}
