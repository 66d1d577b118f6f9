package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/hostguard/hostguard"
)

func runMigrate(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("migrate", "", "Opens the store, applies any schema migrations it lacks and prints the schema version. It does not need a running daemon; on PostgreSQL, nodes may run it at the same time.", stderr)
	db := fs.String("db", envOr("HOSTGUARD_DB", ""), "store: an SQLite file `path` or postgres://user@host/db (env HOSTGUARD_DB; default the serve default)")
	asJSON := fs.Bool("json", false, "print {\"schema_version\": N}")
	pos, code, ok := parseFlags(fs, args, stdout)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return usageError(stderr, fs, "takes no arguments")
	}
	dsn := *db
	if dsn == "" {
		p, err := defaultDBPath()
		if err != nil {
			return fail(stderr, "migrate", err)
		}
		dsn = p
	}
	if _, _, err := hostguard.ParseDSN(dsn); err != nil {
		return usageError(stderr, fs, "--db: %v", err)
	}
	ctx := context.Background()
	st, err := hostguard.Open(ctx, dsn)
	if err != nil {
		return fail(stderr, "migrate", err)
	}
	defer st.Close()
	sv, ok := st.(interface {
		SchemaVersion(context.Context) (int, error)
	})
	if !ok {
		return fail(stderr, "migrate", fmt.Errorf("this store does not report its schema version"))
	}
	v, err := sv.SchemaVersion(ctx)
	if err != nil {
		return fail(stderr, "migrate", err)
	}
	if *asJSON {
		fmt.Fprintf(stdout, "{\"schema_version\":%d}\n", v)
		return ExitOK
	}
	fmt.Fprintf(stdout, "schema version %d\n", v)
	return ExitOK
}
