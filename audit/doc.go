// Package audit owns the audit log: who logged in or failed to, and who
// changed the catalog (DDL, users, privileges), with the time and the
// client's address. Each event is appended to a JSON-lines file in the
// data directory (audit.jsonl, rotated by size) and kept in memory for the
// system table lakestream.audit, which node serves. docs/security.md
// ("Audit log") documents the events, the file and the flags.
//
// Passwords never reach the log: Record redacts PASSWORD '…' in the
// statements it is given (Redact), and logins carry no credentials.
//
// audit imports no Lakestream package: auth and flightsrv record events
// through it, and node serves them.
package audit
