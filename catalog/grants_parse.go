package catalog

// The statements of roles and privileges, as PostgreSQL writes them
// (docs/sql.md, "Roles and privileges"), and their parsing.

// CreateRole is CREATE ROLE [IF NOT EXISTS] name.
type CreateRole struct {
	Name        string
	IfNotExists bool
}

// DropRole is DROP ROLE [IF EXISTS] name.
type DropRole struct {
	Name     string
	IfExists bool
}

// GrantRoles is GRANT role, ... TO member, ... or, with Revoke, REVOKE
// role, ... FROM member, ...
type GrantRoles struct {
	Roles   []string
	Members []string
	Revoke  bool
}

// TargetKind is what GRANT ... ON names.
type TargetKind int

// The targets of a privilege grant.
const (
	// TargetTables is [TABLE] t, ...: tables and views.
	TargetTables TargetKind = iota
	// TargetDatabase is DATABASE db: every table and view of db, present
	// and future, and CREATE in it.
	TargetDatabase
	// TargetAllTablesIn is ALL TABLES IN DATABASE db: every table and
	// view of db that exists now (PostgreSQL's ALL TABLES IN SCHEMA).
	TargetAllTablesIn
)

// GrantPrivileges is GRANT privs ON target TO grantee, ... or, with
// Revoke, REVOKE privs ON target FROM grantee, ...
type GrantPrivileges struct {
	// Privileges are those named; All is ALL [PRIVILEGES], whose set
	// depends on the target (PrivAllTable or PrivAllDatabase).
	Privileges Privilege
	All        bool
	Target     TargetKind
	Tables     []TableName // TargetTables
	DB         string      // TargetDatabase, TargetAllTablesIn
	Grantees   []string
	Revoke     bool
}

func (*CreateRole) statement()      {}
func (*DropRole) statement()        {}
func (*GrantRoles) statement()      {}
func (*GrantPrivileges) statement() {}

func (p *parser) createRole() (Statement, error) {
	s := &CreateRole{IfNotExists: p.acceptKeywords("if", "not", "exists")}
	var err error
	s.Name, err = p.ident("a role name")
	return s, err
}

func (p *parser) dropRole() (Statement, error) {
	s := &DropRole{IfExists: p.acceptKeywords("if", "exists")}
	var err error
	s.Name, err = p.ident("a role name")
	return s, err
}

// grant parses the rest of GRANT (or REVOKE): names up to ON are
// privileges, names up to TO (FROM) are roles.
func (p *parser) grant(revoke bool) (Statement, error) {
	to := "to"
	if revoke {
		to = "from"
	}
	if p.acceptKeywords("all") {
		p.acceptKeywords("privileges")
		s := &GrantPrivileges{All: true, Revoke: revoke}
		return p.grantOn(s, to)
	}
	var names []string
	var privs Privilege
	allPrivs := true
	for {
		tok := p.peek()
		name, err := p.ident("a privilege or role name")
		if err != nil {
			return nil, err
		}
		names = append(names, name)
		if len(names) > maxListItems {
			return nil, p.errAt(tok, "more than %d names in a list", maxListItems)
		}
		if pr, ok := privilegeNamed(name); ok && tok.kind == tokIdent {
			privs |= pr
		} else {
			allPrivs = false
		}
		if !p.acceptPunct(",") {
			break
		}
	}
	if p.isKeyword("on") {
		if !allPrivs {
			return nil, p.errAt(p.peek(), "expected privileges before ON: SELECT, INSERT, UPDATE, DELETE, ALTER, DROP, CREATE or ALL")
		}
		return p.grantOn(&GrantPrivileges{Privileges: privs, Revoke: revoke}, to)
	}
	if err := p.expectKeywords(to); err != nil {
		return nil, err
	}
	s := &GrantRoles{Roles: names, Revoke: revoke}
	var err error
	s.Members, err = p.names("a user or role name")
	return s, err
}

// grantOn parses ON target TO|FROM grantees.
func (p *parser) grantOn(s *GrantPrivileges, to string) (Statement, error) {
	if err := p.expectKeywords("on"); err != nil {
		return nil, err
	}
	var err error
	switch {
	case p.acceptKeywords("all", "tables", "in"):
		if !p.acceptKeywords("database") && !p.acceptKeywords("schema") {
			return nil, p.errAt(p.peek(), "expected DATABASE after ALL TABLES IN")
		}
		s.Target = TargetAllTablesIn
		s.DB, err = p.ident("a database name")
	case p.acceptKeywords("database") || p.acceptKeywords("schema"):
		s.Target = TargetDatabase
		s.DB, err = p.ident("a database name")
	default:
		p.acceptKeywords("table")
		for err == nil {
			var t TableName
			if t, err = p.tableName(); err == nil {
				s.Tables = append(s.Tables, t)
				if len(s.Tables) > maxListItems {
					return nil, p.errAt(p.peek(), "more than %d names in a list", maxListItems)
				}
			}
			if !p.acceptPunct(",") {
				break
			}
		}
	}
	if err != nil {
		return nil, err
	}
	if s.Privileges&PrivCreate != 0 && s.Target != TargetDatabase {
		return nil, p.errAt(p.peek(), "CREATE is a privilege on a database: GRANT CREATE ON DATABASE db")
	}
	if err := p.expectKeywords(to); err != nil {
		return nil, err
	}
	s.Grantees, err = p.names("a user or role name")
	return s, err
}

// names reads ident, ...
func (p *parser) names(what string) ([]string, error) {
	var out []string
	for {
		name, err := p.ident(what)
		if err != nil {
			return nil, err
		}
		out = append(out, name)
		if len(out) > maxListItems {
			return nil, p.errAt(p.peek(), "more than %d names in a list", maxListItems)
		}
		if !p.acceptPunct(",") {
			return out, nil
		}
	}
}
