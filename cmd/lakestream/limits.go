package main

import (
	"flag"

	"github.com/lakestream/lakestream/node"
)

// bindLimitFlags binds the per-client resource limits and the audit log
// (docs/security.md, "Resource limits" and "Audit log").
func bindLimitFlags(fs *flag.FlagSet, l *node.LimitsConfig, a *node.AuditConfig) {
	fs.StringVar(&l.QueryMemory, "query-memory-limit", "50%", `stop a query holding more than this much engine memory: a size, a percentage of --engine-memory, or "off"`)
	fs.IntVar(&l.QueriesPerUser, "max-queries-per-user", 8, "queries one user may run at once (per client connection with authentication off); -1 for no cap")
	fs.IntVar(&l.SubscriptionsPerSession, "max-subscriptions-per-session", 64, "change streams one client connection may have open at once; -1 for no cap")
	fs.IntVar(&l.PreparedPerSession, "max-prepared-per-session", 256, "prepared statements one client connection may hold; -1 for no cap")
	fs.StringVar(&a.Path, "audit-log", "", `audit log file, JSON lines (default: <data-dir>/audit.jsonl); "off" keeps events in memory only (lakestream.audit)`)
	fs.StringVar(&a.MaxSize, "audit-log-max-size", "64MiB", "rotate the audit log file at this size; four rotated files are kept")
}
