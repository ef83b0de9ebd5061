package flightsrv_test

import (
	"errors"
	"io"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"
)

// Plain Flight clients (pyarrow.flight's list_flights and get_schema) find
// the tables as PATH descriptors and their schemas.
func TestListFlightsAndGetSchemaOfPaths(t *testing.T) {
	ts := startServer(t, serverConfig{})
	ts.mustExec("CREATE TABLE ev " + eventsCols)
	ts.mustExec("CREATE DATABASE sales")
	ts.mustExec("CREATE TABLE sales.orders (id BIGINT NOT NULL, note VARCHAR)")
	ctx := testCtx(t)

	stream, err := ts.cl.Client.ListFlights(ctx, &flight.Criteria{})
	if err != nil {
		t.Fatal(err)
	}
	var paths [][]string
	for {
		info, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		desc := info.GetFlightDescriptor()
		if desc.GetType() != flight.DescriptorPATH {
			t.Fatalf("listed %v, want a PATH descriptor", desc)
		}
		paths = append(paths, desc.GetPath())
		schema, err := flight.DeserializeSchema(info.GetSchema(), memory.DefaultAllocator)
		if err != nil || schema.NumFields() == 0 {
			t.Fatalf("listed %v with schema %v, %v", desc.GetPath(), schema, err)
		}
		// The listed descriptor is what GetFlightInfo and GetSchema take.
		got, err := ts.cl.Client.GetSchema(ctx, desc)
		if err != nil {
			t.Fatalf("GetSchema %v: %v", desc.GetPath(), err)
		}
		if s, err := flight.DeserializeSchema(got.GetSchema(), memory.DefaultAllocator); err != nil || !s.Equal(schema) {
			t.Fatalf("GetSchema %v: %v, %v; listed %v", desc.GetPath(), s, err, schema)
		}
		if _, err := ts.cl.Client.GetFlightInfo(ctx, desc); err != nil {
			t.Fatalf("GetFlightInfo %v: %v", desc.GetPath(), err)
		}
	}
	slices.SortFunc(paths, func(a, b []string) int { return slices.Compare(a, b) })
	if want := [][]string{{"default", "ev"}, {"sales", "orders"}}; !slices.EqualFunc(paths, want, slices.Equal) {
		t.Fatalf("listed %v, want %v", paths, want)
	}

	_, err = ts.cl.Client.GetSchema(ctx, &flight.FlightDescriptor{Type: flight.DescriptorPATH, Path: []string{"nosuch"}})
	expectCode(t, err, codes.NotFound)
	stream, err = ts.cl.Client.ListFlights(ctx, &flight.Criteria{Expression: []byte("x > 1")})
	if err == nil {
		_, err = stream.Recv()
	}
	expectCode(t, err, codes.InvalidArgument, "criteria")
}
