package cli

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/hostguard/hostguard/guard"
)

func runReset(args []string, stdout, stderr io.Writer) int {
	cmd := newDaemonCommand("reset", "URL", "Resets the connectivity guard of URL's endpoint (its origin) in a running daemon. Only the origin is used; the rest of the URL is neither sent in a log line nor printed.", stdout, stderr)
	pos, code, ok := cmd.parse(args)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return cmd.usageError("needs exactly one URL")
	}
	key, err := guard.Key(pos[0])
	if err != nil {
		return cmd.usageError("%v", err)
	}
	if _, code, ok := cmd.call("POST", "/v1/guard/reset", nil, map[string]string{"url": pos[0]}, nil); !ok {
		return code
	}
	if cmd.flags.json {
		// encoding/json, not %q: Go quoting is not JSON for every string.
		_ = json.NewEncoder(stdout).Encode(struct {
			Endpoint string `json:"endpoint"`
		}{key})
		return ExitOK
	}
	fmt.Fprintf(stdout, "reset %s\n", key)
	return ExitOK
}
