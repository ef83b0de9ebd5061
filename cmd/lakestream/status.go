package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/lakestream/lakestream/node"
)

// runStatus prints the summary of the status page of a node, read from its
// /status.json: the same numbers in the same units, for a terminal.
func runStatus(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	addr := fs.String("http", "127.0.0.1:31380", "HTTP (status page) address of the node")
	asJSON := fs.Bool("json", false, "print /status.json as it is")
	cf := bindClientFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := cf.load(os.LookupEnv); err != nil {
		return fmt.Errorf("status: %w", err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("status: unexpected argument %q", fs.Arg(0))
	}
	base := *addr
	client := http.DefaultClient
	if cf.useTLS() {
		cfg, err := cf.tlsConfig()
		if err != nil {
			return fmt.Errorf("status: %w", err)
		}
		client = &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}}
		if !strings.Contains(base, "://") {
			base = "https://" + base
		}
	}
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(base, "/")+"/status.json", nil)
	if err != nil {
		return fmt.Errorf("status: %w", err)
	}
	if b := cf.authorization(); b != "" {
		req.Header.Set("Authorization", b)
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("status: %w (is a node serving HTTP on %s? see --http)", err, *addr)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status: %s answered %s", req.URL, resp.Status)
	}
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("status: %w", err)
	}
	if *asJSON {
		_, err := out.Write(raw)
		return err
	}
	var st node.Status
	if err := json.Unmarshal(raw, &st); err != nil {
		return fmt.Errorf("status: %s is not a Lakestream status: %w", req.URL, err)
	}
	return node.WriteStatus(out, st)
}
