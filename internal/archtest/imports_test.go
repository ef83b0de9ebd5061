// Package archtest checks that imports between Lakestream's packages point
// one way. The package graph is the architecture, and this file is where
// it is written down: a package imports only packages on rows below its
// own, never one on its row or above.
//
//	cmd/lakestream
//	bench                   (only through node: onlyImports)
//	node
//	flightsrv   tiering
//	auth        planner     tables
//	audit
//	columnarlog catalog     (catalog: no project package)
//	cluster/meta            (only internal/…)
//	internal/…
//
// Every package has a rule below: forbidden lists what it must not
// import, onlyImports what alone it may import, with the reason for each.
// README.md's layout table says what each package owns.
package archtest

import (
	"os/exec"
	"slices"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/lakestream/lakestream/"

// forbidden lists, for each package (prefix), the project packages it must
// not import.
var forbidden = map[string][]string{
	"internal/":   {"cmd/", "bench", "node", "flightsrv", "planner", "tiering", "tables", "columnarlog", "catalog", "membership", "cluster/"},
	"columnarlog": {"cmd/", "bench", "node", "flightsrv", "planner", "tiering", "tables", "catalog"},
	"catalog":     {"cmd/", "bench", "node", "flightsrv", "planner", "tiering", "tables", "columnarlog", "internal/"},
	// tables is below the lake: tiering plugs into tables, never the
	// other way round.
	"tables":    {"cmd/", "bench", "node", "flightsrv", "planner", "tiering"},
	"planner":   {"cmd/", "bench", "node", "flightsrv", "tiering", "tables", "columnarlog"},
	"flightsrv": {"cmd/", "bench", "node", "tiering"},
	// tiering serves the lake to the engine and to flightsrv through
	// internal/scan, and node wires it: it knows neither.
	"tiering": {"cmd/", "bench", "node", "flightsrv", "planner"},
	"node":    {"cmd/", "bench"},
	// The cluster's data plane replicates logs and decides leadership: it
	// knows nothing of SQL, tables or the lake (docs/cluster.md).
	"cluster": {"cmd/", "bench", "node", "flightsrv", "planner", "tiering", "tables", "catalog"},
	// The metadata store holds the cluster's decisions and knows nothing
	// of what they are about: it may import internal/… (and its database
	// drivers), no package of the project above it.
	"cluster/meta": {"cmd/", "bench", "node", "flightsrv", "planner", "tiering", "tables", "columnarlog", "catalog", "membership", "cluster/"},
}

// onlyImports lists, for each package (prefix), the only project packages
// it may import, each with the reason it may.
var onlyImports = map[string]map[string]string{
	// The key index is a storage engine's wrapper: it knows nothing of
	// logs, tables or SQL.
	"tables/keyindex": {},
	// Gossip carries liveness and addresses, never decisions: membership
	// knows nothing of tables, logs or the lake.
	"membership": {},
	// The merge engines are pure functions over encoded rows.
	"tables/merge": {
		"internal/rowenc": "the rows it merges are rowenc values",
	},
	// auth decides who a call is; it knows nothing of tables, SQL
	// execution or the network beyond TLS files and header values.
	"auth": {
		"catalog": "users and their password hashes are stored in the catalog; the user DDL is parsed there",
		"audit":   "logins and failed logins are recorded in the audit log",
	},
	// The Iceberg REST catalog serves the lake's metadata, which the node
	// hands it through an interface: it knows nothing of tiering, tables
	// or SQL.
	"icebergrest": {
		"auth":    "every request is authorized as Flight SQL calls are (auth.Authorize)",
		"catalog": "the namespaces and tables listed are the catalog's",
	},
	// The audit log is a file and a ring of events: it knows nothing of
	// who records them (auth, flightsrv) or of the table node serves them as.
	"audit": {},
	// bench measures nodes that node.Start starts; it must not wire a
	// node's parts (catalog, columnarlog, tables, flightsrv, planner) itself,
	// or its copy of the wiring goes stale when node's changes.
	"bench": {
		"node":              "starts every node it measures, and reaches the node's parts through its accessors",
		"tiering":           "the type of node.Config.LakeMaintenance, the lake workloads' maintenance policy",
		"internal/scan":     "the request of the union plan the tiering workload times (Node.Resolver)",
		"internal/arrowmsg": "the ceiling encodes its batches exactly as the log stores them",
		"internal/pgtest":   "starts the PostgreSQL baseline's server",
		"internal/proc":     "starts and stops the Kafka and Fluss baselines' servers",
	},
	// Starting and stopping a helper server (PostgreSQL for tests, the
	// bench's baselines) knows nothing of Lakestream.
	"internal/proc": {},
}

// unruled are the package prefixes that need no rule: nothing imports
// them (cmd/, the test harnesses under tests/) or they are this test.
var unruled = []string{"cmd/", "tests/", "internal/archtest"}

func TestImportsPointOneWay(t *testing.T) {
	for pkg, deps := range projectImports(t) {
		if hasAnyPrefix(pkg, "internal/archtest") {
			continue
		}
		ruled := hasAnyPrefix(pkg, unruled...)
		for prefix, banned := range forbidden {
			if !strings.HasPrefix(pkg, prefix) {
				continue
			}
			ruled = true
			for _, dep := range deps {
				for _, b := range banned {
					if strings.HasPrefix(dep, b) && !(prefix == "internal/" && strings.HasPrefix(dep, "internal/")) {
						t.Errorf("%s imports %s: against the package map (%s must not import %s)", pkg, dep, prefix, b)
					}
				}
			}
		}
		for prefix, allowed := range onlyImports {
			if !strings.HasPrefix(pkg, prefix) {
				continue
			}
			ruled = true
			for _, dep := range deps {
				if _, ok := allowed[dep]; !ok {
					t.Errorf("%s imports %s: against the package map (%s may import only %s; a new one needs its reason in onlyImports)",
						pkg, dep, prefix, strings.Join(sortedKeys(allowed), ", "))
				}
			}
		}
		if !ruled {
			t.Errorf("%s has no rule in internal/archtest: add what it must not import (forbidden) or what alone it may (onlyImports)", pkg)
		}
	}
}

// projectImports maps each project package to the project packages it
// imports (not counting its tests), both relative to the module.
func projectImports(t *testing.T) map[string][]string {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, module+"...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	pkgs := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(fields[0], module)
		pkgs[pkg] = []string{}
		for _, imp := range fields[1:] {
			if dep, ok := strings.CutPrefix(imp, module); ok {
				pkgs[pkg] = append(pkgs[pkg], dep)
			}
		}
	}
	return pkgs
}

func hasAnyPrefix(s string, prefixes ...string) bool {
	return slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(s, p) })
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
