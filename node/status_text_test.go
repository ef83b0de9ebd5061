package node

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestHumanUnits(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{HumanBytes(512), "512 B"},
		{HumanBytes(1536), "1.50 KiB"},
		{HumanBytes(12.3 * (1 << 20)), "12.3 MiB"},
		{HumanBytes(118 * (1 << 30)), "118 GiB"},
		{HumanCount(999), "999"},
		{HumanCount(9999), "9,999"},
		{HumanCount(12345), "12.3k"},
		{HumanCount(4_560_000), "4.56M"},
		{HumanRate(0, "rows"), "0 rows/s"},
		{HumanRate(3.5, "rows"), "3.5 rows/s"},
		{HumanRate(1200, "rows"), "1,200 rows/s"},
		{HumanRate(12000, "rows"), "12.0k rows/s"},
		{HumanDuration(28.195394649), "28 s"},
		{HumanDuration(2.5), "2.5 s"},
		{HumanDuration(0.012), "12 ms"},
		{HumanDuration(0.00085), "850 µs"},
		{HumanDuration(184), "3 min 4 s"},
		{HumanDuration(7500), "2 h 5 min"},
		{HumanDuration(3*86400 + 4*3600), "3 d 4 h"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

// The terminal summary lists the node's tables with their rows and sizes
// in the page's units.
func TestWriteStatus(t *testing.T) {
	n, stop, done := startNode(t, t.TempDir())
	defer func() { stop(); <-done }()
	mustExec(t, client(t, n.Addr()), "CREATE TABLE clicks (id BIGINT)", "INSERT INTO clicks SELECT range FROM range(12345)")
	var out bytes.Buffer
	if err := WriteStatus(&out, n.status(context.Background())); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Lakestream dev, up ", "default.clicks", "12.3k", " KiB", "1 tables, 12.3k rows", "TABLE"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("status lacks %q:\n%s", want, out.String())
		}
	}
}
