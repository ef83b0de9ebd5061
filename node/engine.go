package node

import (
	"github.com/lakestream/lakestream/flightsrv"
	"github.com/lakestream/lakestream/internal/scan"
	"github.com/lakestream/lakestream/planner/duck"
)

// engine is the query engine for everything that is not DDL or a plain scan.
type engine interface {
	flightsrv.QueryEngine
	Close() error
}

// newEngine starts embedded DuckDB, locked down, over the node's tables
// (each a union of its lake and log tail).
func newEngine(res scan.Resolver, cfg Config) (engine, error) {
	return duck.New(res, duck.Options{Logger: cfg.Logger})
}
