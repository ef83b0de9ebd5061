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
	if got := cf.authorization(); got != "Basic YWxpY2U6cHc=" {
		t.Fatalf("authorization = %q", got)
	}
	if cf.useTLS() {
		t.Fatal("TLS without --tls or --tls-ca")
	}
}

// Without --user, an API key in $LAKESTREAM_API_KEY is the bearer token.
func TestClientFlagsAPIKey(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	cf := bindClientFlags(fs)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	env := func(k string) (string, bool) {
		return map[string]string{"LAKESTREAM_API_KEY": "lsk1_k"}[k], k == "LAKESTREAM_API_KEY"
	}
	if err := cf.load(env); err != nil {
		t.Fatal(err)
	}
	if got := cf.authorization(); got != "Bearer lsk1_k" {
		t.Fatalf("authorization = %q", got)
	}
}
