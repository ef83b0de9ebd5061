package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"slices"
	"strings"
	"testing"
)

func TestParseInterspersed(t *testing.T) {
	for _, tt := range []struct {
		args   []string
		pos    []string
		format string
	}{
		{[]string{"SELECT 1"}, []string{"SELECT 1"}, "table"},
		{[]string{"--format", "csv", "SELECT 1"}, []string{"SELECT 1"}, "csv"},
		{[]string{"SELECT 1", "--format", "csv"}, []string{"SELECT 1"}, "csv"},
		{[]string{"SELECT 1", "--format=json", "x"}, []string{"SELECT 1", "x"}, "json"},
		{[]string{"--", "--format"}, []string{"--format"}, "table"},
		{[]string{"a", "--", "-b", "--format", "csv"}, []string{"a", "-b", "--format", "csv"}, "table"},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		format := fs.String("format", "table", "")
		pos, err := parseInterspersed(fs, tt.args)
		if err != nil || !slices.Equal(pos, tt.pos) || *format != tt.format {
			t.Errorf("%q: positional %q, format %q, %v; want %q, %q", tt.args, pos, *format, err, tt.pos, tt.format)
		}
	}
}

// -h is a request for the usage, not an error: main exits 0 on it.
func TestHelpIsNotAnError(t *testing.T) {
	none := func(string) (string, bool) { return "", false }
	if _, err := loadConfig([]string{"-h"}, none); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("serve -h: %v, want flag.ErrHelp", err)
	}
	if err := runSQL(context.Background(), []string{"--help"}, io.Discard); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("sql --help: %v, want flag.ErrHelp", err)
	}
	err := runSQL(context.Background(), []string{"SELECT 1", "SELECT 2"}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "want one statement") {
		t.Errorf("two statements: %v", err)
	}
}

func TestCommandTag(t *testing.T) {
	for stmt, want := range map[string]string{
		"INSERT INTO t VALUES (1)":     "INSERT 0 3",
		"  delete from t where id = 1": "DELETE 3",
		"UPDATE t SET v = 1":           "UPDATE 3",
		"CREATE TABLE t (a INT)":       "OK",
		"":                             "OK",
	} {
		if got := commandTag(stmt, 3); got != want {
			t.Errorf("%q: %q, want %q", stmt, got, want)
		}
	}
}
