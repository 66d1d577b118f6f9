package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/hostguard/hostguard/guard"
)

func init() {
	register("reset", "forget the failures of a URL's endpoint so the next request goes through", runReset)
}

func runReset(args []string, stdout, stderr io.Writer) int {
	var cf clientFlags
	fs := newFlagSet("reset", "URL", "Resets the connectivity guard of URL's endpoint (its origin) in a running daemon. Only the origin is used; the rest of the URL is neither sent in a log line nor printed.", stderr)
	cf.register(fs)
	pos, code, ok := parseFlags(fs, args)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return usageError(stderr, fs, "needs exactly one URL")
	}
	key, err := guard.Key(pos[0])
	if err != nil {
		return usageError(stderr, fs, "%v", err)
	}
	c, err := cf.client()
	if err != nil {
		return usageError(stderr, fs, "%v", err)
	}
	if err := c.do(context.Background(), "POST", "/v1/guard/reset", nil, map[string]string{"url": pos[0]}, nil, nil); err != nil {
		return fail(stderr, "reset", err)
	}
	if cf.json {
		fmt.Fprintf(stdout, "{\"endpoint\":%q}\n", key)
		return ExitOK
	}
	fmt.Fprintf(stdout, "reset %s\n", key)
	return ExitOK
}
