package auth

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"strings"
	"time"
)

// A bearer token is signed, not stored: the node keeps no session table,
// and a token survives a restart as long as the signing key (a file in
// the data directory) does. It names the user by ID and the user's
// password generation, so dropping the user or changing the password
// revokes it: every call looks the user up.
//
//	token   = "lst1_" base64url(payload || mac), unpadded
//	payload = version (1 byte, 1) | user id (8, big endian)
//	          | generation (8) | issued at (8, Unix seconds)
//	          | expires at (8, Unix seconds)
//	mac     = HMAC-SHA256(key, payload), 32 bytes
const (
	tokenPrefix     = "lst1_"
	tokenVersion    = 1
	tokenPayloadLen = 1 + 8 + 8 + 8 + 8
	tokenMACLen     = sha256.Size
)

// KeyBytes is the length of the token signing key.
const KeyBytes = 32

var errBadToken = errors.New("invalid bearer token")

// claims is what a token says.
type claims struct {
	userID, generation int64
	issued, expires    time.Time
}

func signToken(key []byte, c claims) string {
	buf := make([]byte, tokenPayloadLen, tokenPayloadLen+tokenMACLen)
	buf[0] = tokenVersion
	binary.BigEndian.PutUint64(buf[1:], uint64(c.userID))
	binary.BigEndian.PutUint64(buf[9:], uint64(c.generation))
	binary.BigEndian.PutUint64(buf[17:], uint64(c.issued.Unix()))
	binary.BigEndian.PutUint64(buf[25:], uint64(c.expires.Unix()))
	m := hmac.New(sha256.New, key)
	m.Write(buf)
	buf = m.Sum(buf)
	return tokenPrefix + base64.RawURLEncoding.EncodeToString(buf)
}

// parseToken checks a token's signature (in constant time) and returns
// its claims; expiry and revocation are the caller's to check.
func parseToken(key []byte, tok string) (claims, error) {
	body, ok := strings.CutPrefix(tok, tokenPrefix)
	if !ok || base64.RawURLEncoding.DecodedLen(len(body)) != tokenPayloadLen+tokenMACLen {
		return claims{}, errBadToken
	}
	raw, err := base64.RawURLEncoding.DecodeString(body)
	if err != nil || len(raw) != tokenPayloadLen+tokenMACLen || raw[0] != tokenVersion {
		return claims{}, errBadToken
	}
	m := hmac.New(sha256.New, key)
	m.Write(raw[:tokenPayloadLen])
	if !hmac.Equal(m.Sum(nil), raw[tokenPayloadLen:]) {
		return claims{}, errBadToken
	}
	return claims{
		userID:     int64(binary.BigEndian.Uint64(raw[1:])),
		generation: int64(binary.BigEndian.Uint64(raw[9:])),
		issued:     time.Unix(int64(binary.BigEndian.Uint64(raw[17:])), 0),
		expires:    time.Unix(int64(binary.BigEndian.Uint64(raw[25:])), 0),
	}, nil
}
