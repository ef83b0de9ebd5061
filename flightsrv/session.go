package flightsrv

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow/flight"

	"github.com/lakestream/lakestream/catalog"
)

// Session options: the current catalog and schema that ADBC reads as
// adbc_current_catalog and adbc_current_db_schema (its Flight SQL driver
// asks GetSessionOptions for "catalog" and "schema"). Lakestream has one
// catalog, and unqualified names resolve in the default database, so these
// are fixed: setting them to their current values succeeds, any other
// value or option is refused per option (INVALID_VALUE, INVALID_NAME)
// rather than accepted and ignored. Qualify names ("db.table") to reach
// other databases.

const (
	sessionCatalog = "catalog"
	sessionSchema  = "schema"
)

func currentSession() map[string]string {
	return map[string]string{sessionCatalog: catalogName, sessionSchema: catalog.DefaultDatabase}
}

func (s *Server) GetSessionOptions(context.Context, *flight.GetSessionOptionsRequest) (*flight.GetSessionOptionsResult, error) {
	opts := map[string]any{}
	for k, v := range currentSession() {
		opts[k] = v
	}
	vals, err := flight.NewSessionOptionValues(opts)
	if err != nil {
		return nil, err
	}
	return &flight.GetSessionOptionsResult{SessionOptions: vals}, nil
}

func (s *Server) SetSessionOptions(_ context.Context, req *flight.SetSessionOptionsRequest) (*flight.SetSessionOptionsResult, error) {
	cur := currentSession()
	res := &flight.SetSessionOptionsResult{Errors: map[string]*flight.SetSessionOptionsResultError{}}
	for name, v := range req.GetSessionOptions() {
		want, ok := cur[name]
		switch {
		case !ok:
			res.Errors[name] = &flight.SetSessionOptionsResultError{Value: flight.SetSessionOptionsResultErrorInvalidName}
		case v.GetStringValue() != want:
			res.Errors[name] = &flight.SetSessionOptionsResultError{Value: flight.SetSessionOptionsResultErrorInvalidValue}
		}
	}
	return res, nil
}
