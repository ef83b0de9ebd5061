// Package proc runs a helper server process for tests and benchmarks (a
// throwaway PostgreSQL, a baseline's Kafka or Fluss JVM): started in a
// process group of its own, stopped with its own shutdown signal and then
// SIGKILL, killed by the kernel should the caller die first, with the
// tail of its output kept to say why it failed. It owns nothing of
// Lakestream and imports no package of the project.
package proc
