// Package auth owns who may talk to a node: the transport's TLS
// credentials, reloaded when their files change (tls.go), and the mutual
// TLS between a cluster's nodes (clustertls.go); the hashing of
// passwords with argon2id (password.go); the bearer tokens a login returns
// (token.go); long-lived API keys (apikeys.go); the limit on failed logins (limit.go); and the Service that
// turns an Authorization header into an Identity (service.go), which the
// Flight interceptor and the HTTP handler put into every call's context in
// one place; Authorize (privileges.go), the one privilege check every path
// calls; and the statements of users (CREATE/ALTER/DROP USER, users.go,
// since it hashes the passwords) and of roles and privileges (CREATE/DROP
// ROLE, GRANT, REVOKE, SHOW GRANTS: grants.go). docs/security.md
// documents the behaviour, the token format and the defaults.
//
// auth imports catalog (where users and privileges are stored) and nothing else of
// Lakestream; flightsrv and node import it.
package auth
