package node

import (
	"net/http"

	"github.com/apache/iceberg-go/table"

	"github.com/lakestream/lakestream/icebergrest"
)

// icebergREST is the node's Iceberg REST catalog, mounted at /iceberg on the
// HTTP port (docs/lake.md): requests reach it authenticated (secureHTTP).
func (n *Node) icebergREST() http.Handler {
	h := icebergrest.New(icebergrest.Config{Catalog: n.cat, Lake: restLake{n}, Logger: n.cfg.Logger})
	return http.StripPrefix("/iceberg", h)
}

// restLake is the tiering service as the REST catalog's lake; a node
// without tiering has no lake tables.
type restLake struct{ n *Node }

func (l restLake) Metadata(id int64) (string, table.Metadata, bool) {
	if l.n.lake == nil {
		return "", nil, false
	}
	return l.n.lake.Metadata(id)
}
