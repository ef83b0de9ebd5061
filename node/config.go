// Package node wires one Lakestream process: it opens the catalog and the
// tables, starts the Flight SQL service and the HTTP status and metrics
// endpoint, and shuts them down in the reverse order.
package node

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"strings"

	"github.com/lakestream/lakestream/columnarlog"
)

// Config is a node's configuration. Each field documents its default.
type Config struct {
	// DataDir holds the catalog, the logs and the local warehouse.
	// Default "./lakestream-data".
	DataDir string
	// Listen is the Flight SQL address. Default "127.0.0.1:31337".
	Listen string
	// HTTP is the metrics and status page address. Default
	// "127.0.0.1:31380"; "off" disables it.
	HTTP string
	// Catalog is the catalog URI. Default: a SQLite file in DataDir
	// ("sqlite://<data-dir>/catalog.db").
	Catalog string
	// Warehouse is the Iceberg warehouse. Default "file://<data-dir>/warehouse".
	Warehouse string
	// Sync is the log durability policy: "always" (fsync before
	// acknowledging, shared by concurrent writers) or "never". Default "always".
	Sync string
	// DefaultBuckets is bucket.num for tables that do not set it. Default 1.
	DefaultBuckets int
	// Version is reported by the server.
	Version string
	Logger  *slog.Logger
}

// EnsureDefaults fills unset fields.
func (c *Config) EnsureDefaults() {
	if c.DataDir == "" {
		c.DataDir = "./lakestream-data"
	}
	if c.Listen == "" {
		c.Listen = "127.0.0.1:31337"
	}
	if c.HTTP == "" {
		c.HTTP = "127.0.0.1:31380"
	}
	if c.Catalog == "" {
		c.Catalog = "sqlite://" + filepath.Join(c.DataDir, "catalog.db")
	}
	if c.Warehouse == "" {
		abs, err := filepath.Abs(filepath.Join(c.DataDir, "warehouse"))
		if err != nil {
			abs = filepath.Join(c.DataDir, "warehouse")
		}
		c.Warehouse = "file://" + abs
	}
	if c.Sync == "" {
		c.Sync = "always"
	}
	if c.DefaultBuckets == 0 {
		c.DefaultBuckets = 1
	}
	if c.Version == "" {
		c.Version = "dev"
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Validate reports every problem at once.
func (c *Config) Validate() error {
	var errs []error
	for name, addr := range map[string]string{"listen": c.Listen, "http": c.HTTP} {
		if name == "http" && addr == "off" {
			continue
		}
		if _, _, err := net.SplitHostPort(addr); err != nil {
			errs = append(errs, fmt.Errorf("%s address %q: %v", name, addr, err))
		}
	}
	if _, err := columnarlog.ParseSyncPolicy(c.Sync); err != nil {
		errs = append(errs, err)
	}
	if _, err := c.catalogPath(); err != nil {
		errs = append(errs, err)
	}
	if !strings.HasPrefix(c.Warehouse, "file://") {
		errs = append(errs, fmt.Errorf("warehouse %q: only file:// warehouses are supported so far", c.Warehouse))
	}
	if c.DefaultBuckets < 1 || c.DefaultBuckets > 1024 {
		errs = append(errs, fmt.Errorf("default buckets %d: want 1 to 1024", c.DefaultBuckets))
	}
	return errors.Join(errs...)
}

// catalogPath is the SQLite file of a sqlite:// catalog URI.
func (c *Config) catalogPath() (string, error) {
	p, ok := strings.CutPrefix(c.Catalog, "sqlite://")
	if !ok || p == "" {
		return "", fmt.Errorf("catalog %q: only sqlite://<file> catalogs are supported so far", c.Catalog)
	}
	return p, nil
}
