package node

import (
	"github.com/lakestream/lakestream/flightsrv"
	"github.com/lakestream/lakestream/planner/duck"
	"github.com/lakestream/lakestream/tables"
)

// engine is the query engine for everything that is not DDL or a plain scan.
type engine interface {
	flightsrv.QueryEngine
	Close() error
}

// newEngine starts embedded DuckDB, locked down, over the node's tables.
func newEngine(store *tables.Store, cfg Config) (engine, error) {
	return duck.New(store, duck.Options{Logger: cfg.Logger})
}
