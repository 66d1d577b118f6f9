package queue

import (
	"context"
	"fmt"
	"net/url"
	"regexp"

	"github.com/jackc/pgx/v5"
)

var dbName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// FreshPostgres drops the database name on the server that serverDSN points
// at (any database on it will do) and creates it again, empty. It returns
// a DSN for the new database. The name must be a plain lower-case SQL
// identifier, since it is spliced into DDL.
func FreshPostgres(ctx context.Context, serverDSN, name string) (string, error) {
	if !dbName.MatchString(name) {
		return "", fmt.Errorf("queue: database name %q is not a plain lower-case identifier", name)
	}
	u, err := url.Parse(serverDSN)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return "", fmt.Errorf("queue: server DSN is not a postgres:// URL")
	}
	conn, err := pgx.Connect(ctx, serverDSN)
	if err != nil {
		return "", fmt.Errorf("queue: connect to PostgreSQL at %s: %w", u.Host, err)
	}
	defer conn.Close(context.Background())
	for _, sql := range []string{
		"DROP DATABASE IF EXISTS " + name + " WITH (FORCE)",
		"CREATE DATABASE " + name,
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			return "", fmt.Errorf("queue: %s: %w", sql, err)
		}
	}
	u.Path = "/" + name
	return u.String(), nil
}
