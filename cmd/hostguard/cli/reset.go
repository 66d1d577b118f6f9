package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/hostguard/hostguard/api"
	"github.com/hostguard/hostguard/guard"
)

func runReset(args []string, stdout, stderr io.Writer) int {
	cmd := newDaemonCommand("reset", "URL | --all", "Resets the connectivity guard of URL's endpoint (its origin) in a running daemon, or with --all of every endpoint. Only the origin is used; the rest of the URL is neither sent in a log line nor printed.", stdout, stderr)
	all := cmd.fs.Bool("all", false, "reset every endpoint: clear every cooldown and streak")
	pos, code, ok := cmd.parse(args)
	if !ok {
		return code
	}
	if *all {
		return resetAll(cmd, pos, stdout)
	}
	if len(pos) != 1 {
		return cmd.usageError("needs exactly one URL")
	}
	key, err := guard.Key(pos[0])
	if err != nil {
		return cmd.refuse("%v", err)
	}
	// The daemon guards web endpoints only; another scheme is a typo, and
	// resetting it would create a record for an endpoint never used.
	if !strings.HasPrefix(key, "http://") && !strings.HasPrefix(key, "https://") {
		return cmd.refuse("the URL's scheme %s is not http or https", key[:strings.Index(key, ":")])
	}
	if _, code, ok := cmd.call("POST", "/v1/guard/reset", nil, api.ResetRequest{URL: pos[0]}, nil); !ok {
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

func resetAll(cmd *daemonCommand, pos []string, stdout io.Writer) int {
	if len(pos) != 0 {
		return cmd.usageError("--all takes no URL")
	}
	if _, code, ok := cmd.call("POST", "/v1/guard/reset-all", nil, nil, nil); !ok {
		return code
	}
	if cmd.flags.json {
		_ = json.NewEncoder(stdout).Encode(struct {
			All bool `json:"all"`
		}{true})
		return ExitOK
	}
	fmt.Fprintln(stdout, "reset every endpoint")
	return ExitOK
}
