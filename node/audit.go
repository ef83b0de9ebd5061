package node

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/lakestream/lakestream/audit"
	"github.com/lakestream/lakestream/catalog"
)

// AuditConfig is the audit log (docs/security.md, "Audit log"): logins,
// failed logins, DDL, user and privilege statements, with who, when and
// from where. Each field documents its default.
type AuditConfig struct {
	// Path is the JSON-lines file, or "off" to keep the events in memory
	// only (the system table lakestream.audit shows them either way).
	// Default "<data-dir>/audit.jsonl".
	Path string
	// MaxSize rotates the file once it would grow past this size; four
	// rotated files (audit.jsonl.1 … .4) are kept. Default "64MiB".
	MaxSize string
}

func (a *AuditConfig) ensureDefaults(dataDir string) {
	if a.Path == "" {
		a.Path = filepath.Join(dataDir, "audit.jsonl")
	}
	if a.MaxSize == "" {
		a.MaxSize = "64MiB"
	}
}

func (a *AuditConfig) validate() []error {
	if n, err := catalog.ParseSize(a.MaxSize); err != nil || n < 4<<10 {
		return []error{fmt.Errorf("audit log max size %q: want a size of at least 4KiB, such as 64MiB", a.MaxSize)}
	}
	return nil
}

// openAudit opens the audit log; its events reach auth (logins) and
// flightsrv (DDL), and the system table lakestream.audit reads them.
func (n *Node) openAudit() error {
	a := n.cfg.Audit
	opts := audit.Options{Logger: n.cfg.Logger}
	if !strings.EqualFold(a.Path, "off") {
		opts.Path = a.Path
	}
	opts.MaxBytes, _ = catalog.ParseSize(a.MaxSize)
	l, err := audit.Open(opts)
	if err != nil {
		return err
	}
	n.audit = l
	return nil
}
