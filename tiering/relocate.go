package tiering

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/apache/iceberg-go/table"
)

// Moving the data directory (docs/lake.md#moving-the-data-directory).
//
// The embedded lake — iceberg-go's SQL catalog in a SQLite file and a
// file:// warehouse, both inside the data directory — holds absolute
// file:// paths: each catalog row's metadata_location, and inside the
// metadata the table location, each snapshot's manifest list, the metadata
// log and location properties; inside the Avro manifest lists the manifest
// paths; inside the manifests the data file paths. After the directory is
// moved or copied they name the old place. Relocate, run at start-up before
// the catalog is opened, finds each table whose metadata_location is outside
// the warehouse and points it at the warehouse again:
//
//  1. the old place: the longest tail of metadata_location that names a file
//     under the warehouse gives the old prefix (oldPlace), so a directory
//     moved twice, or moved again before a relocation finished, is found;
//  2. new files, never a file changed in place: every position delete file
//     (its file_path column mapped, relocate_deletes.go), every manifest of
//     every snapshot (data and delete file paths mapped, position delete
//     files pointing at their new copies), every manifest list
//     (manifest paths and lengths), and a metadata file of the next version
//     (every path in it mapped, the previous file appended to the metadata
//     log); each is fsynced, then their directory;
//  3. the catalog row is switched by one compare-and-swap UPDATE … WHERE
//     metadata_location = <old>.
//
// A crash before step 3 leaves the old row, and the next start relocates
// again; the files of the first attempt are referenced by nothing and are
// deleted by the orphan pass of maintenance (maintain.go). Nothing at the
// old place is read or written. A table that could not be relocated is
// reported in Relocation, and Service quarantines it (ErrLakeElsewhere):
// loading it would read the old place, and committing to it would write
// there — into the original of a copy.

// ErrLakeElsewhere is the error of a lake table of the embedded lake whose
// metadata is outside the data directory's warehouse, after a move or copy
// whose relocation failed: it is not served, so that a copy of a data
// directory never reads or commits into the original.
var ErrLakeElsewhere = errors.New("lake table outside the data directory")

// RelocateConfig names the embedded lake that Relocate brings back into its
// data directory.
type RelocateConfig struct {
	// CatalogFile is the SQLite file of the Iceberg SQL catalog
	// (<data-dir>/iceberg.db). A missing file is a new data directory:
	// nothing to relocate. Required.
	CatalogFile string
	// Warehouse is the file:// warehouse (file:///abs/dir) that the
	// catalog's tables are to be in. Required.
	Warehouse string
	// Name is the catalog name of the rows to relocate. Default
	// DefaultCatalogName.
	Name   string
	Logger *slog.Logger

	// BeforeSwitch, for tests only, is called for each table after its
	// new files are written and synced and before its catalog row is
	// switched; an error stops that table there, as a crash would (its
	// files are left behind).
	BeforeSwitch func(table string) error
}

// Relocation is what Relocate did. Pass it to the Service (Config.Relocation):
// it quarantines the tables that are still elsewhere, and checks that every
// table it opens is inside Warehouse.
type Relocation struct {
	// Warehouse is the warehouse URI, without a trailing slash.
	Warehouse string
	// Moved are the tables relocated, in catalog order.
	Moved []MovedTable
	mu    struct {
		sync.Mutex
		// elsewhere are the tables outside the warehouse that were not
		// relocated, by identifier, with the reason (wrapping
		// ErrLakeElsewhere); a dropped one is forgotten.
		elsewhere map[string]error
	}
}

// MovedTable is one relocated table.
type MovedTable struct {
	Table     string // namespace.name
	From, To  string // the table location before and after
	Snapshots int    // manifest lists rewritten
	Manifests int    // manifests rewritten
	Files     int    // data and delete file entries rewritten
	Deletes   int    // position delete files written anew
	Elapsed   time.Duration
}

// Elsewhere returns the reason why the lake table ident is outside the
// warehouse and was not relocated, or nil.
func (r *Relocation) Elsewhere(ident table.Identifier) error {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.mu.elsewhere[identKey(ident)]
}

// forget drops ident from the tables elsewhere (its Iceberg row was
// dropped).
func (r *Relocation) forget(ident table.Identifier) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.mu.elsewhere, identKey(ident))
}

// inside says whether uri is in the warehouse.
func (r *Relocation) inside(uri string) bool {
	return strings.HasPrefix(uri, r.Warehouse+"/")
}

// check returns an ErrLakeElsewhere error if tbl's metadata or location is
// outside the warehouse.
func (r *Relocation) check(ident table.Identifier, tbl *table.Table) error {
	if r == nil {
		return nil
	}
	if err := r.Elsewhere(ident); err != nil {
		return err
	}
	for _, loc := range []string{tbl.MetadataLocation(), tbl.Location()} {
		if !r.inside(loc) {
			return fmt.Errorf("%w: lake table %s: %s is outside the warehouse %s", ErrLakeElsewhere, strings.Join(ident, "."), loc, r.Warehouse)
		}
	}
	return nil
}

func identKey(ident table.Identifier) string {
	b, _ := json.Marshal([]string(ident))
	return string(b)
}

// catalogRow is one table row of the SQL catalog.
type catalogRow struct {
	namespace, name string // as stored
	ident           table.Identifier
	location        string // metadata_location
}

// Relocate points every table of the embedded lake's catalog that is
// outside cfg.Warehouse at its files under cfg.Warehouse, after the data
// directory was moved or copied with the node stopped. It runs before the
// catalog is opened. A table it cannot relocate is logged and reported in
// the Relocation (the Service quarantines it); an error is returned only
// when the catalog cannot be read at all.
func Relocate(ctx context.Context, cfg RelocateConfig) (*Relocation, error) {
	if cfg.Name == "" {
		cfg.Name = DefaultCatalogName
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	wh, err := url.Parse(cfg.Warehouse)
	if err != nil || wh.Scheme != "file" || !strings.HasPrefix(wh.Path, "/") {
		return nil, fmt.Errorf("relocate: warehouse %q: want file:///abs/dir", cfg.Warehouse)
	}
	r := &Relocation{Warehouse: strings.TrimSuffix(cfg.Warehouse, "/")}
	r.mu.elsewhere = map[string]error{}
	if _, err := os.Stat(cfg.CatalogFile); errors.Is(err, fs.ErrNotExist) {
		return r, nil // a new data directory
	}
	db, err := sql.Open("sqlite", sqliteDSN(cfg.CatalogFile))
	if err != nil {
		return nil, fmt.Errorf("relocate: open %s: %w", cfg.CatalogFile, err)
	}
	defer db.Close()
	rows, err := catalogRows(ctx, db, cfg.Name)
	if err != nil {
		return nil, fmt.Errorf("relocate: read %s: %w", cfg.CatalogFile, err)
	}
	dir := filepath.FromSlash(wh.Path)
	for _, row := range rows {
		if r.inside(row.location) {
			continue
		}
		name := strings.Join(row.ident, ".")
		mv, err := relocateTable(ctx, db, cfg, r.Warehouse, dir, row)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if err != nil {
			err = fmt.Errorf("%w: lake table %s: its metadata %s is outside the warehouse %s and was not relocated: %w; it is quarantined until a start relocates it (move the data directory back, or fix the cause and restart)",
				ErrLakeElsewhere, name, row.location, r.Warehouse, err)
			r.mu.elsewhere[identKey(row.ident)] = err
			cfg.Logger.Error("lake table not relocated", "table", name, "error", err)
			continue
		}
		r.Moved = append(r.Moved, mv)
		cfg.Logger.Info("lake table relocated into the data directory", "table", name, "from", mv.From, "to", mv.To,
			"snapshots", mv.Snapshots, "manifests", mv.Manifests, "files", mv.Files, "position_delete_files", mv.Deletes, "elapsed", mv.Elapsed.Round(time.Millisecond))
	}
	return r, nil
}

// catalogRows reads the table rows of catalog name (views excluded). A
// catalog file without the catalog's tables has none.
func catalogRows(ctx context.Context, db *sql.DB, name string) ([]catalogRow, error) {
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'iceberg_tables'`).Scan(&n); err != nil || n == 0 {
		return nil, err
	}
	// Catalogs of older iceberg-go releases lack the iceberg_type column.
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM pragma_table_info('iceberg_tables') WHERE name = 'iceberg_type'`).Scan(&n); err != nil {
		return nil, err
	}
	q := `SELECT table_namespace, table_name, metadata_location FROM iceberg_tables WHERE catalog_name = ? AND metadata_location IS NOT NULL`
	if n > 0 {
		q += ` AND (iceberg_type = 'TABLE' OR iceberg_type IS NULL)`
	}
	rs, err := db.QueryContext(ctx, q+` ORDER BY table_namespace, table_name`, name)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	var out []catalogRow
	for rs.Next() {
		var row catalogRow
		if err := rs.Scan(&row.namespace, &row.name, &row.location); err != nil {
			return nil, err
		}
		row.ident = append(decodeNamespace(row.namespace), row.name)
		out = append(out, row)
	}
	return out, rs.Err()
}

// encodedNamespacePrefix marks a namespace that iceberg-go's SQL catalog
// stores as JSON (one with a dot in a level).
const encodedNamespacePrefix = "__iceberg_namespace_v1__:"

// decodeNamespace is the namespace that iceberg-go's SQL catalog stored as
// s: JSON after encodedNamespacePrefix when a level holds a dot, else the
// levels joined by dots. It mirrors the catalog's own decoding, so that a
// row is matched to the Lakestream table it belongs to.
func decodeNamespace(s string) table.Identifier {
	if rest, ok := strings.CutPrefix(s, encodedNamespacePrefix); ok {
		var ns []string
		if json.Unmarshal([]byte(rest), &ns) == nil && len(ns) > 0 {
			return ns
		}
	}
	return strings.Split(s, ".")
}

// relocateTable relocates one table: new files, then the row's switch.
func relocateTable(ctx context.Context, db *sql.DB, cfg RelocateConfig, warehouse, dir string, row catalogRow) (MovedTable, error) {
	start := time.Now()
	from, ok := oldPlace(row.location, func(rel string) bool {
		fi, err := os.Stat(filepath.Join(dir, filepath.FromSlash(rel)))
		return err == nil && fi.Mode().IsRegular()
	})
	if !ok {
		return MovedTable{}, errors.New("no tail of that path names a file under the warehouse (if the table is meant to be where it is, configure that warehouse)")
	}
	rl := newRelocator(pathMap{from: from, to: warehouse})
	next, prev, err := rl.rewrite(ctx, row.location)
	if err != nil {
		return MovedTable{}, errors.Join(err, rl.removeCreated())
	}
	name := strings.Join(row.ident, ".")
	if cfg.BeforeSwitch != nil {
		if err := cfg.BeforeSwitch(name); err != nil {
			return MovedTable{}, err // as a crash: the files stay, orphans
		}
	}
	res, err := db.ExecContext(ctx, `UPDATE iceberg_tables SET metadata_location = ?, previous_metadata_location = ?
		WHERE catalog_name = ? AND table_namespace = ? AND table_name = ? AND metadata_location = ?`,
		next, prev, cfg.Name, row.namespace, row.name, row.location)
	if err != nil {
		// The outcome is unknown; the files stay (orphans if the row did
		// not switch).
		return MovedTable{}, fmt.Errorf("switch the catalog row: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return MovedTable{}, errors.Join(fmt.Errorf("switch the catalog row: it changed meanwhile (%d rows updated)", n), err, rl.removeCreated())
	}
	return MovedTable{
		Table: name, From: rl.oldLocation, To: rl.newLocation,
		Snapshots: rl.lists, Manifests: len(rl.manifests), Files: rl.files, Deletes: len(rl.deletes),
		Elapsed: time.Since(start),
	}, nil
}

// oldPlace returns the prefix of uri, a file:// URI, that the warehouse
// replaces: the shortest one whose rest names a file under the warehouse
// (exists tells, given the rest as a slash-separated relative path), so that
// the longest tail of the old path that is found in the warehouse decides.
// The rest has at least two levels, and the prefix at least one.
func oldPlace(uri string, exists func(rel string) bool) (string, bool) {
	p, ok := strings.CutPrefix(uri, "file:///")
	if !ok {
		return "", false
	}
	parts := strings.Split(p, "/")
	for i := 1; i < len(parts)-1; i++ {
		rel, err := url.PathUnescape(strings.Join(parts[i:], "/"))
		if err == nil && exists(rel) {
			return "file:///" + strings.Join(parts[:i], "/"), true
		}
	}
	return "", false
}

// pathMap maps URIs under from to the same place under to.
type pathMap struct{ from, to string }

func (m pathMap) uri(u string) (string, error) {
	if u == m.from {
		return m.to, nil
	}
	if rest, ok := strings.CutPrefix(u, m.from+"/"); ok {
		return m.to + "/" + rest, nil
	}
	return "", fmt.Errorf("%s is not under the old place %s", u, m.from)
}
