package node

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/apache/arrow-adbc/go/adbc"
	"github.com/apache/arrow-adbc/go/adbc/driver/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// An ADBC client sees a failed call's request id among the error's
// details, as the trailer lakestream-request-id and inside the status
// details (grpc-status-details-bin, a google.rpc.RequestInfo), the id of
// the status page's entry of the call (docs/operations.md).
func TestRequestIDReachesADBC(t *testing.T) {
	n, stop, done := startNode(t, t.TempDir())
	defer func() { stop(); <-done }()
	ctx := context.Background()
	db, err := flightsql.NewDriver(memory.DefaultAllocator).NewDatabase(map[string]string{adbc.OptionKeyURI: "grpc://" + n.Addr()})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	cn, err := db.Open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer cn.Close()
	st, err := cn.NewStatement()
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.SetSqlQuery("SELECT * FROM missing"); err != nil {
		t.Fatal(err)
	}
	_, _, err = st.ExecuteQuery(ctx)
	var ae adbc.Error
	if !errors.As(err, &ae) {
		t.Fatalf("error %T %v: want an adbc.Error", err, err)
	}
	details := map[string]string{}
	for _, d := range ae.Details {
		v, err := d.Serialize()
		if err != nil {
			t.Fatal(err)
		}
		details[d.Key()] = string(v)
	}
	id := details["lakestream-request-id"]
	recent := n.status(ctx).Errors
	if len(id) != 16 || len(recent) == 0 || recent[0].RequestID != id {
		t.Fatalf("details %q, recent errors %+v: want the request id of the failed call", details, recent)
	}
	if !strings.Contains(details["grpc-status-details-bin"], id) {
		t.Errorf("status details %q lack the request id %s", details["grpc-status-details-bin"], id)
	}
}
