// Package archtest checks that imports between Lakestream's packages point
// one way (DESIGN §9): cmd → node → {flightsrv, planner, tables} →
// {columnarlog, catalog} → internal.
package archtest

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/lakestream/lakestream/"

// forbidden lists, for each package (prefix), the project packages it must
// not import.
var forbidden = map[string][]string{
	"internal/":   {"cmd/", "node", "flightsrv", "planner", "tables", "columnarlog", "catalog"},
	"columnarlog": {"cmd/", "node", "flightsrv", "planner", "tables", "catalog"},
	"catalog":     {"cmd/", "node", "flightsrv", "planner", "tables", "columnarlog", "internal/"},
	"tables":      {"cmd/", "node", "flightsrv", "planner"},
	"planner":     {"cmd/", "node", "flightsrv", "tables", "columnarlog"},
	"flightsrv":   {"cmd/", "node"},
	"node":        {"cmd/"},
}

func TestImportsPointOneWay(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, module+"...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(fields[0], module)
		for prefix, banned := range forbidden {
			if !strings.HasPrefix(pkg, prefix) || strings.HasPrefix(pkg, "internal/archtest") {
				continue
			}
			for _, imp := range fields[1:] {
				dep, ok := strings.CutPrefix(imp, module)
				if !ok {
					continue
				}
				for _, b := range banned {
					if strings.HasPrefix(dep, b) && !(prefix == "internal/" && strings.HasPrefix(dep, "internal/")) {
						t.Errorf("%s imports %s: against the package map", pkg, dep)
					}
				}
			}
		}
	}
}
