package tiering

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
)

// The round trip every catalog and warehouse must pass: create a namespace
// and a table, append rows in a transaction, then read them back through a
// catalog opened from scratch, and check that the files landed under the
// warehouse.

type storageRow struct {
	id   int64
	name string
}

var storageRows = []storageRow{{1, "ada"}, {2, "grace"}, {3, "barbara"}, {42, ""}}

// storageRoundTrip creates a table in the catalog of cfg, appends rows,
// reopens the catalog and reads them back; the table must be at wantLoc
// (iceberg-go's own layout, <warehouse>/<namespace>.db/<table>, when "").
// It returns the table as loaded after the reopen.
func storageRoundTrip(t *testing.T, cfg StorageConfig, wantLoc string) *table.Table {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ident := catalog.ToIdentifier("default", "events")

	cat := openStorage(t, ctx, cfg)
	if err := cat.CreateNamespace(ctx, catalog.ToIdentifier("default"), nil); err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	sc := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "name", Type: iceberg.PrimitiveTypes.String},
	)
	tbl, err := cat.CreateTable(ctx, ident, sc)
	if err != nil {
		t.Fatalf("create table: %v", err)
	}
	if wantLoc == "" {
		wantLoc = strings.TrimSuffix(cfg.Warehouse, "/") + "/default.db/events"
	}
	if tbl.Location() != wantLoc {
		t.Errorf("table location %q, want %q", tbl.Location(), wantLoc)
	}

	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rdr := storageReader(t, mem, storageRows)
	defer rdr.Release()
	tx := tbl.NewTransaction()
	if err := tx.Append(ctx, rdr, nil); err != nil {
		t.Fatalf("append: %v", err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatalf("commit: %v", err)
	}
	closeCatalog(t, cat)

	cat = openStorage(t, ctx, cfg)
	defer closeCatalog(t, cat)
	tbl, err = cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatalf("load table after reopen: %v", err)
	}
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatalf("plan files: %v", err)
	}
	if len(tasks) == 0 {
		t.Fatal("no data files after the append")
	}
	for _, task := range tasks {
		if p := task.File.FilePath(); !strings.HasPrefix(p, wantLoc+"/data/") {
			t.Errorf("data file %q is not under %q", p, wantLoc+"/data/")
		}
	}
	at, err := tbl.Scan().ToArrowTable(ctx)
	if err != nil {
		t.Fatalf("scan: %v", err)
	}
	defer at.Release()
	got := storageTableRows(t, at)
	if !slices.Equal(got, storageRows) {
		t.Errorf("read back %v, want %v", got, storageRows)
	}
	return tbl
}

func openStorage(t *testing.T, ctx context.Context, cfg StorageConfig) catalog.Catalog {
	t.Helper()
	cat, err := OpenCatalog(ctx, cfg)
	if err != nil {
		t.Fatalf("open catalog: %v", err)
	}
	return cat
}

func closeCatalog(t *testing.T, cat catalog.Catalog) {
	t.Helper()
	c, ok := cat.(catalog.Closer)
	if !ok {
		t.Fatalf("%T does not implement catalog.Closer", cat)
	}
	if err := c.Close(); err != nil {
		t.Errorf("close catalog: %v", err)
	}
}

func storageReader(t *testing.T, mem memory.Allocator, rows []storageRow) array.RecordReader {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for _, r := range rows {
		b.Field(0).(*array.Int64Builder).Append(r.id)
		b.Field(1).(*array.StringBuilder).Append(r.name)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	rdr, err := array.NewRecordReader(schema, []arrow.RecordBatch{rec})
	if err != nil {
		t.Fatal(err)
	}
	return rdr
}

// storageTableRows reads (id, name) rows out of at, sorted by id.
func storageTableRows(t *testing.T, at arrow.Table) []storageRow {
	t.Helper()
	var out []storageRow
	tr := array.NewTableReader(at, 0)
	defer tr.Release()
	for tr.Next() {
		rec := tr.RecordBatch()
		ids, ok1 := rec.Column(0).(*array.Int64)
		names, ok2 := rec.Column(1).(*array.String)
		if !ok1 || !ok2 {
			t.Fatalf("scan schema %v, want (int64, string)", rec.Schema())
		}
		for i := range int(rec.NumRows()) {
			out = append(out, storageRow{ids.Value(i), names.Value(i)})
		}
	}
	slices.SortFunc(out, func(a, b storageRow) int { return int(a.id - b.id) })
	return out
}

func TestStorageSQLiteFileWarehouse(t *testing.T) {
	dir := t.TempDir()
	cfg := StorageConfig{
		Catalog:   "sqlite://" + filepath.Join(dir, "meta", "iceberg.db"),
		Warehouse: "file://" + filepath.Join(dir, "warehouse"),
	}
	storageRoundTrip(t, cfg, "")

	// Another process (pyiceberg) must be able to read the catalog while
	// we hold it open: WAL, no exclusive lock.
	cat := openStorage(t, context.Background(), cfg)
	defer closeCatalog(t, cat)
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "meta", "iceberg.db")+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := db.Close(); err != nil {
			t.Error(err)
		}
	}()
	var mode string
	if err := db.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("journal_mode %q (%v), want wal", mode, err)
	}
	var n int
	err = db.QueryRow(`SELECT count(*) FROM iceberg_tables
		WHERE catalog_name = ? AND table_namespace = 'default' AND table_name = 'events'`, DefaultCatalogName).Scan(&n)
	if err != nil || n != 1 {
		t.Errorf("second reader sees %d rows for default.events (%v), want 1", n, err)
	}
}

func TestStorageSQLiteRelativePath(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	cfg := StorageConfig{Catalog: "sqlite://sub/cat.db", Warehouse: "file://" + filepath.Join(dir, "wh")}
	cat := openStorage(t, context.Background(), cfg)
	closeCatalog(t, cat)
	if _, err := os.Stat(filepath.Join(dir, "sub", "cat.db")); err != nil {
		t.Errorf("relative sqlite path: %v", err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "wh")); err != nil || !fi.IsDir() {
		t.Errorf("file:// warehouse directory not created: %v", err)
	}
}

// ---- S3 (moto) ----

func TestStorageS3Moto(t *testing.T) {
	moto := filepath.Join(repoRoot(t), ".venv", "bin", "moto_server")
	requireTool(t, moto, "run `make venv` to install moto into .venv")
	clearAWSEnv(t)

	port := freePort(t)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	srv := startServer(t, exec.Command(moto, "-H", "127.0.0.1", "-p", strconv.Itoa(port)), nil, syscall.SIGTERM)
	endpoint := "http://" + addr
	waitFor(t, 30*time.Second, "moto on "+addr, func() error {
		if err := srv.check(); err != nil {
			return err
		}
		rsp, err := http.Get(endpoint + "/")
		if err == nil {
			rsp.Body.Close()
		}
		return err
	})
	req, err := http.NewRequest(http.MethodPut, endpoint+"/lake", nil)
	if err != nil {
		t.Fatal(err)
	}
	rsp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("create bucket: %v", err)
	}
	rsp.Body.Close()
	if rsp.StatusCode != http.StatusOK {
		t.Fatalf("create bucket: %s", rsp.Status)
	}

	// The endpoint is an IP address, so the SDK would fall back to path
	// style even without PathStyle: TestStorageS3Properties pins that
	// flag. A hostname would make virtual-hosted style resolve
	// lake.<host> through DNS, which a test must not do.
	cfg := StorageConfig{
		Catalog:   "sqlite://" + filepath.Join(t.TempDir(), "iceberg.db"),
		Warehouse: "s3://lake/wh",
		S3: S3Config{
			Endpoint:        endpoint,
			Region:          "us-east-1",
			AccessKeyID:     "moto-key",
			SecretAccessKey: "moto-secret",
			PathStyle:       true,
		},
	}
	storageRoundTrip(t, cfg, "")

	// The objects really are in the bucket, as path-style keys under wh/.
	rsp, err = http.Get(endpoint + "/lake?list-type=2&prefix=wh/default.db/events/")
	if err != nil {
		t.Fatal(err)
	}
	defer rsp.Body.Close()
	var body bytes.Buffer
	if _, err := body.ReadFrom(rsp.Body); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"wh/default.db/events/metadata/", "wh/default.db/events/data/"} {
		if !strings.Contains(body.String(), want) {
			t.Errorf("bucket listing lacks %s:\n%s", want, body.String())
		}
	}
}

// ---- PostgreSQL ----

func TestStoragePostgres(t *testing.T) {
	bin := postgresBinDir()
	requireTool(t, filepath.Join(bin, "initdb"), "install PostgreSQL (apt-get install postgresql)")
	uri := startPostgres(t, bin)
	storageRoundTrip(t, StorageConfig{
		Catalog:   uri,
		Warehouse: "file://" + filepath.Join(t.TempDir(), "warehouse"),
	}, "")
}

// postgresBinDir is where initdb and postgres are: on PATH, else
// Debian's /usr/lib/postgresql/<version>/bin.
func postgresBinDir() string {
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p)
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.Sort(dirs)
	if len(dirs) > 0 {
		return dirs[len(dirs)-1]
	}
	return "/usr/local/bin"
}

// startPostgres runs a throwaway server on a free loopback port with trust
// auth and returns its URI. PostgreSQL refuses to run as root, so under
// root both initdb and the server run as the user nobody (the process
// credential set through SysProcAttr, no runuser or sudo needed) in a
// directory handed to that user.
func startPostgres(t *testing.T, bin string) string {
	t.Helper()
	base, err := os.MkdirTemp("", "lakestream-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	data, sock := filepath.Join(base, "data"), filepath.Join(base, "sock")
	cred := postgresCredential(t)
	for _, d := range []string{data, sock} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if cred != nil {
			if err := os.Chown(d, int(cred.Uid), int(cred.Gid)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := os.Chmod(base, 0o755); err != nil { // nobody must reach data/
		t.Fatal(err)
	}
	env := []string{"LC_ALL=C", "LANG=C", "PATH=" + bin + ":/usr/bin:/bin", "HOME=" + base}

	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres",
		"--auth=trust", "--encoding=UTF8", "--no-sync", "--no-instructions")
	initdb.Env, initdb.SysProcAttr = env, &syscall.SysProcAttr{Credential: cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}

	port := freePort(t)
	srv := exec.Command(filepath.Join(bin, "postgres"), "-D", data,
		"-h", "127.0.0.1", "-p", strconv.Itoa(port), "-k", sock,
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
		"-c", "shared_buffers=16MB", "-c", "max_connections=20")
	srv.Env = env
	// SIGINT is PostgreSQL's fast shutdown: it does not wait for the
	// clients of a test that failed before closing its catalog.
	pg := startServer(t, srv, cred, syscall.SIGINT)

	// With a password in the URI: trust auth ignores it, and the tests
	// can check that it is never echoed.
	uri := fmt.Sprintf("postgres://postgres:pg-secret-pw@127.0.0.1:%d/postgres?sslmode=disable", port)
	waitFor(t, 30*time.Second, "postgres on port "+strconv.Itoa(port), func() error {
		if err := pg.check(); err != nil {
			return err
		}
		db, err := sql.Open("pgx", uri)
		if err != nil {
			return err
		}
		defer db.Close()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		return db.PingContext(ctx)
	})
	return uri
}

// postgresCredential is the user to run PostgreSQL as: nobody when we are
// root, else ourselves (nil).
func postgresCredential(t *testing.T) *syscall.Credential {
	if os.Geteuid() != 0 {
		return nil
	}
	u, err := user.Lookup("nobody")
	if err != nil {
		t.Fatalf("running as root and no user nobody to run postgres as: %v", err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		t.Fatalf("user nobody: uid %q gid %q", u.Uid, u.Gid)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
}

// ---- configuration ----

func TestStorageValidate(t *testing.T) {
	clearAWSEnv(t)
	const pw = "hunter2-pw"
	for _, tc := range []struct {
		name string
		cfg  StorageConfig
		want []string // substrings of the error; none means valid
	}{
		{"sqlite file", StorageConfig{Catalog: "sqlite:///var/lib/ls/iceberg.db", Warehouse: "file:///var/lib/ls/wh"}, nil},
		{"sqlite relative", StorageConfig{Catalog: "sqlite://data/iceberg.db", Warehouse: "file:///wh"}, nil},
		{"postgres", StorageConfig{Catalog: "postgresql://u:" + pw + "@db:5432/ice?sslmode=disable", Warehouse: "s3://lake/wh", S3: S3Config{Region: "eu-west-1"}}, nil},
		{"rest without warehouse", StorageConfig{Catalog: "https://rest.example/api/catalog"}, nil},
		{"rest with warehouse name", StorageConfig{Catalog: "http://127.0.0.1:8181", Warehouse: "prod"}, nil},
		{"upper-case scheme", StorageConfig{Catalog: "SQLite:///c.db", Warehouse: "file:///wh"}, nil},
		{"s3 compatible store needs no region", StorageConfig{Catalog: "sqlite://c.db", Warehouse: "s3://lake", S3: S3Config{Endpoint: "http://127.0.0.1:9000"}}, nil},

		{"empty", StorageConfig{}, []string{"catalog: empty", "warehouse: empty"}},
		{"ftp", StorageConfig{Catalog: "ftp://files.example/x", Warehouse: "file:///wh"}, []string{"catalog ftp://files.example/x", `unsupported scheme "ftp"`}},
		{"not a uri", StorageConfig{Catalog: "/var/lib/iceberg.db", Warehouse: "file:///wh"}, []string{"catalog /var/lib/iceberg.db: not a URI"}},
		{"empty sqlite path", StorageConfig{Catalog: "sqlite://", Warehouse: "file:///wh"}, []string{"catalog sqlite://: no file path"}},
		{"sqlite query", StorageConfig{Catalog: "sqlite:///c.db?mode=ro", Warehouse: "file:///wh"}, []string{"catalog sqlite:///c.db?mode=ro", "plain file path"}},
		{"postgres without host", StorageConfig{Catalog: "postgres://u:" + pw + "@/db", Warehouse: "file:///wh"}, []string{"catalog postgres://u:xxxxx@/db: no host"}},
		{"postgres bad port", StorageConfig{Catalog: "postgres://u:" + pw + "@db:port/x", Warehouse: "file:///wh"}, []string{"catalog postgres://(unparsable)", "invalid port"}},
		{"postgres password in query", StorageConfig{Catalog: "postgres://db/x?password=" + pw, Warehouse: "ftp://x"}, []string{"warehouse ftp://x"}},
		{"rest without host", StorageConfig{Catalog: "http:///v1"}, []string{"catalog http:///v1: no host"}},
		{"sql catalog needs a warehouse", StorageConfig{Catalog: "sqlite://c.db"}, []string{"warehouse: empty"}},
		{"relative file warehouse", StorageConfig{Catalog: "sqlite://c.db", Warehouse: "file://wh/dir"}, []string{"warehouse file://wh/dir: want an absolute path"}},
		{"gcs warehouse", StorageConfig{Catalog: "sqlite://c.db", Warehouse: "gs://b/wh"}, []string{`warehouse gs://b/wh: unsupported scheme "gs"`}},
		{"bad bucket", StorageConfig{Catalog: "sqlite://c.db", Warehouse: "s3://Bad_Bucket/wh", S3: S3Config{Region: "us-east-1"}}, []string{`"Bad_Bucket" is not an S3 bucket name`}},
		{"s3 on AWS without region", StorageConfig{Catalog: "sqlite://c.db", Warehouse: "s3://lake/wh"}, []string{"s3.region: required"}},
		{"bad endpoint", StorageConfig{Catalog: "sqlite://c.db", Warehouse: "s3://lake/wh", S3: S3Config{Endpoint: "127.0.0.1:9000"}}, []string{"s3.endpoint 127.0.0.1:9000: want http(s)://host[:port]"}},
		{"half credentials", StorageConfig{Catalog: "sqlite://c.db", Warehouse: "s3://lake/wh", S3: S3Config{Region: "us-east-1", SecretAccessKey: pw}}, []string{"s3.access-key-id, s3.secret-access-key: set both or neither"}},
		{"every problem at once", StorageConfig{Catalog: "ftp://x", Warehouse: "s3://lake", S3: S3Config{AccessKeyID: "k"}}, []string{"catalog ftp://x", "s3.region", "s3.access-key-id"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want an error with %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate() = %q, want it to contain %q", err, w)
				}
			}
			if strings.Contains(err.Error(), pw) {
				t.Errorf("Validate() = %q echoes the secret", err)
			}
		})
	}
}

func TestStorageValidateRegionFromEnv(t *testing.T) {
	clearAWSEnv(t)
	cfg := StorageConfig{Catalog: "sqlite://c.db", Warehouse: "s3://lake/wh"}
	if cfg.Validate() == nil {
		t.Fatal("no region anywhere: want an error")
	}
	t.Setenv("AWS_DEFAULT_REGION", "eu-central-1")
	if err := cfg.Validate(); err != nil {
		t.Fatalf("AWS_DEFAULT_REGION set: %v", err)
	}
}

func TestStorageS3Properties(t *testing.T) {
	clearAWSEnv(t)
	t.Setenv("AWS_ACCESS_KEY_ID", "env-key")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "env-secret")
	t.Setenv("AWS_SESSION_TOKEN", "env-token")
	t.Setenv("AWS_REGION", "eu-west-3")

	base := StorageConfig{Catalog: "sqlite://c.db", Warehouse: "s3://lake/wh"}
	got := base.resolve(os.Getenv).properties()
	want := iceberg.Properties{
		"warehouse":                        "s3://lake/wh",
		icebergio.S3Region:                 "eu-west-3",
		icebergio.S3AccessKeyID:            "env-key",
		icebergio.S3SecretAccessKey:        "env-secret",
		icebergio.S3SessionToken:           "env-token",
		icebergio.S3ForceVirtualAddressing: "true",
	}
	if !mapsEqual(got, want) {
		t.Errorf("from the environment:\n got %v\nwant %v", got, want)
	}

	// The config's own credentials win, and the environment's session
	// token does not ride along with them.
	cfg := base
	cfg.S3 = S3Config{Endpoint: "http://127.0.0.1:9000", AccessKeyID: "k", SecretAccessKey: "s", PathStyle: true}
	cfg.Properties = map[string]string{"s3.connect-timeout": "5s"}
	got = cfg.resolve(os.Getenv).properties()
	want = iceberg.Properties{
		"warehouse":                        "s3://lake/wh",
		icebergio.S3EndpointURL:            "http://127.0.0.1:9000",
		icebergio.S3Region:                 "eu-west-3",
		icebergio.S3AccessKeyID:            "k",
		icebergio.S3SecretAccessKey:        "s",
		icebergio.S3ForceVirtualAddressing: "false",
		icebergio.S3ConnectTimeout:         "5s",
	}
	if !mapsEqual(got, want) {
		t.Errorf("from the config:\n got %v\nwant %v", got, want)
	}

	// No region anywhere, but an endpoint: us-east-1.
	t.Setenv("AWS_REGION", "")
	if r := cfg.resolve(os.Getenv).S3.Region; r != "us-east-1" {
		t.Errorf("region with an endpoint and no region set: %q, want us-east-1", r)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestStorageSecretsNotEchoed(t *testing.T) {
	clearAWSEnv(t)
	const pw = "pg-pass-xyzzy"
	port := freePort(t) // nothing listens there
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := OpenCatalog(ctx, StorageConfig{
		Catalog:   fmt.Sprintf("postgres://lake:%s@127.0.0.1:%d/ice?sslmode=disable&connect_timeout=5", pw, port),
		Warehouse: "file://" + t.TempDir(),
	})
	if err == nil {
		t.Fatal("open against a closed port: want an error")
	}
	if strings.Contains(err.Error(), pw) {
		t.Errorf("error echoes the password: %v", err)
	}
	if !strings.Contains(err.Error(), "postgres://lake:xxxxx@127.0.0.1") {
		t.Errorf("error %q does not name the (redacted) catalog", err)
	}

	// The net under drivers that do echo: the secret goes, the chain stays.
	cause := errors.New("dial postgres://lake:" + pw + "@db: refused; s3 key s3cr3t; token a%2Fb")
	red := redact(fmt.Errorf("open: %w", cause), []string{pw, "s3cr3t", "a/b", ""})
	if strings.Contains(red.Error(), pw) || strings.Contains(red.Error(), "s3cr3t") || strings.Contains(red.Error(), "a%2Fb") {
		t.Errorf("redact kept a secret: %v", red)
	}
	if !errors.Is(red, cause) {
		t.Error("redact broke the error chain")
	}
}

// ---- REST ----

// No Iceberg REST catalog server can be had here (pyiceberg ships only the
// client; the reference server is a Java test fixture not published as a
// runnable artifact), so this checks against a stub /v1/config endpoint
// that OpenCatalog sends what the REST protocol wants: the token as a
// bearer header and the warehouse as a query parameter; and that a
// rejected token is not echoed.
func TestStorageRESTConfig(t *testing.T) {
	clearAWSEnv(t)
	const token = "rest-token-s3kr1t"
	type seen struct{ auth, warehouse, path string }
	got := make(chan seen, 8)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- seen{r.Header.Get("Authorization"), r.URL.Query().Get("warehouse"), r.URL.Path}
		if r.Header.Get("Authorization") != "Bearer "+token {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprintf(w, `{"error":{"message":"bad token %s","type":"NotAuthorizedException","code":401}}`,
				strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"defaults":{},"overrides":{}}`)
	}))
	defer srv.Close()

	ctx := context.Background()
	cfg := StorageConfig{
		Catalog:    srv.URL + "/api/catalog",
		Warehouse:  "s3://lake/wh",
		S3:         S3Config{Endpoint: "http://127.0.0.1:9000", PathStyle: true},
		Properties: map[string]string{"token": token},
	}
	cat, err := OpenCatalog(ctx, cfg)
	if err != nil {
		t.Fatalf("open REST catalog: %v", err)
	}
	closeCatalog(t, cat)
	if cat.CatalogType() != catalog.REST {
		t.Errorf("catalog type %s, want rest", cat.CatalogType())
	}
	s := <-got
	if s.path != "/api/catalog/v1/config" || s.auth != "Bearer "+token || s.warehouse != "s3://lake/wh" {
		t.Errorf("GET %s with Authorization %q, warehouse %q; want /api/catalog/v1/config, Bearer <token>, s3://lake/wh", s.path, s.auth, s.warehouse)
	}

	cfg.Properties = map[string]string{"token": "wrong-" + token}
	_, err = OpenCatalog(ctx, cfg)
	if err == nil {
		t.Fatal("open with a rejected token: want an error")
	}
	if strings.Contains(err.Error(), token) {
		t.Errorf("error echoes the token: %v", err)
	}
}

// ---- helpers: servers as child processes ----

// repoRoot is the directory holding go.mod, above the package directory.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}

// requireTool skips the test when path is missing, unless CI=true: CI must
// run every test, so there it fails.
func requireTool(t *testing.T, path, hint string) {
	t.Helper()
	if _, err := os.Stat(path); err == nil {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is missing and CI=true: %s", path, hint)
	}
	t.Skipf("%s is missing: %s", path, hint)
}

// clearAWSEnv hides the machine's AWS settings from a test.
func clearAWSEnv(t *testing.T) {
	for _, k := range []string{"AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
		"AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_S3_ENDPOINT", "AWS_PROFILE"} {
		t.Setenv(k, "")
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// server is a child process that a test started.
type server struct {
	name   string
	out    syncBuffer // stdout and stderr
	exited chan struct{}
	err    error // Wait's result, set before exited closes
}

// errExited says that a server died while a test waited for it.
var errExited = errors.New("server exited")

// check returns an error wrapping errExited, with the server's output, if
// the server is gone.
func (s *server) check() error {
	select {
	case <-s.exited:
		return fmt.Errorf("%w: %s: %v\n%s", errExited, s.name, s.err, s.out.String())
	default:
		return nil
	}
}

// syncBuffer is a bytes.Buffer that a test may read while a process
// writes it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startServer starts cmd in its own process group (as cred, if not nil)
// and stops the group in Cleanup with stop, then SIGKILL if it is still
// there after 10s. Its output goes to the test log if the test failed.
func startServer(t *testing.T, cmd *exec.Cmd, cred *syscall.Credential, stop syscall.Signal) *server {
	t.Helper()
	s := &server{name: filepath.Base(cmd.Path), exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = &s.out, &s.out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: cred}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", cmd.Path, err)
	}
	go func() {
		s.err = cmd.Wait()
		close(s.exited)
	}()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, stop)
		select {
		case <-s.exited:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-s.exited
		}
		if t.Failed() {
			t.Logf("%s output:\n%s", s.name, s.out.String())
		}
	})
	return s
}

// waitFor polls cond until it returns nil or timeout passes; an error
// wrapping errExited ends the wait at once.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	for {
		err := cond()
		if err == nil {
			return
		}
		if errors.Is(err, errExited) || time.Now().After(deadline) {
			t.Fatalf("waiting for %s: %v", what, err)
		}
		<-tick.C
	}
}
