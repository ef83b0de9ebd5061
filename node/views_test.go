package node

import (
	"testing"

	"github.com/lakestream/lakestream/planner/duck"
)

// The engine finds views through the resolver it is given, so whatever
// wraps the node's resolver for the engine must keep them: a view over a
// view needs the first to resolve when the second is created.
func TestEngineResolverKeepsViews(t *testing.T) {
	var r any = countingResolver{}
	if _, ok := r.(duck.Views); !ok {
		t.Fatal("the engine's resolver does not offer the catalog's views (duck.Views)")
	}
}
