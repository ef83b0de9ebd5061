package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"google.golang.org/grpc"
)

// runSQL runs one statement against a node and prints its result.
func runSQL(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("sql", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:31337", "Flight SQL address of the node")
	format := fs.String("format", "table", "output: table, csv, json or arrow (an Arrow IPC stream)")
	cf := bindClientFlags(fs)
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return fmt.Errorf(`sql: want one statement (quote it), e.g. lakestream sql "SELECT * FROM t" --format csv; got %d arguments`, len(pos))
	}
	switch *format {
	case "table", "csv", "json", "arrow":
	default:
		return fmt.Errorf("sql: unknown format %q (want table, csv, json or arrow)", *format)
	}
	if err := cf.load(os.LookupEnv); err != nil {
		return fmt.Errorf("sql: %w", err)
	}
	creds, err := cf.grpcCreds()
	if err != nil {
		return fmt.Errorf("sql: %w", err)
	}
	cl, err := flightsql.NewClient(*addr, nil, nil, creds, grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(256<<20)))
	if err != nil {
		return err
	}
	defer cl.Close()
	if ctx, err = cf.authenticate(ctx, cl); err != nil {
		return fmt.Errorf("sql: %w", err)
	}
	info, err := cl.Execute(ctx, pos[0])
	if err != nil {
		return err
	}
	var recs []arrow.RecordBatch
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	var schema *arrow.Schema
	// A cluster's endpoints are located at the nodes that serve them
	// (docs/flight.md, "Endpoints in a cluster"): each is read there.
	others := map[string]*flightsql.Client{}
	defer func() {
		for _, c := range others {
			c.Close()
		}
	}()
	for _, ep := range info.Endpoint {
		src := cl
		if at := locationAddr(ep); at != "" && at != *addr {
			if src = others[at]; src == nil {
				if src, err = flightsql.NewClient(at, nil, nil, creds, grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(256<<20))); err != nil {
					return err
				}
				others[at] = src
			}
		}
		rdr, err := src.DoGet(ctx, ep.Ticket)
		if err != nil {
			return err
		}
		schema = rdr.Schema()
		for rdr.Next() {
			r := rdr.RecordBatch()
			r.Retain()
			recs = append(recs, r)
		}
		err = rdr.Err()
		rdr.Release()
		if err != nil {
			return err
		}
	}
	if schema == nil {
		fmt.Fprintln(out, commandTag(pos[0], info.TotalRecords))
		return nil
	}
	return printResult(out, *format, schema, recs)
}

// locationAddr is the host:port of an endpoint's first location, "" for
// none (the node that planned it).
func locationAddr(ep *flight.FlightEndpoint) string {
	if len(ep.Location) == 0 {
		return ""
	}
	uri := ep.Location[0].Uri
	if i := strings.Index(uri, "://"); i >= 0 {
		return uri[i+3:]
	}
	return ""
}

func printResult(out io.Writer, format string, schema *arrow.Schema, recs []arrow.RecordBatch) error {
	switch format {
	case "arrow":
		w := ipc.NewWriter(out, ipc.WithSchema(schema))
		for _, r := range recs {
			if err := w.Write(r); err != nil {
				return err
			}
		}
		return w.Close()
	case "json":
		enc := json.NewEncoder(out)
		for _, r := range recs {
			for i := 0; i < int(r.NumRows()); i++ {
				row := map[string]any{}
				for c, f := range schema.Fields() {
					row[f.Name] = r.Column(c).GetOneForMarshal(i)
				}
				if err := enc.Encode(row); err != nil {
					return err
				}
			}
		}
		return nil
	}
	rows := [][]string{}
	header := make([]string, schema.NumFields())
	for i, f := range schema.Fields() {
		header[i] = f.Name
	}
	for _, r := range recs {
		for i := 0; i < int(r.NumRows()); i++ {
			row := make([]string, r.NumCols())
			for c := range row {
				row[c] = cell(r.Column(c), i)
			}
			rows = append(rows, row)
		}
	}
	if format == "csv" {
		w := csv.NewWriter(out)
		w.Write(header)
		w.WriteAll(rows)
		return w.Error()
	}
	printTable(out, header, rows)
	return nil
}

func cell(a arrow.Array, i int) string {
	if a.IsNull(i) {
		return "NULL"
	}
	if s, ok := a.(*array.String); ok {
		return s.Value(i)
	}
	return a.ValueStr(i)
}

// printTable prints an aligned text table with a row count.
func printTable(out io.Writer, header []string, rows [][]string) {
	width := make([]int, len(header))
	for i, h := range header {
		width[i] = utf8.RuneCountInString(h)
	}
	for _, r := range rows {
		for i, c := range r {
			width[i] = max(width[i], utf8.RuneCountInString(c))
		}
	}
	line := func(cells []string) {
		parts := make([]string, len(cells))
		for i, c := range cells {
			parts[i] = c + strings.Repeat(" ", width[i]-utf8.RuneCountInString(c))
		}
		fmt.Fprintln(out, strings.TrimRight(strings.Join(parts, " | "), " "))
	}
	line(header)
	sep := make([]string, len(header))
	for i := range sep {
		sep[i] = strings.Repeat("-", width[i])
	}
	fmt.Fprintln(out, strings.Join(sep, "-+-"))
	for _, r := range rows {
		line(r)
	}
	fmt.Fprintf(out, "(%d rows)\n", len(rows))
}
