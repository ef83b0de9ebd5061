package flightsrv

// SealRawTicket signs body, a ticket's JSON, with s's ticket key, as the
// server signs the tickets it issues: tests forge tickets with it to reach
// the checks behind the signature.
func SealRawTicket(s *Server, body []byte) []byte {
	out := append([]byte(nil), ticketMagic...)
	out = append(out, ticketMAC(s.ticketKey, body)...)
	return append(out, body...)
}
