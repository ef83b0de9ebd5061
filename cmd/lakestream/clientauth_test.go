package main

import (
	"flag"
	"strings"
	"testing"
)

func TestClientFlags(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	cf := bindClientFlags(fs)
	if err := fs.Parse([]string{"--user", "alice"}); err != nil {
		t.Fatal(err)
	}
	none := func(string) (string, bool) { return "", false }
	if err := cf.load(none); err == nil || !strings.Contains(err.Error(), "LAKESTREAM_PASSWORD") {
		t.Fatalf("no password: %v", err)
	}
	if err := cf.load(func(string) (string, bool) { return "pw", true }); err != nil {
		t.Fatal(err)
	}
	if got := cf.basic(); got != "Basic YWxpY2U6cHc=" {
		t.Fatalf("basic = %q", got)
	}
	if cf.useTLS() {
		t.Fatal("TLS without --tls or --tls-ca")
	}
}
