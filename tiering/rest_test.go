package tiering

import (
	"context"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	icecatalog "github.com/apache/iceberg-go/catalog"

	"github.com/lakestream/lakestream/catalog"
	"github.com/lakestream/lakestream/tables"
)

// A real Iceberg REST catalog: Apache Iceberg's own test server,
// org.apache.iceberg.rest.RESTCatalogServer (a Jetty servlet in front of a
// JdbcCatalog on SQLite), run as a child process. The server writes table
// metadata into a file:// warehouse and iceberg-go writes the data files
// into the same directory, so both must see it: here they share a
// temporary directory. The jars come from Maven Central through
// testdata/iceberg-rest/fetch.sh into <repo>/.cache/iceberg-rest/jars
// (git-ignored); the first fetch takes seconds to a minute, a cached start
// about one second.
//
// The stub-server test (TestStorageRESTConfig) remains: it checks the
// token and warehouse that OpenCatalog sends, which this server ignores.

// restCatalog is a running Iceberg REST catalog server.
type restCatalog struct {
	uri       string // http://127.0.0.1:<port>
	warehouse string // file:///…, shared with the server
	dir       string // the warehouse's path
}

// TestRESTCatalogRoundTrip creates, appends to and reads back a table
// through a real REST catalog, then tiers a Lakestream table through it.
func TestRESTCatalogRoundTrip(t *testing.T) {
	clearAWSEnv(t)
	rc := startRESTCatalog(t)
	cfg := StorageConfig{Catalog: rc.uri, Warehouse: rc.warehouse}

	t.Run("append and read back", func(t *testing.T) { restRoundTrip(t, rc, cfg) })
	t.Run("tiering round", func(t *testing.T) { restTieringRound(t, cfg) })
}

// restRoundTrip is storageRoundTrip for a server that lays tables out as
// <warehouse>/<namespace>/<table> (Iceberg's JdbcCatalog, without
// iceberg-go's ".db" suffix) and writes the metadata itself.
func restRoundTrip(t *testing.T, rc restCatalog, cfg StorageConfig) {
	cat := openStorage(t, context.Background(), cfg)
	if cat.CatalogType() != icecatalog.REST {
		t.Errorf("catalog type %s, want rest", cat.CatalogType())
	}
	closeCatalog(t, cat)
	tbl := storageRoundTrip(t, cfg, rc.warehouse+"/default/events")
	if n := len(tbl.Metadata().Snapshots()); n != 1 {
		t.Errorf("%d snapshots after one append, want 1", n)
	}
	// The server wrote the metadata and iceberg-go the data files, both
	// into the shared warehouse directory.
	tableDir := filepath.Join(rc.dir, "default", "events")
	for _, sub := range []string{"metadata/*.metadata.json", "data/*.parquet"} {
		if files := globTree(t, filepath.Join(tableDir, filepath.Dir(sub)), filepath.Base(sub)); len(files) == 0 {
			t.Errorf("no %s under %s", sub, tableDir)
		}
	}
}

// restTieringRound tiers 1000 rows through a Service whose lake is the REST
// catalog, and reads them back through a catalog opened from scratch.
func restTieringRound(t *testing.T, cfg StorageConfig) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ice := openStorage(t, ctx, cfg)
	t.Cleanup(func() { closeCatalog(t, ice) })
	e := newLakeEnvOn(t, Config{}, ice)
	e.exec(createBars)
	e.ingest("bars", 0, 1000)
	if res := e.round("bars"); res.Rows != 1000 {
		t.Fatalf("round tiered %d rows, want 1000", res.Rows)
	}
	if got := e.totals("bars$lake"); got != want(1000) {
		t.Fatalf("lake after round: %v, want %v", got, want(1000))
	}

	cat := openStorage(t, ctx, cfg)
	defer closeCatalog(t, cat)
	def := e.table("bars").Def()
	tbl, err := cat.LoadTable(ctx, identOf(def))
	if err != nil {
		t.Fatalf("load tiered table: %v", err)
	}
	at, err := tbl.Scan().ToArrowTable(ctx)
	if err != nil {
		t.Fatalf("scan tiered table: %v", err)
	}
	defer at.Release()
	if at.NumRows() != 1000 {
		t.Errorf("tiered table has %d rows through a fresh catalog, want 1000", at.NumRows())
	}
	if got := tbl.Properties()[tableIDKey]; got != fmt.Sprint(def.ID) {
		t.Errorf("table id property %q, want %d", got, def.ID)
	}
}

// newLakeEnvOn is newLakeEnv with the lake in ice instead of a SQLite
// catalog of its own.
func newLakeEnvOn(t *testing.T, cfg Config, ice icecatalog.Catalog) *lakeEnv {
	t.Helper()
	e := &lakeEnv{t: t, dir: t.TempDir(), cfg: cfg, ice: ice}
	ctx := context.Background()
	var err error
	if e.cat, err = catalog.Open(ctx, filepath.Join(e.dir, "catalog.db"), catalog.Config{DefaultBucketNum: 1}); err != nil {
		t.Fatal(err)
	}
	if e.store, err = tables.Open(ctx, e.cat, tables.Config{Dir: filepath.Join(e.dir, "tables")}); err != nil {
		t.Fatal(err)
	}
	e.startService()
	t.Cleanup(func() {
		e.store.Close()
		e.cat.Close()
	})
	return e
}

// startRESTCatalog starts Iceberg's REST catalog server on a free port
// with a warehouse in a temporary directory, fetching its jars first if
// they are not cached, and waits until it answers GET /v1/config. (Jetty
// listens on all interfaces: the fixture has no setting for the host; the
// test talks to it on 127.0.0.1.)
func startRESTCatalog(t *testing.T) restCatalog {
	t.Helper()
	java := requireCommand(t, "java", "install a JDK 17 (apt-get install openjdk-17-jre-headless)")
	jars := restCatalogJars(t)

	dir := t.TempDir()
	rc := restCatalog{dir: filepath.Join(dir, "warehouse")}
	rc.warehouse = "file://" + rc.dir
	if err := os.MkdirAll(rc.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	rc.uri = fmt.Sprintf("http://127.0.0.1:%d", port)

	cmd := exec.Command(java, "-Xshare:auto", "-XX:TieredStopAtLevel=1",
		"-cp", filepath.Join(jars, "*"), "org.apache.iceberg.rest.RESTCatalogServer")
	// The server turns every CATALOG_* variable into a catalog property
	// (CATALOG_REST_PORT is rest.port, CATALOG_WAREHOUSE is warehouse), so
	// the machine's own are left out. The backend is a SQLite file rather
	// than the default jdbc:sqlite::memory:, where each pooled connection
	// would see a database of its own.
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "CATALOG_") })
	cmd.Env = append(cmd.Env,
		fmt.Sprintf("CATALOG_REST_PORT=%d", port),
		"CATALOG_WAREHOUSE="+rc.warehouse,
		"CATALOG_URI=jdbc:sqlite:"+filepath.Join(dir, "catalog.db"),
	)
	srv := startServer(t, cmd, nil, syscall.SIGTERM)
	client := &http.Client{Timeout: time.Second}
	waitFor(t, 30*time.Second, "the Iceberg REST catalog at "+rc.uri, func() error {
		if err := srv.check(); err != nil {
			return err
		}
		resp, err := client.Get(rc.uri + "/v1/config")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET /v1/config: %s", resp.Status)
		}
		return nil
	})
	return rc
}

// restCatalogJars returns the directory of the server's jars, running
// fetch.sh first if it is missing.
func restCatalogJars(t *testing.T) string {
	t.Helper()
	dest := filepath.Join(repoRoot(t), ".cache", "iceberg-rest")
	jars := filepath.Join(dest, "jars")
	if _, err := os.Stat(jars); err == nil {
		return jars
	}
	requireCommand(t, "mvn", "install Maven (apt-get install maven) to fetch the Iceberg REST catalog's jars")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	start := time.Now()
	out, err := exec.CommandContext(ctx, "bash", filepath.Join("testdata", "iceberg-rest", "fetch.sh"), dest).CombinedOutput()
	if err != nil {
		t.Fatalf("fetch the Iceberg REST catalog's jars: %v\n%s", err, out)
	}
	t.Logf("fetched the Iceberg REST catalog's jars in %v", time.Since(start).Round(time.Millisecond))
	return jars
}

// requireCommand returns the path of the command name, and skips the test
// if there is none, unless CI=true, where it fails.
func requireCommand(t *testing.T, name, hint string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err == nil {
		return path
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is not on PATH and CI=true: %s", name, hint)
	}
	t.Skipf("%s is not on PATH: %s", name, hint)
	return ""
}

// globTree lists the files under dir whose names match pattern, in any
// subdirectory (data files sit in partition directories).
func globTree(t *testing.T, dir, pattern string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if ok, _ := filepath.Match(pattern, d.Name()); ok && !d.IsDir() {
			out = append(out, path)
		}
		return nil
	})
	if err != nil {
		t.Errorf("walk %s: %v", dir, err)
	}
	return out
}
