// Package storeerr tells a store that could not do its work right now (a
// connection refused or lost, a timeout, a busy or locked database, a
// closed store) from every other error, by the types and sentinels the
// drivers return and never by their text. The daemon answers the first
// kind 503 with Retry-After and the rest 500, so that a bug is not
// reported to clients as an outage they should wait out.
package storeerr

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/puddle/v2"
)

// Unavailable reports whether err, anywhere in its chain, says the store
// could not be reached or did not answer in time.
func Unavailable(err error) bool {
	switch {
	case err == nil:
		return false
	case errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, driver.ErrBadConn),
		errors.Is(err, sql.ErrConnDone),
		errors.Is(err, errDBClosed),
		errors.Is(err, puddle.ErrClosedPool),
		// A connection that ended without a word from the server (a
		// cut network, a killed backend, a proxy gone): the driver
		// reads EOF mid-message and says no more than that.
		errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, io.EOF),
		errors.Is(err, pgconn.ErrConnClosed):
		return true
	}
	if _, ok := errors.AsType[net.Error](err); ok {
		return true
	}
	if e, ok := errors.AsType[interface {
		error
		SQLState() string
	}](err); ok {
		return unavailableState(e.SQLState())
	}
	if e, ok := errors.AsType[interface {
		error
		Code() int
	}](err); ok {
		return unavailableSQLite(e.Code())
	}
	return false
}

// unavailableState reads a PostgreSQL SQLSTATE: connection exceptions
// (08), insufficient resources (53), operator intervention such as a
// shutdown (57P), system errors (58), the serialization failures and
// deadlocks (40001, 40P01) that a retry resolves, and a schema that is not
// there (3F000 invalid schema, 42P01 undefined table, 42883 undefined
// function): the daemon's queries are tested against its migrations, so
// those mean the database is being restored or migrated under it, which
// /readyz reports as not ready too, and a retry succeeds once it is back.
func unavailableState(code string) bool {
	switch {
	case strings.HasPrefix(code, "08"), strings.HasPrefix(code, "53"),
		strings.HasPrefix(code, "57P"), strings.HasPrefix(code, "58"),
		code == "40001", code == "40P01",
		code == "3F000", code == "42P01", code == "42883":
		return true
	}
	return false
}

// SQLite primary result codes (the low byte of an extended code).
const (
	sqliteBusy     = 5
	sqliteLocked   = 6
	sqliteNoMem    = 7
	sqliteIOErr    = 10
	sqliteFull     = 13
	sqliteCantOpen = 14
)

func unavailableSQLite(code int) bool {
	switch code & 0xff {
	case sqliteBusy, sqliteLocked, sqliteNoMem, sqliteIOErr, sqliteFull, sqliteCantOpen:
		return true
	}
	return false
}

// errDBClosed is database/sql's error for a closed *sql.DB, which it does
// not export: it is taken once from a DB closed for the purpose, so that
// it is recognised by identity.
var errDBClosed = func() error {
	db := sql.OpenDB(noConnector{})
	db.Close()
	err := db.PingContext(context.Background())
	if err == nil {
		// Not reachable with database/sql as it is; keep errors.Is false.
		return errors.New("storeerr: no closed-database error")
	}
	return err
}()

type noConnector struct{}

func (noConnector) Connect(context.Context) (driver.Conn, error) {
	return nil, errors.New("storeerr: no connections")
}
func (noConnector) Driver() driver.Driver { return nil }
