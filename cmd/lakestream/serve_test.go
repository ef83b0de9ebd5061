package main

import (
	"os"
	"path/filepath"
	"testing"
)

func TestConfigPrecedence(t *testing.T) {
	file := filepath.Join(t.TempDir(), "lakestream.yaml")
	if err := os.WriteFile(file, []byte("data-dir: /from/file\nlisten: 127.0.0.1:1\nhttp: 127.0.0.1:2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"LAKESTREAM_LISTEN": "127.0.0.1:3", "LAKESTREAM_SYNC": "never"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	cfg, err := loadConfig([]string{"--config", file, "--http", "127.0.0.1:4"}, lookup)
	if err != nil {
		t.Fatal(err)
	}
	// flag > env > file > default
	if cfg.HTTP != "127.0.0.1:4" || cfg.Listen != "127.0.0.1:3" || cfg.DataDir != "/from/file" || cfg.Sync != "never" || cfg.DefaultBuckets != 1 {
		t.Fatalf("config %+v", cfg)
	}
}

func TestConfigErrors(t *testing.T) {
	none := func(string) (string, bool) { return "", false }
	file := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(file, []byte("colour: blue\n"), 0o644)
	for _, args := range [][]string{{"--config", file}, {"--no-such-flag"}, {"extra"}, {"--default-buckets", "x"}} {
		if _, err := loadConfig(args, none); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
	bad := func(k string) (string, bool) { return "many", k == "LAKESTREAM_DEFAULT_BUCKETS" }
	if _, err := loadConfig(nil, bad); err == nil {
		t.Error("bad environment value accepted")
	}
}
