// Package reliability holds the crash tests of the real daemon: kill -9
// cycles with concurrent HTTP workers against `hostguard serve` on SQLite
// and PostgreSQL, two daemons on one PostgreSQL, and a PostgreSQL restart
// under load. Each worker keeps a log of the writes the daemon
// acknowledged; after the last restart the logs are checked against the
// store: no acknowledged write lost, no succeeded item handed out again, no
// two valid leases on one item at once.
//
// The tests are slow and kill processes, so they run only when
// HOSTGUARD_RELIABILITY selects a mode (short or long); scripts/reliability.sh
// sets it, and `go test ./...` skips them. The checks on the logs are
// ordinary unit tests that always run.
package reliability
