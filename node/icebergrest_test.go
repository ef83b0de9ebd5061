package node

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"
	"google.golang.org/grpc/metadata"
)

// basicAuth sends Basic credentials on every request of iceberg-go's REST
// client.
type basicAuth struct{ user, password string }

func (b basicAuth) AuthHeader() (string, string, error) {
	return "Authorization", "Basic " + base64.StdEncoding.EncodeToString([]byte(b.user+":"+b.password)), nil
}

// restCatalog opens iceberg-go's REST client on the node's /iceberg.
func restCatalog(t *testing.T, n *Node, opts ...rest.Option) *rest.Catalog {
	t.Helper()
	cat, err := rest.NewCatalog(context.Background(), "lakestream", "http://"+n.HTTPAddr()+"/iceberg", opts...)
	if err != nil {
		t.Fatal(err)
	}
	return cat
}

func restTableNames(t *testing.T, cat *rest.Catalog, ns string) []string {
	t.Helper()
	var out []string
	for id, err := range cat.ListTables(context.Background(), table.Identifier{ns}) {
		if err != nil {
			t.Fatalf("list tables of %s: %v", ns, err)
		}
		out = append(out, strings.Join(id, "."))
	}
	return out
}

// The node's Iceberg REST catalog, through iceberg-go's REST client: the
// namespaces and the tiered tables a user may SELECT (not a table without
// a lake, not another user's), each loaded at the metadata Lakestream
// committed last and read equal to "t$lake"; Basic credentials and bearer
// tokens; no credentials refused; every write refused saying where to
// write; errors in the spec's ErrorModel.
func TestIcebergRESTCatalog(t *testing.T) {
	cfg := secureConfig(t, SecurityConfig{Auth: AuthOn, AdminPassword: "admin-password"})
	cfg.Tiering = TieringManual
	n, cancel, done := startNodeWith(t, cfg)
	defer func() { cancel(); <-done }()
	cl := client(t, n.Addr())
	admin := login(t, cl, "admin", "admin-password")
	for _, sql := range []string{
		"CREATE TABLE ev (id BIGINT, name VARCHAR) WITH ('bucket.num'='2')",
		"CREATE TABLE kv (id BIGINT NOT NULL, v BIGINT, PRIMARY KEY (id)) WITH ('bucket.num'='2')",
		"CREATE TABLE nolake (id BIGINT) WITH ('datalake.enabled'='false')",
		"CREATE DATABASE other",
		"CREATE TABLE other.hidden (id BIGINT)",
		"INSERT INTO ev SELECT range, 'n' || range FROM range(1000)",
		"INSERT INTO kv SELECT range, range FROM range(300)",
		"INSERT INTO other.hidden VALUES (1)",
		"CREATE USER alice WITH PASSWORD 'alice-password'",
		"GRANT SELECT ON TABLE ev TO alice",
	} {
		if _, err := cl.ExecuteUpdate(admin, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	ctx := context.Background()
	for _, name := range []string{"ev", "kv", "other.hidden"} {
		db, tn, _ := strings.Cut(name, ".")
		if tn == "" {
			db, tn = "", name
		}
		tb, err := n.Tables().Get(ctx, db, tn)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := n.Lake().Round(ctx, tb.Def().ID); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cl.ExecuteUpdate(admin, "UPDATE kv SET v = -1 WHERE id < 10"); err != nil {
		t.Fatal(err)
	}
	kv, _ := n.Tables().Get(ctx, "", "kv")
	if _, err := n.Lake().Round(ctx, kv.Def().ID); err != nil {
		t.Fatal(err)
	}

	adminCat := restCatalog(t, n, rest.WithAuthManager(basicAuth{"admin", "admin-password"}))
	var namespaces []string
	nss, err := adminCat.ListNamespaces(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range nss {
		namespaces = append(namespaces, strings.Join(ns, "."))
	}
	if !slices.Contains(namespaces, "default") || !slices.Contains(namespaces, "other") {
		t.Errorf("admin's namespaces %v, want default and other", namespaces)
	}
	if got := restTableNames(t, adminCat, "default"); !slices.Equal(got, []string{"default.ev", "default.kv"}) {
		t.Errorf("admin's tables of default: %v, want ev and kv (nolake has no lake)", got)
	}
	for _, name := range []string{"ev", "kv"} {
		tbl, err := adminCat.LoadTable(ctx, table.Identifier{"default", name})
		if err != nil {
			t.Fatalf("load %s: %v", name, err)
		}
		tb, _ := n.Tables().Get(ctx, "", name)
		loc, _, _ := n.Lake().Metadata(tb.Def().ID)
		if tbl.MetadataLocation() != loc {
			t.Errorf("%s: metadata location %s, want the committed %s", name, tbl.MetadataLocation(), loc)
		}
		arr, err := tbl.Scan().ToArrowTable(ctx)
		if err != nil {
			t.Fatalf("scan %s through the REST catalog: %v", name, err)
		}
		want, err := query(admin, cl, `SELECT count(*)::BIGINT FROM "`+name+`$lake"`)
		if err != nil {
			t.Fatal(err)
		}
		if arr.NumRows() != want || want == 0 {
			t.Errorf("%s through the REST catalog: %d rows, %q$lake has %d", name, arr.NumRows(), name, want)
		}
		arr.Release()
	}

	// A bearer token from a Flight login works as well; alice sees ev only.
	aliceCtx := login(t, cl, "alice", "alice-password")
	md, _ := metadata.FromOutgoingContext(aliceCtx)
	token := strings.TrimPrefix(md.Get("authorization")[0], "Bearer ")
	aliceCat := restCatalog(t, n, rest.WithOAuthToken(token))
	if got := restTableNames(t, aliceCat, "default"); !slices.Equal(got, []string{"default.ev"}) {
		t.Errorf("alice's tables: %v, want only ev", got)
	}
	if _, err := aliceCat.LoadTable(ctx, table.Identifier{"default", "kv"}); !errors.Is(err, icecatalog.ErrNoSuchTable) {
		t.Errorf("alice loads kv: %v, want no such table", err)
	}
	if _, err := aliceCat.LoadTable(ctx, table.Identifier{"default", "ev"}); err != nil {
		t.Errorf("alice loads ev: %v", err)
	}
	nss, err = aliceCat.ListNamespaces(ctx, nil)
	if err != nil || len(nss) != 1 || nss[0][0] != "default" {
		t.Errorf("alice's namespaces %v (%v), want default only", nss, err)
	}
	if _, err := aliceCat.LoadNamespaceProperties(ctx, table.Identifier{"other"}); !errors.Is(err, icecatalog.ErrNoSuchNamespace) {
		t.Errorf("alice loads namespace other: %v, want no such namespace", err)
	}

	// Writes are refused, saying where to write.
	sch := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "x", Type: iceberg.PrimitiveTypes.Int64})
	_, err = adminCat.CreateTable(ctx, table.Identifier{"default", "new"}, sch)
	if err == nil || !strings.Contains(err.Error(), "read-only") || !strings.Contains(err.Error(), "through it") {
		t.Errorf("create table through the REST catalog: %v, want a refusal saying to write through Lakestream", err)
	}
	if err := adminCat.DropTable(ctx, table.Identifier{"default", "ev"}); err == nil || !strings.Contains(err.Error(), "read-only") {
		t.Errorf("drop table through the REST catalog: %v, want a refusal", err)
	}
	if err := adminCat.CreateNamespace(ctx, table.Identifier{"x"}, nil); err == nil || !strings.Contains(err.Error(), "read-only") {
		t.Errorf("create namespace through the REST catalog: %v, want a refusal", err)
	}

	// Raw requests: no credentials, a commit, a bad page size, paging.
	do := func(method, path, authz string) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(method, "http://"+n.HTTPAddr()+"/iceberg"+path, strings.NewReader("{}"))
		if authz != "" {
			req.Header.Set("Authorization", authz)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		var m map[string]any
		_ = json.Unmarshal(body, &m)
		return resp.StatusCode, m
	}
	if code, _ := do("GET", "/v1/config", ""); code != http.StatusUnauthorized {
		t.Errorf("no credentials: %d, want 401", code)
	}
	bearer := "Bearer " + token
	code, body := do("POST", "/v1/namespaces/default/tables/ev", bearer)
	e, _ := body["error"].(map[string]any)
	if code != http.StatusForbidden || e["type"] != "ForbiddenException" || e["code"] != float64(403) || !strings.Contains(e["message"].(string), "Lakestream") {
		t.Errorf("commit: %d %v, want 403 with an ErrorModel", code, body)
	}
	if code, body := do("GET", "/v1/namespaces?pageSize=0", bearer); code != http.StatusBadRequest {
		t.Errorf("pageSize=0: %d %v, want 400", code, body)
	}
	code, body = do("GET", "/v1/namespaces/default/tables?pageSize=1", "Basic "+base64.StdEncoding.EncodeToString([]byte("admin:admin-password")))
	if ids, _ := body["identifiers"].([]any); code != http.StatusOK || len(ids) != 1 || body["next-page-token"] != "1" {
		t.Errorf("first page of one: %d %v", code, body)
	}
	if code, _ := do("GET", "/v1/namespaces/default/tables?pageSize=1&pageToken=1", bearer); code != http.StatusOK {
		t.Errorf("second page: %d", code)
	}
	if code, _ := do("GET", "/v1/"+strings.Repeat("a", 5000), bearer); code != http.StatusBadRequest {
		t.Errorf("a 5,000-byte path: %d, want 400", code)
	}
	if code, _ := do("HEAD", "/v1/namespaces/default/tables/kv", bearer); code != http.StatusNotFound {
		t.Errorf("alice HEAD kv: %d, want 404", code)
	}
	if code, _ := do("HEAD", "/v1/namespaces/default/tables/ev", bearer); code != http.StatusNoContent {
		t.Errorf("alice HEAD ev: %d, want 204", code)
	}
}

// With authentication off (a loopback node) the REST catalog answers
// without credentials, as the anonymous superuser: every tiered table.
func TestIcebergRESTAuthOff(t *testing.T) {
	n, cancel, done := startNode(t, t.TempDir())
	defer func() { cancel(); <-done }()
	cl := client(t, n.Addr())
	mustExec(t, cl, "CREATE TABLE ev (id BIGINT)")
	cat := restCatalog(t, n)
	if got := restTableNames(t, cat, "default"); !slices.Equal(got, []string{"default.ev"}) {
		t.Fatalf("tables without credentials, auth off: %v", got)
	}
	if code, body := get(t, n, "/iceberg/v1/config"); code != http.StatusOK || !strings.Contains(body, `"endpoints"`) {
		t.Fatalf("config: %d %s", code, body)
	}
	// pyiceberg's RestCatalog without credentials sends "Bearer None".
	req, err := http.NewRequest("GET", "http://"+n.HTTPAddr()+"/iceberg/v1/config", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer None")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("config with pyiceberg's empty credentials, auth off: %s", resp.Status)
	}
}
