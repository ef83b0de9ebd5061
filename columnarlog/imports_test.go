package columnarlog

import (
	"go/build"
	"strings"
	"testing"
)

// The log imports only the standard library and the internal packages it is
// built on (doc.go): not SQL, Iceberg, the network or Arrow.
func TestImports(t *testing.T) {
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	allowed := map[string]bool{
		"github.com/lakestream/lakestream/internal/vfs":        true,
		"github.com/lakestream/lakestream/internal/invariants": true,
	}
	for _, imp := range pkg.Imports {
		std := !strings.Contains(strings.SplitN(imp, "/", 2)[0], ".")
		if !std && !allowed[imp] {
			t.Errorf("columnarlog imports %s: only the standard library, internal/vfs and internal/invariants", imp)
		}
	}
}
