package node

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestConfigClientLimits(t *testing.T) {
	var c Config
	c.EnsureDefaults()
	if l := c.Limits; l.QueryMemory != "50%" || l.QueriesPerUser != 8 || l.SubscriptionsPerSession != 64 || l.PreparedPerSession != 256 {
		t.Fatalf("defaults %+v", l)
	}
	if c.Audit.Path != filepath.Join(c.DataDir, "audit.jsonl") || c.Audit.MaxSize != "64MiB" {
		t.Fatalf("audit defaults %+v", c.Audit)
	}
	for _, tc := range []struct {
		v    string
		want int64
	}{{"50%", 500 << 20}, {"100%", 1000 << 20}, {"256MiB", 256 << 20}, {"off", 0}, {"OFF", 0}} {
		l := LimitsConfig{QueryMemory: tc.v}
		if got, err := l.queryMemory(1000 << 20); err != nil || got != tc.want {
			t.Errorf("query memory %q = %d, %v; want %d", tc.v, got, err, tc.want)
		}
	}
	for _, tc := range []struct{ v, want string }{
		{"0%", "percentage"}, {"150%", "percentage"}, {"lots", "want a size"},
		{"8MiB", "at least 16MiB"}, {"2GiB", "at most the engine memory"},
	} {
		bad := Config{EngineMemory: "1GiB", Limits: LimitsConfig{QueryMemory: tc.v}}
		bad.EnsureDefaults()
		if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("query memory %q: %v, want an error saying %q", tc.v, err, tc.want)
		}
	}
	bad := Config{Audit: AuditConfig{MaxSize: "1KiB"}}
	bad.EnsureDefaults()
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "audit log max size") {
		t.Errorf("audit max size 1KiB: %v", err)
	}
}
