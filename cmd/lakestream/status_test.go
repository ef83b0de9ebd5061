package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/lakestream/lakestream/node"
)

// lakestream status prints the node's tables from its /status.json, and
// --json the document itself.
func TestStatusCommand(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	n, err := node.Start(ctx, node.Config{DataDir: t.TempDir(), Listen: "127.0.0.1:0", HTTP: "127.0.0.1:0", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- n.Serve(ctx) }()
	defer func() { cancel(); <-done }()
	var out bytes.Buffer
	if err := runSQL(ctx, []string{"--addr", n.Addr(), "CREATE TABLE visits (id BIGINT)"}, &out); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := runStatus(ctx, []string{"--http", n.HTTPAddr()}, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Lakestream ", "default.visits", "TABLE", "ROWS", "0 rows/s"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("status lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	if err := runStatus(ctx, []string{"--http", n.HTTPAddr(), "--json"}, &out); err != nil {
		t.Fatal(err)
	}
	var st node.Status
	if err := json.Unmarshal(out.Bytes(), &st); err != nil || len(st.Tables) != 1 || st.Tables[0].Name != "default.visits" {
		t.Fatalf("--json: %v %+v", err, st.Tables)
	}
	if err := runStatus(ctx, []string{"--http", "127.0.0.1:1"}, &out); err == nil || !strings.Contains(err.Error(), "--http") {
		t.Errorf("no node: error %v, want one pointing at --http", err)
	}
}

// The log flags choose the format and level; a bad value is refused; a
// slow-query threshold of 0 turns the slow-query log off.
func TestLogFlags(t *testing.T) {
	none := func(string) (string, bool) { return "", false }
	cfg, err := loadConfig([]string{"--log-format", "json", "--log-level", "debug", "--slow-query", "250ms"}, none)
	if err != nil || cfg.LogFormat != "json" || cfg.LogLevel != "debug" || cfg.SlowQuery != 250*time.Millisecond {
		t.Fatalf("config %+v, %v", cfg, err)
	}
	var buf bytes.Buffer
	l, err := newLogger(&buf, cfg.LogFormat, cfg.LogLevel)
	if err != nil {
		t.Fatal(err)
	}
	l.Debug("hello", "k", 1)
	var line map[string]any
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil || line["msg"] != "hello" || line["level"] != "DEBUG" {
		t.Fatalf("json log line %q: %v", buf.String(), err)
	}
	buf.Reset()
	l, _ = newLogger(&buf, "text", "warn")
	l.Info("quiet")
	l.Warn("loud")
	if got := buf.String(); strings.Contains(got, "quiet") || !strings.Contains(got, "level=WARN msg=loud") {
		t.Fatalf("text log at warn: %q", got)
	}
	if cfg, err := loadConfig([]string{"--slow-query", "0"}, none); err != nil || cfg.SlowQuery >= 0 {
		t.Errorf("--slow-query 0: %v, %v; want the log off (negative)", cfg.SlowQuery, err)
	}
	if cfg, err := loadConfig(nil, none); err != nil || cfg.SlowQuery != time.Second || cfg.LogFormat != "text" || cfg.LogLevel != "info" {
		t.Errorf("defaults %+v, %v", cfg, err)
	}
	for _, args := range [][]string{{"--log-format", "xml"}, {"--log-level", "loud"}} {
		if _, err := loadConfig(args, none); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
}
