package icebergrest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go/table"

	"github.com/lakestream/lakestream/auth"
	"github.com/lakestream/lakestream/catalog"
)

// Catalog is the table definitions and privileges (*catalog.Catalog).
type Catalog interface {
	auth.Objects
	Databases(ctx context.Context) ([]string, error)
	Tables(ctx context.Context, db string) ([]*catalog.Table, error)
}

// Lake finds the Iceberg table of a Lakestream table.
type Lake interface {
	// Metadata returns the metadata of the lake table of the table with
	// id, as last committed by Lakestream, and the location of its
	// metadata file; ok is false when the table has no lake (it does not
	// tier, or its lake is quarantined).
	Metadata(id int64) (location string, md table.Metadata, ok bool)
}

// Config configures a Handler.
type Config struct {
	Catalog Catalog
	Lake    Lake
	// Logger logs refused writes and failures. Default: none.
	Logger *slog.Logger
}

// Handler serves the REST catalog under the path it is mounted at (the
// node mounts it at /iceberg, so clients use uri = http://<http-addr>/iceberg).
type Handler struct {
	cfg Config
	mux *http.ServeMux
}

// Limits of a request: the path's names are bounded by the catalog's name
// rules anyway; these bound what is parsed before a lookup.
const (
	maxPathBytes    = 4 << 10
	maxQueryBytes   = 1 << 10
	maxPageSize     = 1000
	defaultPageSize = maxPageSize
)

// New returns the handler of cfg.
func New(cfg Config) *Handler {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	h := &Handler{cfg: cfg, mux: http.NewServeMux()}
	h.mux.HandleFunc("GET /v1/config", h.config)
	h.mux.HandleFunc("GET /v1/namespaces", h.listNamespaces)
	h.mux.HandleFunc("GET /v1/namespaces/{ns}", h.loadNamespace)
	h.mux.HandleFunc("HEAD /v1/namespaces/{ns}", h.loadNamespace)
	h.mux.HandleFunc("GET /v1/namespaces/{ns}/tables", h.listTables)
	h.mux.HandleFunc("GET /v1/namespaces/{ns}/tables/{table}", h.loadTable)
	h.mux.HandleFunc("HEAD /v1/namespaces/{ns}/tables/{table}", h.loadTable)
	h.mux.HandleFunc("/", h.refuse)
	return h
}

// ServeHTTP implements http.Handler. r's path is the path under the mount
// point (http.StripPrefix).
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if len(r.URL.EscapedPath()) > maxPathBytes || len(r.URL.RawQuery) > maxQueryBytes {
		writeError(w, http.StatusBadRequest, "BadRequestException", "request path or query too long")
		return
	}
	if _, ok := auth.FromContext(r.Context()); !ok {
		writeError(w, http.StatusUnauthorized, "NotAuthorizedException", "no identity: authenticate with a bearer token or Basic credentials")
		return
	}
	h.mux.ServeHTTP(w, r)
}

// endpoints are those the config advertises: the reads served, and the
// writes, so that clients send them and get the refusal that says where to
// write (a client that knew them unsupported would fail with its own,
// vaguer message). Metrics reports are not among them: clients then send
// none.
var endpoints = []string{
	"GET /v1/{prefix}/namespaces",
	"GET /v1/{prefix}/namespaces/{namespace}",
	"HEAD /v1/{prefix}/namespaces/{namespace}",
	"GET /v1/{prefix}/namespaces/{namespace}/tables",
	"GET /v1/{prefix}/namespaces/{namespace}/tables/{table}",
	"HEAD /v1/{prefix}/namespaces/{namespace}/tables/{table}",
	"POST /v1/{prefix}/namespaces",
	"POST /v1/{prefix}/namespaces/{namespace}",
	"DELETE /v1/{prefix}/namespaces/{namespace}",
	"POST /v1/{prefix}/namespaces/{namespace}/properties",
	"POST /v1/{prefix}/namespaces/{namespace}/tables",
	"POST /v1/{prefix}/namespaces/{namespace}/tables/{table}",
	"DELETE /v1/{prefix}/namespaces/{namespace}/tables/{table}",
	"POST /v1/{prefix}/namespaces/{namespace}/register",
	"POST /v1/{prefix}/tables/rename",
	"POST /v1/{prefix}/transactions/commit",
}

// config answers GET /v1/config: no defaults or overrides (no prefix, no
// warehouse), the endpoints served.
func (h *Handler) config(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"defaults":  map[string]string{},
		"overrides": map[string]string{},
		"endpoints": endpoints,
	})
}

// refuse answers every other request: a write the spec defines is refused
// as Lakestream's; anything else is not found.
func (h *Handler) refuse(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		writeError(w, http.StatusNotFound, "NotFoundException", fmt.Sprintf("no such endpoint: %s %s", r.Method, r.URL.Path))
		return
	}
	id, _ := auth.FromContext(r.Context())
	h.cfg.Logger.Info("iceberg REST write refused", "method", r.Method, "path", r.URL.Path, "user", id.User)
	writeError(w, http.StatusForbidden, "ForbiddenException", fmt.Sprintf(
		"%s %s refused: Lakestream's Iceberg REST catalog is read-only; the lake tables are Lakestream's and change only through it: write with SQL (INSERT, UPDATE, DELETE, CREATE TABLE) or ingest over Flight SQL (docs/lake.md)",
		r.Method, r.URL.Path))
}

// namespace is the one-level namespace of a path's {ns}: Lakestream's
// databases are not nested.
func namespace(r *http.Request) (string, bool) {
	ns := r.PathValue("ns")
	if ns == "" || strings.ContainsRune(ns, 0x1f) {
		return "", false
	}
	return ns, true
}

// visibleTables returns db's tables that have a lake and that the caller
// may SELECT, sorted by name.
func (h *Handler) visibleTables(ctx context.Context, db string) ([]*catalog.Table, error) {
	defs, err := h.cfg.Catalog.Tables(ctx, db)
	if err != nil {
		return nil, err
	}
	var out []*catalog.Table
	for _, d := range defs {
		if _, _, ok := h.cfg.Lake.Metadata(d.ID); !ok {
			continue
		}
		if auth.Authorize(ctx, h.cfg.Catalog, catalog.PrivSelect, d.DB, d.Name) == nil {
			out = append(out, d)
		}
	}
	return out, nil
}

// visibleNamespace reports whether the caller sees db: a superuser sees
// every database, another user those holding a table it may read.
func (h *Handler) visibleNamespace(ctx context.Context, db string) (bool, error) {
	if id, _ := auth.FromContext(ctx); id.Superuser {
		if _, err := h.cfg.Catalog.Tables(ctx, db); err != nil {
			if errors.Is(err, catalog.ErrDatabaseNotFound) {
				return false, nil
			}
			return false, err
		}
		return true, nil
	}
	ts, err := h.visibleTables(ctx, db)
	if errors.Is(err, catalog.ErrDatabaseNotFound) {
		return false, nil
	}
	return len(ts) > 0, err
}

func (h *Handler) listNamespaces(w http.ResponseWriter, r *http.Request) {
	if parent := r.URL.Query().Get("parent"); parent != "" {
		// Databases are not nested: no namespace has children.
		if ok, err := h.visibleNamespace(r.Context(), parent); err != nil || !ok {
			h.namespaceError(w, parent, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"namespaces": [][]string{}})
		return
	}
	dbs, err := h.cfg.Catalog.Databases(r.Context())
	if err != nil {
		h.internal(w, r, err)
		return
	}
	var out [][]string
	for _, db := range dbs {
		ok, err := h.visibleNamespace(r.Context(), db)
		if err != nil {
			h.internal(w, r, err)
			return
		}
		if ok {
			out = append(out, []string{db})
		}
	}
	page, next, err := paginate(r, out)
	if err != nil {
		writeError(w, http.StatusBadRequest, "BadRequestException", err.Error())
		return
	}
	writeJSON(w, http.StatusOK, listing{"namespaces", page, next})
}

// visibleNamespaceOf is the request's namespace when the caller may see it;
// otherwise it has answered the request (404, as for a missing one, or the
// catalog's failure).
func (h *Handler) visibleNamespaceOf(w http.ResponseWriter, r *http.Request) (string, bool) {
	db, ok := namespace(r)
	if ok {
		var err error
		if ok, err = h.visibleNamespace(r.Context(), db); err != nil {
			h.internal(w, r, err)
			return "", false
		}
	}
	if !ok {
		h.namespaceError(w, r.PathValue("ns"), nil)
		return "", false
	}
	return db, true
}

func (h *Handler) loadNamespace(w http.ResponseWriter, r *http.Request) {
	db, ok := h.visibleNamespaceOf(w, r)
	if !ok {
		return
	}
	if r.Method == http.MethodHead {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"namespace": []string{db}, "properties": map[string]string{}})
}

func (h *Handler) listTables(w http.ResponseWriter, r *http.Request) {
	db, ok := h.visibleNamespaceOf(w, r)
	if !ok {
		return
	}
	defs, err := h.visibleTables(r.Context(), db)
	if err != nil {
		h.internal(w, r, err)
		return
	}
	ids := make([]tableIdent, len(defs))
	for i, d := range defs {
		ids[i] = tableIdent{Namespace: []string{d.DB}, Name: d.Name}
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i].Name < ids[j].Name })
	page, next, err := paginate(r, ids)
	if err != nil {
		writeError(w, http.StatusBadRequest, "BadRequestException", err.Error())
		return
	}
	writeJSON(w, http.StatusOK, listing{"identifiers", page, next})
}

// loadTable answers GET (a LoadTableResult) and HEAD (204) of a table the
// caller may SELECT; a table it may not read is as missing as one that
// does not exist, so that names are not probed.
func (h *Handler) loadTable(w http.ResponseWriter, r *http.Request) {
	db, ok := namespace(r)
	name := r.PathValue("table")
	var def *catalog.Table
	if ok {
		var err error
		def, err = h.cfg.Catalog.Table(r.Context(), db, name)
		switch {
		case errors.Is(err, catalog.ErrTableNotFound), errors.Is(err, catalog.ErrDatabaseNotFound):
			ok = false
		case err != nil:
			h.internal(w, r, err)
			return
		default:
			ok = auth.Authorize(r.Context(), h.cfg.Catalog, catalog.PrivSelect, def.DB, def.Name) == nil
		}
	}
	var loc string
	var md table.Metadata
	if ok {
		loc, md, ok = h.cfg.Lake.Metadata(def.ID)
	}
	if !ok {
		writeError(w, http.StatusNotFound, "NoSuchTableException", fmt.Sprintf("table does not exist: %s.%s (or it has no lake, or you may not SELECT it)", r.PathValue("ns"), name))
		return
	}
	if r.Method == http.MethodHead {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	writeJSON(w, http.StatusOK, loadTableResult{MetadataLocation: loc, Metadata: md, Config: map[string]string{}})
}

// loadTableResult is the spec's LoadTableResult; the metadata is
// iceberg-go's, serialized as its metadata files are.
type loadTableResult struct {
	MetadataLocation string            `json:"metadata-location"`
	Metadata         table.Metadata    `json:"metadata"`
	Config           map[string]string `json:"config"`
}

type tableIdent struct {
	Namespace []string `json:"namespace"`
	Name      string   `json:"name"`
}

// listing is a page of a list response: its items under key, and the
// token of the next page if there is one.
type listing struct {
	key   string
	items any
	next  string
}

func (l listing) MarshalJSON() ([]byte, error) {
	m := map[string]any{l.key: l.items}
	if l.next != "" {
		m["next-page-token"] = l.next
	}
	return json.Marshal(m)
}

// paginate returns the page of items that the request's pageToken (the
// index of its first item) and pageSize select, and the next page's token.
func paginate[T any](r *http.Request, items []T) ([]T, string, error) {
	q := r.URL.Query()
	from, size := 0, defaultPageSize
	if t := q.Get("pageToken"); t != "" {
		n, err := strconv.Atoi(t)
		if err != nil || n < 0 {
			return nil, "", fmt.Errorf("pageToken %q: not a token of this catalog", t)
		}
		from = n
	}
	if s := q.Get("pageSize"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return nil, "", fmt.Errorf("pageSize %q: want a positive number", s)
		}
		size = min(n, maxPageSize)
	}
	if items == nil {
		items = []T{}
	}
	from = min(from, len(items))
	to := min(len(items), from+size)
	next := ""
	if to < len(items) {
		next = strconv.Itoa(to)
	}
	return items[from:to], next, nil
}

func (h *Handler) namespaceError(w http.ResponseWriter, ns string, err error) {
	if err != nil && !errors.Is(err, catalog.ErrDatabaseNotFound) {
		h.cfg.Logger.Warn("iceberg REST", "error", err)
		writeError(w, http.StatusInternalServerError, "ServerError", err.Error())
		return
	}
	writeError(w, http.StatusNotFound, "NoSuchNamespaceException", fmt.Sprintf("namespace does not exist: %s", ns))
}

func (h *Handler) internal(w http.ResponseWriter, r *http.Request, err error) {
	h.cfg.Logger.Warn("iceberg REST", "path", r.URL.Path, "error", err)
	writeError(w, http.StatusInternalServerError, "ServerError", err.Error())
}

// writeError answers with the spec's ErrorModel.
func writeError(w http.ResponseWriter, code int, typ, msg string) {
	writeJSON(w, code, map[string]any{"error": map[string]any{"message": msg, "type": typ, "code": code}})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		code = http.StatusInternalServerError
		body, _ = json.Marshal(map[string]any{"error": map[string]any{"message": "encode response: " + err.Error(), "type": "ServerError", "code": code}})
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	w.Write(body)
}
