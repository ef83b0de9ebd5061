package auth

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/crypto/argon2"
)

// HashParams are argon2id's cost parameters. A stored hash records the
// parameters it was made with, so changing them affects new passwords
// only.
type HashParams struct {
	// Memory in KiB. Default 65536 (64 MiB).
	Memory uint32
	// Time is the number of passes. Default 3.
	Time uint32
	// Threads is the parallelism. Default 4.
	Threads uint8
}

// DefaultHashParams are RFC 9106's second recommended option (section
// 4): 64 MiB, 3 passes, 4 lanes, a 16-byte salt, a 32-byte key. Their
// cost on a login is in docs/benchmarks.md.
var DefaultHashParams = HashParams{Memory: 64 << 10, Time: 3, Threads: 4}

const (
	saltBytes = 16
	keyBytes  = 32
)

func (p *HashParams) ensureDefaults() {
	if p.Memory == 0 {
		p.Memory = DefaultHashParams.Memory
	}
	if p.Time == 0 {
		p.Time = DefaultHashParams.Time
	}
	if p.Threads == 0 {
		p.Threads = DefaultHashParams.Threads
	}
}

// hashPassword hashes password with a fresh random salt into the PHC
// string format: $argon2id$v=19$m=<KiB>,t=<passes>,p=<lanes>$<salt>$<key>,
// salt and key in unpadded standard base64.
func hashPassword(password string, p HashParams) (string, error) {
	salt := make([]byte, saltBytes)
	if _, err := rand.Read(salt); err != nil {
		return "", fmt.Errorf("salt: %w", err)
	}
	key := argon2.IDKey([]byte(password), salt, p.Time, p.Memory, p.Threads, keyBytes)
	b64 := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, p.Memory, p.Time, p.Threads,
		b64.EncodeToString(salt), b64.EncodeToString(key)), nil
}

var errBadHash = errors.New("stored password hash is not an argon2id hash")

// checkPassword reports whether password matches the encoded hash,
// comparing in constant time.
func checkPassword(password, encoded string) (bool, error) {
	p, salt, key, err := decodeHash(encoded)
	if err != nil {
		return false, err
	}
	got := argon2.IDKey([]byte(password), salt, p.Time, p.Memory, p.Threads, uint32(len(key)))
	return subtle.ConstantTimeCompare(got, key) == 1, nil
}

// decodeHash reads the PHC string hashPassword writes.
func decodeHash(encoded string) (HashParams, []byte, []byte, error) {
	var p HashParams
	parts := strings.Split(encoded, "$")
	if len(parts) != 6 || parts[1] != "argon2id" {
		return p, nil, nil, errBadHash
	}
	var version int
	if _, err := fmt.Sscanf(parts[2], "v=%d", &version); err != nil || version != argon2.Version {
		return p, nil, nil, fmt.Errorf("%w: version %q", errBadHash, parts[2])
	}
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &p.Memory, &p.Time, &p.Threads); err != nil {
		return p, nil, nil, fmt.Errorf("%w: parameters %q", errBadHash, parts[3])
	}
	// Bounds keep a damaged or hostile row from costing the node its
	// memory: 4 GiB, 64 passes.
	if p.Memory == 0 || p.Memory > 4<<20 || p.Time == 0 || p.Time > 64 || p.Threads == 0 {
		return p, nil, nil, fmt.Errorf("%w: parameters %q out of range", errBadHash, parts[3])
	}
	salt, err1 := base64.RawStdEncoding.DecodeString(parts[4])
	key, err2 := base64.RawStdEncoding.DecodeString(parts[5])
	if err1 != nil || err2 != nil || len(salt) < 8 || len(key) < 16 {
		return p, nil, nil, fmt.Errorf("%w: salt or key", errBadHash)
	}
	return p, salt, key, nil
}
