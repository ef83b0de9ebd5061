package auth

import (
	"crypto/hmac"
	"crypto/sha256"
)

// TicketKey is the key that signs Flight tickets (flightsrv), derived
// from the token key so that the two never sign the same bytes: a ticket
// is no token, and a token no ticket.
func (s *Service) TicketKey() []byte {
	m := hmac.New(sha256.New, s.cfg.Key)
	m.Write([]byte("lakestream flight ticket key v1"))
	return m.Sum(nil)
}
