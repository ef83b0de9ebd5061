// Package auth owns who may talk to a node: the transport's TLS
// credentials, reloaded when their files change (tls.go); the hashing of
// passwords with argon2id (password.go); the bearer tokens a login returns
// (token.go); the limit on failed logins (limit.go); and the Service that
// turns an Authorization header into an Identity (service.go), which the
// Flight interceptor and the HTTP handler put into every call's context in
// one place, ready for a privilege check. It also applies the user DDL
// (CREATE/ALTER/DROP USER), since it hashes the passwords. docs/security.md
// documents the behaviour, the token format and the defaults.
//
// auth imports catalog (where users are stored) and nothing else of
// Lakestream; flightsrv and node import it.
package auth
