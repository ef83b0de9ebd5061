package flightsrv_test

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow/flight"
)

// The current catalog and schema are readable; setting them to anything
// else is refused per option, never accepted and ignored.
func TestSessionOptions(t *testing.T) {
	ts := startServer(t, serverConfig{})
	ctx := testCtx(t)
	got, err := ts.cl.GetSessionOptions(ctx, &flight.GetSessionOptionsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if c, s := got.SessionOptions["catalog"].GetStringValue(), got.SessionOptions["schema"].GetStringValue(); c != "lakestream" || s != "default" {
		t.Errorf("catalog %q, schema %q", c, s)
	}
	vals, err := flight.NewSessionOptionValues(map[string]any{"catalog": "lakestream", "schema": "other", "timezone": "UTC"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := ts.cl.SetSessionOptions(ctx, &flight.SetSessionOptionsRequest{SessionOptions: vals})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Errors) != 2 || res.Errors["schema"].GetValue() != flight.SetSessionOptionsResultErrorInvalidValue ||
		res.Errors["timezone"].GetValue() != flight.SetSessionOptionsResultErrorInvalidName {
		t.Errorf("errors %v, want schema INVALID_VALUE and timezone INVALID_NAME", res.Errors)
	}
}
