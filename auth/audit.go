package auth

import (
	"context"

	"github.com/lakestream/lakestream/audit"
)

// audit records a login or a failed login (Config.Audit). A login
// answered from the cache of verified credentials is not recorded again:
// a client that sends Basic credentials on every call would fill the log
// with one event a call; the first login of the minute is recorded.
// The password is never part of the event.
func (s *Service) audit(ctx context.Context, kind audit.Kind, user, peer string, err error) {
	s.cfg.Audit.Record(ctx, audit.Event{Kind: kind, User: user, Peer: peer, Outcome: audit.Outcome(err)})
}
