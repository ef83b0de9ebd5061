package tiering

import (
	"strings"
	"testing"
)

// foldKey agrees with strings.EqualFold, which findColumn matches by,
// including the runes whose folding orbit has more than two members
// (k, K and the Kelvin sign; s, S and the long s) and invalid UTF-8.
func TestFoldKeyMatchesEqualFold(t *testing.T) {
	names := []string{"id", "ID", "Id", "k", "K", "\u212a", "s", "S", "\u017f", "straße", "STRASSE", "Straße",
		"σ", "Σ", "ς", "unit price", "Unit Price", "\xff", "\xfe", "", "ǅ", "ǆ", "Ǆ"}
	for _, a := range names {
		for _, b := range names {
			if got, want := foldKey(a) == foldKey(b), strings.EqualFold(a, b); got != want {
				t.Errorf("%q, %q: same key %v, EqualFold %v", a, b, got, want)
			}
		}
	}
}
