package catalog

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sort"
	"time"
)

// API keys are long-lived credentials of services (docs/security.md, "API
// keys"): each authenticates as one user until it expires or is dropped.
// The catalog stores a key's hash, never the key; package auth makes the
// key, hashes it and checks it.

// ErrAPIKeyExists and ErrAPIKeyNotFound are the kinds of the API key
// errors.
var (
	ErrAPIKeyExists   = errors.New("api key already exists")
	ErrAPIKeyNotFound = errors.New("api key not found")
)

// APIKey is one key. Immutable.
type APIKey struct {
	ID   int64
	Name string
	// UserID is the user the key authenticates as; dropping the user
	// drops its keys.
	UserID int64
	// Hash is the hex SHA-256 of the key (package auth's).
	Hash string
	// CreatedBy is the id of the user who created it (0: the anonymous
	// superuser of a node without authentication).
	CreatedBy int64
	CreatedAt time.Time
	// ExpiresAt is when the key stops working; zero: never.
	ExpiresAt time.Time
}

// CreateAPIKey is CREATE API KEY name [FOR [USER] user] [VALID UNTIL
// 'timestamp'].
type CreateAPIKey struct {
	Name string
	// User is the user the key authenticates as; "" is the caller.
	User string
	// ValidUntil is the timestamp as written; "" is never. Package auth
	// reads it.
	ValidUntil string
}

// DropAPIKey is DROP API KEY [IF EXISTS] name.
type DropAPIKey struct {
	Name     string
	IfExists bool
}

func (*CreateAPIKey) statement() {}
func (*DropAPIKey) statement()   {}

// APIKeyByHash returns the key whose hash is hash.
func (c *Catalog) APIKeyByHash(hash string) (*APIKey, bool) {
	k, ok := c.userSet().keysByHash[hash]
	return k, ok
}

// APIKey returns the key named name.
func (c *Catalog) APIKey(name string) (*APIKey, bool) {
	k, ok := c.userSet().keysByName[name]
	return k, ok
}

// APIKeys returns every key, by name.
func (c *Catalog) APIKeys() []*APIKey {
	set := c.userSet()
	out := make([]*APIKey, 0, len(set.keysByName))
	for _, k := range set.keysByName {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// CreateAPIKey stores a new key of the user userID by its hash.
func (c *Catalog) CreateAPIKey(ctx context.Context, name string, userID int64, hash string, createdBy int64, expires time.Time) (*APIKey, error) {
	if err := checkUserName(name); err != nil {
		return nil, fmt.Errorf("api key name: %w", err)
	}
	var out *APIKey
	err := c.write(ctx, func(w *change) error {
		if _, ok := w.users.keysByName[name]; ok {
			return errorf(ErrAPIKeyExists, "api key %s already exists", quoteName(name))
		}
		if _, ok := w.users.byID[userID]; !ok {
			return errorf(ErrUserNotFound, "user %d does not exist", userID)
		}
		now := c.now()
		k := &APIKey{Name: name, UserID: userID, Hash: hash, CreatedBy: createdBy, CreatedAt: now, ExpiresAt: expires}
		w.what = "create api key " + quoteName(name)
		var err error
		k.ID, err = w.insertID(`INSERT INTO api_keys (name, user_id, key_hash, created_by, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)`,
			name, userID, hash, createdBy, micros(now), expiryMicros(expires))
		if err != nil {
			return err
		}
		w.nextUsers = w.users.withKey(k, "")
		out = k
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// DropAPIKey deletes a key: the calls it authenticates are refused from
// then on. With ifExists a missing key returns (nil, nil).
func (c *Catalog) DropAPIKey(ctx context.Context, name string, ifExists bool) (*APIKey, error) {
	var dropped *APIKey
	err := c.write(ctx, func(w *change) error {
		old, ok := w.users.keysByName[name]
		switch {
		case !ok && ifExists:
			return nil
		case !ok:
			return errorf(ErrAPIKeyNotFound, "api key %s does not exist", quoteName(name))
		}
		w.what = "drop api key " + quoteName(name)
		if err := w.exec(`DELETE FROM api_keys WHERE id = ?`, old.ID); err != nil {
			return err
		}
		w.nextUsers = w.users.withKey(nil, name)
		dropped = old
		return nil
	})
	if err != nil {
		return nil, err
	}
	return dropped, nil
}

func expiryMicros(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return micros(t)
}

// withKey returns a copy of set with k put in (if not nil) and the key
// named drop taken out (if not "").
func (set *userSet) withKey(k *APIKey, drop string) *userSet {
	next := &userSet{byName: set.byName, byID: set.byID, keysByName: maps.Clone(set.keysByName), keysByHash: maps.Clone(set.keysByHash)}
	if next.keysByName == nil {
		next.keysByName, next.keysByHash = map[string]*APIKey{}, map[string]*APIKey{}
	}
	if old, ok := next.keysByName[drop]; ok && drop != "" {
		delete(next.keysByName, drop)
		delete(next.keysByHash, old.Hash)
	}
	if k != nil {
		next.keysByName[k.Name], next.keysByHash[k.Hash] = k, k
	}
	return next
}

// withoutKeysOf returns a copy of set without the keys of user id.
func (set *userSet) withoutKeysOf(id int64) *userSet {
	next := set.withKey(nil, "")
	for name, k := range set.keysByName {
		if k.UserID == id {
			delete(next.keysByName, name)
			delete(next.keysByHash, k.Hash)
		}
	}
	return next
}

// loadAPIKeys reads every key into set at start.
func loadAPIKeys(ctx context.Context, db querier, set *userSet) error {
	rows, err := db.QueryContext(ctx, `SELECT id, name, user_id, key_hash, created_by, created_at, expires_at FROM api_keys`)
	if err != nil {
		return fmt.Errorf("read api keys: %w", err)
	}
	defer rows.Close()
	set.keysByName, set.keysByHash = map[string]*APIKey{}, map[string]*APIKey{}
	for rows.Next() {
		var k APIKey
		var created, expires int64
		if err := rows.Scan(&k.ID, &k.Name, &k.UserID, &k.Hash, &k.CreatedBy, &created, &expires); err != nil {
			return fmt.Errorf("read api keys: %w", err)
		}
		k.CreatedAt = fromMicros(created)
		if expires != 0 {
			k.ExpiresAt = fromMicros(expires)
		}
		set.keysByName[k.Name], set.keysByHash[k.Hash] = &k, &k
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read api keys: %w", err)
	}
	return nil
}

// parsing: CREATE API KEY, DROP API KEY (parser.go dispatches here).

func (p *parser) createAPIKey() (Statement, error) {
	s := &CreateAPIKey{}
	var err error
	if s.Name, err = p.ident("an API key name"); err != nil {
		return nil, err
	}
	if p.acceptKeywords("for") {
		p.acceptKeywords("user")
		if s.User, err = p.ident("a user name"); err != nil {
			return nil, err
		}
	}
	if p.acceptKeywords("valid", "until") {
		tok := p.peek()
		if tok.kind != tokString {
			return nil, p.errAt(tok, "expected the expiry as a 'timestamp' literal")
		}
		p.next()
		s.ValidUntil = tok.val
	}
	return s, nil
}

func (p *parser) dropAPIKey() (Statement, error) {
	s := &DropAPIKey{IfExists: p.acceptKeywords("if", "exists")}
	var err error
	s.Name, err = p.ident("an API key name")
	return s, err
}
