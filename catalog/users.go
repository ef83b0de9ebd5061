package catalog

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sort"
	"strings"
	"time"
)

// Users are the accounts that may log in (docs/security.md). The catalog
// stores them and their password hashes; it neither hashes nor checks a
// password: that is package auth's, which hashes before it calls
// CreateUser or SetPassword.

// ErrUserExists and ErrUserNotFound are the kinds of the user errors.
var (
	ErrUserExists   = errors.New("user already exists")
	ErrUserNotFound = errors.New("user not found")
)

// AdminUser is the name of the first superuser, created at start-up from
// the configured admin password.
const AdminUser = "admin"

// User is one account. Immutable: a change stores a new one.
type User struct {
	// ID is never reused: a user dropped and created again has a new one,
	// so credentials issued to the old one name nobody.
	ID   int64
	Name string
	// PasswordHash is the encoded hash of the password (package auth's
	// format, which names its algorithm and parameters).
	PasswordHash string
	// Superuser may manage users (and, later, bypasses privileges).
	Superuser bool
	// Generation counts the user's password changes: a token records the
	// generation it was issued under and dies with it.
	Generation int64
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

// CreateUser is CREATE USER [IF NOT EXISTS] name WITH PASSWORD 'secret'.
type CreateUser struct {
	Name        string
	Password    string
	IfNotExists bool
}

// AlterUser is ALTER USER name [WITH] PASSWORD 'secret'.
type AlterUser struct {
	Name     string
	Password string
}

// DropUser is DROP USER [IF EXISTS] name.
type DropUser struct {
	Name     string
	IfExists bool
}

func (*CreateUser) statement() {}
func (*AlterUser) statement()  {}
func (*DropUser) statement()   {}

// userSet is an immutable copy of the users, replaced after each change.
type userSet struct {
	byName map[string]*User
	byID   map[int64]*User
	// keysByName and keysByHash are the API keys (apikeys.go).
	keysByName map[string]*APIKey
	keysByHash map[string]*APIKey
}

// User returns the user named name (names are case-sensitive, as written
// or lower-cased by the parser when unquoted).
func (c *Catalog) User(name string) (*User, bool) {
	u, ok := c.userSet().byName[name]
	return u, ok
}

// UserByID returns the user with id.
func (c *Catalog) UserByID(id int64) (*User, bool) {
	u, ok := c.userSet().byID[id]
	return u, ok
}

// Users returns every user, by name.
func (c *Catalog) Users() []*User {
	set := c.userSet()
	out := make([]*User, 0, len(set.byName))
	for _, u := range set.byName {
		out = append(out, u)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func (c *Catalog) userSet() *userSet {
	if s := c.users.Load(); s != nil {
		return s
	}
	return &userSet{}
}

// CreateUser stores a new user with an already hashed password; with
// ifNotExists an existing user is left as it is and returned with
// created false.
func (c *Catalog) CreateUser(ctx context.Context, name, passwordHash string, superuser, ifNotExists bool) (u *User, created bool, err error) {
	if err := checkUserName(name); err != nil {
		return nil, false, err
	}
	err = c.write(ctx, func(w *change) error {
		if old, ok := w.users.byName[name]; ok {
			if ifNotExists {
				u = old
				return nil
			}
			return errorf(ErrUserExists, "user %s already exists", quoteName(name))
		}
		if _, ok := w.grants.roles[name]; ok {
			return errorf(ErrUserExists, "user %s already exists: a role has that name", quoteName(name))
		}
		now := c.now()
		n := &User{Name: name, PasswordHash: passwordHash, Superuser: superuser, CreatedAt: now, UpdatedAt: now}
		w.what = "create user " + quoteName(name)
		var err error
		n.ID, err = w.insertID(`INSERT INTO users (name, password_hash, superuser, generation, created_at, updated_at) VALUES (?, ?, ?, 0, ?, ?)`,
			name, passwordHash, superuser, micros(now), micros(now))
		if err != nil {
			return err
		}
		w.nextUsers = w.users.with(n, "")
		u, created = n, true
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	return u, created, nil
}

// SetPassword replaces a user's password hash and advances its
// generation, which revokes every token issued to the user before.
func (c *Catalog) SetPassword(ctx context.Context, name, passwordHash string) (*User, error) {
	var out *User
	err := c.write(ctx, func(w *change) error {
		old, ok := w.users.byName[name]
		if !ok {
			return errorf(ErrUserNotFound, "user %s does not exist", quoteName(name))
		}
		u := *old
		u.PasswordHash, u.Generation, u.UpdatedAt = passwordHash, old.Generation+1, c.now()
		w.what = "alter user " + quoteName(name)
		if err := w.exec(`UPDATE users SET password_hash = ?, generation = ?, updated_at = ? WHERE id = ?`,
			u.PasswordHash, u.Generation, micros(u.UpdatedAt), u.ID); err != nil {
			return err
		}
		w.nextUsers = w.users.with(&u, "")
		out = &u
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// DropUser deletes a user, which revokes its tokens, with its privileges,
// role memberships and API keys (what it owns is left without an owner); with
// ifExists a missing user returns (nil, nil).
func (c *Catalog) DropUser(ctx context.Context, name string, ifExists bool) (*User, error) {
	var dropped *User
	err := c.write(ctx, func(w *change) error {
		old, ok := w.users.byName[name]
		switch {
		case !ok && ifExists:
			return nil
		case !ok:
			return errorf(ErrUserNotFound, "user %s does not exist", quoteName(name))
		}
		w.what = "drop user " + quoteName(name)
		if err := w.exec(`DELETE FROM users WHERE id = ?`, old.ID); err != nil {
			return err
		}
		if err := w.forgetUser(old.ID); err != nil { // grants_store.go
			return err
		}
		if err := w.exec(`DELETE FROM api_keys WHERE user_id = ?`, old.ID); err != nil {
			return err
		}
		w.nextUsers = w.users.with(nil, name).withoutKeysOf(old.ID)
		dropped = old
		return nil
	})
	if err != nil {
		return nil, err
	}
	return dropped, nil
}

// with returns a copy of set with u put in (if not nil) and the user
// named drop taken out (if not "").
func (set *userSet) with(u *User, drop string) *userSet {
	next := &userSet{byName: maps.Clone(set.byName), byID: maps.Clone(set.byID), keysByName: set.keysByName, keysByHash: set.keysByHash}
	if next.byName == nil {
		next.byName, next.byID = map[string]*User{}, map[int64]*User{}
	}
	if old, ok := next.byName[drop]; ok && drop != "" {
		delete(next.byName, drop)
		delete(next.byID, old.ID)
	}
	if u != nil {
		next.byName[u.Name], next.byID[u.ID] = u, u
	}
	return next
}

// loadUsers reads every user at start.
func loadUsers(ctx context.Context, db querier) (*userSet, error) {
	rows, err := db.QueryContext(ctx, `SELECT id, name, password_hash, superuser, generation, created_at, updated_at FROM users`)
	if err != nil {
		return nil, fmt.Errorf("read users: %w", err)
	}
	defer rows.Close()
	set := &userSet{byName: map[string]*User{}, byID: map[int64]*User{}}
	for rows.Next() {
		var u User
		var created, updated int64
		if err := rows.Scan(&u.ID, &u.Name, &u.PasswordHash, &u.Superuser, &u.Generation, &created, &updated); err != nil {
			return nil, fmt.Errorf("read users: %w", err)
		}
		u.CreatedAt, u.UpdatedAt = fromMicros(created), fromMicros(updated)
		set.byName[u.Name], set.byID[u.ID] = &u, &u
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read users: %w", err)
	}
	return set, loadAPIKeys(ctx, db, set) // apikeys.go
}

// checkUserName keeps user names printable and of a sane length.
func checkUserName(name string) error {
	if name == "" {
		return invalidf("a user name cannot be empty")
	}
	if err := checkNameLength("user", name); err != nil {
		return err
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f || r == ':' {
			return invalidf("user name %s must not contain %q: it cannot be sent in a Basic authorization header", quoteName(name), r)
		}
	}
	return nil
}

// parsing: CREATE USER, ALTER USER, DROP USER (parser.go dispatches here).

func (p *parser) createUser() (Statement, error) {
	s := &CreateUser{IfNotExists: p.acceptKeywords("if", "not", "exists")}
	var err error
	if s.Name, err = p.ident("a user name"); err != nil {
		return nil, err
	}
	if err := p.expectKeywords("with"); err != nil {
		return nil, err
	}
	s.Password, err = p.password()
	return s, err
}

func (p *parser) alterUser() (Statement, error) {
	s := &AlterUser{}
	var err error
	if s.Name, err = p.ident("a user name"); err != nil {
		return nil, err
	}
	p.acceptKeywords("with")
	s.Password, err = p.password()
	return s, err
}

func (p *parser) dropUser() (Statement, error) {
	s := &DropUser{IfExists: p.acceptKeywords("if", "exists")}
	var err error
	s.Name, err = p.ident("a user name")
	return s, err
}

// password reads PASSWORD 'secret'.
func (p *parser) password() (string, error) {
	if err := p.expectKeywords("password"); err != nil {
		return "", err
	}
	tok := p.peek()
	if tok.kind != tokString {
		return "", p.errAt(tok, "expected the password as a 'string literal'")
	}
	p.next()
	if tok.val == "" {
		return "", p.errAt(tok, "the password cannot be empty")
	}
	return tok.val, nil
}

// RedactPasswords returns sql with the string literal after each PASSWORD
// keyword replaced by '***', for logs and the status page: the text of
// CREATE USER and ALTER USER never leaves the node with its password. It
// is cheap for the statements without "password" in them, which it
// returns as they are; text it cannot tokenize is redacted from the
// keyword on.
func RedactPasswords(sql string) string {
	if !containsFold(sql, "password") {
		return sql
	}
	lx := &lexer{src: sql}
	var b strings.Builder
	last, afterKeyword := 0, false
	for {
		at := lx.pos
		tok, err := lx.next()
		if err != nil {
			// Unlexable from here (an unterminated string): keep nothing
			// of it, it may be the password.
			b.WriteString(sql[last:at])
			b.WriteString(" ***")
			return b.String()
		}
		if tok.kind == tokEOF {
			b.WriteString(sql[last:])
			return b.String()
		}
		if afterKeyword && tok.kind == tokString {
			b.WriteString(sql[last:tok.pos])
			b.WriteString("'***'")
			last = tok.pos + len(tok.text)
		}
		afterKeyword = isKeyword(tok, "password")
	}
}

func containsFold(s, sub string) bool {
	return strings.Contains(strings.ToLower(s), sub)
}
