package node

import (
	"github.com/lakestream/lakestream/flightsrv"
	"github.com/lakestream/lakestream/tables"
)

// engine is the query engine the node runs; nil until planner/duck lands.
type engine interface {
	flightsrv.QueryEngine
	Close() error
}

func newEngine(store *tables.Store, cfg Config) (engine, error) { return nil, nil }
