package flightsrv

import (
	"context"
	"strings"

	"github.com/lakestream/lakestream/audit"
	"github.com/lakestream/lakestream/auth"
	"github.com/lakestream/lakestream/catalog"
	"github.com/lakestream/lakestream/planner"
)

// execDDL applies a DDL statement and records it in the audit log,
// applied or refused, with the caller and its address: every DDL
// statement, whichever call carried it, comes through here.
func (s *Server) execDDL(ctx context.Context, st *planner.Statement) (int64, error) {
	n, err := s.applyDDL(ctx, st.DDL) // authorize.go: the privilege check, the statement, the owner
	s.audit(ctx, auditKind(st), st.SQL, err)
	return n, err
}

// audit records an event of the call in ctx: its user and peer address.
// Statements are redacted by the log (audit.Redact).
func (s *Server) audit(ctx context.Context, kind audit.Kind, stmt string, err error) {
	if s.opts.Audit == nil {
		return
	}
	id, _ := auth.FromContext(ctx)
	s.opts.Audit.Record(ctx, audit.Event{Kind: kind, User: id.User, Peer: peerAddr(ctx), Statement: stmt, Outcome: audit.Outcome(err)})
}

// auditKind is the kind of a DDL statement's event: user statements and
// privilege statements (GRANT, REVOKE, roles) apart from the rest.
func auditKind(st *planner.Statement) audit.Kind {
	switch st.DDL.(type) {
	case *catalog.CreateUser, *catalog.AlterUser, *catalog.DropUser:
		return audit.KindUser
	case *catalog.CreateRole, *catalog.DropRole, *catalog.GrantRoles, *catalog.GrantPrivileges:
		return audit.KindPrivilege
	case *catalog.CreateAPIKey, *catalog.DropAPIKey:
		return audit.KindAPIKey
	}
	f := strings.Fields(strings.ToUpper(st.SQL))
	switch {
	case len(f) > 0 && (f[0] == "GRANT" || f[0] == "REVOKE"):
		return audit.KindPrivilege
	case len(f) > 1 && (f[0] == "CREATE" || f[0] == "DROP" || f[0] == "ALTER") && f[1] == "ROLE":
		return audit.KindPrivilege
	}
	return audit.KindDDL
}
